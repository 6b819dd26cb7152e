/**
 * Scratch projects that use the packed package as a user's project does: the tarball that
 * tests/support/pack-setup.mjs built (`npm pack`), installed with `npm install`, and the packages a
 * user would add beside it (the SDKs, `azurite`, `@types/node`) linked from this project's
 * node_modules: the versions the suite tests, with no registry involved. NODE_PATH would not do:
 * ESM resolution ignores it (https://nodejs.org/api/esm.html#no-node_path).
 *
 * ASC_PEERS_DIR, when set, names a project whose node_modules holds other versions of the peer
 * dependencies (scripts/test-lowest.mjs installs the lowest of each peer range there): a package
 * found there is linked from there instead.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";

export const root = resolve(".");

/** The four Azure SDKs the library works with (its optional peer dependencies). */
export const SDKS = ["@azure/storage-blob", "@azure/data-tables", "@azure/storage-queue", "@azure/storage-file-share"];

/** Every optional peer dependency: the SDKs, Entra ID sign-in and the OpenTelemetry API. */
export const PEERS = [...SDKS, "@azure/identity", "@opentelemetry/api"];

/** Where linked packages come from: ASC_PEERS_DIR's node_modules first (see above), then this project's. */
function sourceOf(name: string): string {
  const peers = process.env.ASC_PEERS_DIR;
  const candidate = peers ? join(peers, "node_modules", name) : undefined;
  return candidate && existsSync(candidate) ? candidate : join(root, "node_modules", name);
}

/**
 * A new project in a temporary folder (an ES module project: `"type": "module"`) with the packed
 * package installed, and `links` (package names) linked in from this project's node_modules.
 */
export function packedProject(links: readonly string[] = []): string {
  const tarball = process.env.ASC_PACKED_TARBALL;
  if (!tarball) throw new Error("ASC_PACKED_TARBALL is not set: run the package tests through jest (tests/package)");
  const dir = mkdtempSync(join(tmpdir(), "asc-app-"));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "scratch-app", private: true, type: "module" }));
  execFileSync("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", tarball], {
    cwd: dir,
    stdio: ["ignore", "pipe", "pipe"],
  });
  linkPackages(dir, links);
  return dir;
}

/** Links packages (by name) from this project's node_modules into the project at `dir`. */
export function linkPackages(dir: string, names: readonly string[]): void {
  for (const name of names) {
    const link = join(dir, "node_modules", name);
    if (existsSync(link)) continue;
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(sourceOf(name), link, "dir");
  }
}
