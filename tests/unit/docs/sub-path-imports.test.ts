/**
 * Issue 22: the README, the guides, the recipes, the examples and the doc comments import from the
 * feature sub-paths (`azure-storage-concurrency/lease`, `/errors`, …), never from the root, which
 * re-exports everything only so that 0.1 code keeps working. A snippet copied from the docs should
 * pull in one feature, not all of them.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const root = join(import.meta.dirname, "..", "..", "..");
const ROOT_IMPORT = /from\s+["']azure-storage-concurrency["']/;

function filesUnder(dir: string, extensions: readonly string[]): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory())
      return name === "api" || name === "node_modules" ? [] : filesUnder(path, extensions);
    return extensions.some((extension) => name.endsWith(extension)) ? [path] : [];
  });
}

describe("documentation imports", () => {
  it("name a feature's sub-path, not the root", () => {
    const files = [
      join(root, "README.md"),
      ...filesUnder(join(root, "docs"), [".md"]),
      ...filesUnder(join(root, "examples"), [".ts", ".mts", ".mjs"]),
      ...filesUnder(join(root, "src"), [".ts"]).filter((file) => relative(root, file) !== join("src", "index.ts")),
    ];
    expect(files.length).toBeGreaterThan(50);
    const offenders = files.flatMap((file) =>
      readFileSync(file, "utf8")
        .split("\n")
        .flatMap((line, i) => (ROOT_IMPORT.test(line) ? [`${relative(root, file)}:${i + 1}`] : [])),
    );
    expect(offenders).toEqual([]);
  });
});
