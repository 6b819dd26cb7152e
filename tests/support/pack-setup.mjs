// Builds the package and packs it once for the package tests (tests/package/): the tarball's path
// goes to the test workers through ASC_PACKED_TARBALL (workers are forked after this runs), and each
// test file installs it into a scratch project of its own (tests/support/packed.ts).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

export default function globalSetup() {
  const dir = mkdtempSync(join(tmpdir(), "asc-tarball-"));
  globalThis.__ASC_TARBALL_DIR__ = dir;
  const npm = (args) => execFileSync("npm", args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  npm(["run", "build"]);
  npm(["pack", "--pack-destination", dir]);
  const tarball = readdirSync(dir).find((file) => file.endsWith(".tgz"));
  if (!tarball) throw new Error(`npm pack wrote no tarball into ${dir}`);
  process.env.ASC_PACKED_TARBALL = join(dir, tarball);
}
