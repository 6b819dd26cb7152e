/**
 * Where this package is: the benchmarks start their worker scripts from it, and the report records
 * its version and commit. In the bundle, code may sit in any chunk of `dist/`, so the root is found
 * by walking up to the nearest package.json rather than by a fixed relative path.
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The package's root directory as seen from the module at `moduleUrl`, and whether that module is
 * TypeScript (running from source, through tsx or jest) rather than the built JavaScript.
 */
export function locatePackage(moduleUrl: string): { root: string; fromSource: boolean } {
  const fromSource = /\.[cm]?ts$/.test(new URL(moduleUrl).pathname);
  let root = dirname(fileURLToPath(moduleUrl));
  while (!existsSync(join(root, "package.json"))) {
    const parent = dirname(root);
    if (parent === root) throw new Error(`no package.json above ${fileURLToPath(moduleUrl)}`);
    root = parent;
  }
  return { root, fromSource };
}
