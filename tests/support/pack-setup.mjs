// Builds both packages and packs them once for the package tests (tests/package/): the library's
// tarball and the tools package's (tools/), then installs the two once into a template project
// that each test file copies (tests/support/packed.ts), so the suite pays for one `npm install`,
// not one per test file. The paths go to the test workers through the environment (workers are
// forked after this runs).
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

export default function globalSetup() {
  const dir = mkdtempSync(join(tmpdir(), "asc-tarball-"));
  globalThis.__ASC_TARBALL_DIR__ = dir;
  const npm = (args, cwd = root) =>
    execFileSync("npm", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  npm(["run", "build"]);
  const tarballOf = (args, prefix) => {
    const into = join(dir, prefix);
    mkdirSync(into);
    npm(["pack", ...args, "--pack-destination", into]);
    const tarball = readdirSync(into).find((file) => file.endsWith(".tgz"));
    if (!tarball) throw new Error(`npm pack ${args.join(" ")} wrote no tarball into ${into}`);
    return join(into, tarball);
  };
  process.env.ASC_PACKED_TARBALL = tarballOf([], "library");
  process.env.ASC_PACKED_TOOLS_TARBALL = tarballOf(["--workspace", "tools"], "tools");

  // The template: an ES module project with both packages installed from their tarballs (the
  // library's dependencies from the npm cache, else the registry), nothing else.
  const template = join(dir, "template");
  mkdirSync(template);
  writeFileSync(join(template, "package.json"), JSON.stringify({ name: "scratch-app", private: true, type: "module" }));
  npm(
    [
      "install",
      "--prefer-offline",
      "--no-audit",
      "--no-fund",
      "--ignore-scripts",
      process.env.ASC_PACKED_TARBALL,
      process.env.ASC_PACKED_TOOLS_TARBALL,
    ],
    template,
  );
  process.env.ASC_PACKED_TEMPLATE = template;
}
