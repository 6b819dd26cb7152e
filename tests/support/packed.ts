/**
 * Scratch projects that use the packed packages as a user's project does: the library's and the
 * tools' tarballs that tests/support/pack-setup.mjs built (`npm pack`) and installed once (`npm
 * install`) into a template project, copied here, and the packages a user would add beside them
 * (the SDKs, `azurite`, `@types/node`) linked from this project's node_modules: the versions the
 * suite tests, with no registry involved. NODE_PATH would not do:
 * ESM resolution ignores it (https://nodejs.org/api/esm.html#no-node_path).
 *
 * ASC_PEERS_DIR, when set, names a project whose node_modules holds other versions of the peer
 * dependencies (scripts/test-lowest.mjs installs the lowest of each peer range there): a package
 * found there is linked from there instead.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";

export const root = resolve(".");

/** The four Azure SDKs the library works with (its optional peer dependencies). */
export const SDKS = ["@azure/storage-blob", "@azure/data-tables", "@azure/storage-queue", "@azure/storage-file-share"];

/** The frameworks the integrations plug into (`/functions`, `/express`, `/fastify`). */
export const FRAMEWORKS = ["@azure/functions", "express", "fastify"];

/** Every optional peer dependency: the SDKs, Entra ID sign-in, the OpenTelemetry API and the frameworks. */
export const PEERS = [...SDKS, "@azure/identity", "@opentelemetry/api", ...FRAMEWORKS];

/** Where linked packages come from: ASC_PEERS_DIR's node_modules first (see above), then this project's. */
function sourceOf(name: string): string {
  const peers = process.env.ASC_PEERS_DIR;
  const candidate = peers ? join(peers, "node_modules", name) : undefined;
  return candidate && existsSync(candidate) ? candidate : join(root, "node_modules", name);
}

/** The packed tarballs, for tests that install them themselves (npx). */
export function packedTarballs(): { library: string; tools: string } {
  const library = process.env.ASC_PACKED_TARBALL;
  const tools = process.env.ASC_PACKED_TOOLS_TARBALL;
  if (!library || !tools)
    throw new Error("the packed tarballs are not set: run the package tests through jest (tests/package)");
  return { library, tools };
}

/**
 * A new project in a temporary folder (an ES module project: `"type": "module"`) with both packed
 * packages installed, and `links` (package names) linked in from this project's node_modules.
 */
export function packedProject(links: readonly string[] = []): string {
  const template = process.env.ASC_PACKED_TEMPLATE;
  if (!template) throw new Error("ASC_PACKED_TEMPLATE is not set: run the package tests through jest (tests/package)");
  const dir = mkdtempSync(join(tmpdir(), "asc-app-"));
  cpSync(template, dir, { recursive: true, verbatimSymlinks: true });
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
