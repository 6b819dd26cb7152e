/**
 * Which folder of src/ may import which (issue 13): the benchmarks sit below the command line tool
 * (the CLI runs them, they never reach up into it), the library below both, and the library's entry
 * point loads no SVG writer. Read from the import statements themselves: a static import (not
 * `import type`, which leaves nothing in the build) pulls a module in for every user.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const src = join(root, "src");

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
  );
}

/** The project files a module imports (`import type` left out unless `withTypes`), resolved. */
function importsOf(file: string, { withTypes = false, dynamic = false } = {}): string[] {
  const text = readFileSync(file, "utf8");
  const pattern = dynamic
    ? /\bimport\(\s*"(\.[^"]+)"\s*\)|^\s*(?:import|export)\s+(type\s+)?[^"';]*?\sfrom\s+"(\.[^"]+)"/gm
    : /^\s*(?:import|export)\s+(type\s+)?[^"';]*?\sfrom\s+"(\.[^"]+)"/gm;
  const found: string[] = [];
  for (const match of text.matchAll(pattern)) {
    const [dynamicTarget, typeOnly, staticTarget] = dynamic
      ? [match[1], match[2], match[3]]
      : [undefined, match[1], match[2]];
    const target = dynamicTarget ?? staticTarget;
    if (!target || (typeOnly && !withTypes)) continue;
    found.push(resolve(dirname(file), target.replace(/\.js$/, ".ts")));
  }
  return found;
}

const rel = (file: string) => relative(root, file);

describe("layering of src/", () => {
  it("src/bench/ imports nothing from src/cli/ (what both need lives below both)", () => {
    const upward = filesUnder(join(src, "bench")).flatMap((file) =>
      importsOf(file, { withTypes: true, dynamic: true })
        .filter((target) => target.startsWith(join(src, "cli")))
        .map((target) => `${rel(file)} -> ${rel(target)}`),
    );
    expect(upward).toEqual([]);
  });

  it("nothing outside src/cli/ imports from it", () => {
    const upward = filesUnder(src)
      .filter((file) => !file.startsWith(join(src, "cli")))
      .flatMap((file) =>
        importsOf(file, { withTypes: true, dynamic: true })
          .filter((target) => target.startsWith(join(src, "cli")))
          .map((target) => `${rel(file)} -> ${rel(target)}`),
      );
    expect(upward).toEqual([]);
  });

  it("the library's entry points load no chart writer", () => {
    for (const entry of ["index.ts", join("testing", "index.ts")]) {
      const seen = new Set<string>();
      const queue = [join(src, entry)];
      while (queue.length > 0) {
        const file = queue.pop()!;
        if (seen.has(file)) continue;
        seen.add(file);
        queue.push(...importsOf(file));
      }
      expect([...seen].map(rel).filter((file) => /chart/.test(file))).toEqual([]);
    }
  });
});
