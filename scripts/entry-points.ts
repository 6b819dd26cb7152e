/**
 * The entry points of the two packages, as the project's `tsconfig.json` maps them (`paths`): the
 * library's root and sub-paths (`azure-storage-concurrency`, `azure-storage-concurrency/lease`, …)
 * and the tools package (`azure-storage-concurrency-cli`), each to its source file. One list for the
 * checks that need it (documentation examples, unused exports, the layering test, the build's
 * configuration test), so that a new entry point is added in one place and every check follows.
 */
import { readProjectConfig } from "./project-config.js";

/** The library's package name. */
export const LIBRARY = "azure-storage-concurrency";
/** The tools package's name. */
export const TOOLS = "azure-storage-concurrency-cli";

/** One entry point: what users import, and the source file it comes from. */
export interface EntryPoint {
  /** What users write: `azure-storage-concurrency/lease`. */
  readonly specifier: string;
  /** The package it belongs to. */
  readonly packageName: typeof LIBRARY | typeof TOOLS;
  /** The `exports` key: `.` or `./lease`. */
  readonly subpath: string;
  /** The source file, relative to the project root with `/` separators: `src/lease/index.ts`. */
  readonly source: string;
}

/** The entry points of the project at `root`, the library's first (the root, then the sub-paths by name). */
export function entryPoints(root: string): EntryPoint[] {
  const paths = readProjectConfig(root).options.paths ?? {};
  const found: EntryPoint[] = [];
  for (const [specifier, [target]] of Object.entries(paths)) {
    const packageName = specifier === TOOLS ? TOOLS : specifier.split("/")[0] === LIBRARY ? LIBRARY : undefined;
    if (!packageName || !target) continue;
    found.push({
      specifier,
      packageName,
      subpath: specifier === packageName ? "." : `.${specifier.slice(packageName.length)}`,
      source: target.replace(/^\.\//, ""),
    });
  }
  const order = (entry: EntryPoint) =>
    `${entry.packageName === LIBRARY ? 0 : 1}${entry.subpath === "." ? 0 : 1}${entry.subpath}`;
  return found.sort((a, b) => order(a).localeCompare(order(b)));
}

/** The library's entry points only. */
export function libraryEntryPoints(root: string): EntryPoint[] {
  return entryPoints(root).filter((entry) => entry.packageName === LIBRARY);
}
