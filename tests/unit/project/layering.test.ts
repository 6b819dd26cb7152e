/**
 * Which folder may import which (issues 13 and 22), read from the import statements themselves
 * (static imports, `import type` and `import()` alike: a type import is a dependency of the
 * reader's too, if not of the build's):
 * - the library (src/) never imports the tools package (tools/), so no app that imports a lock
 *   loads a command, a benchmark or a chart writer;
 * - the tools import the library only by its package name and public entry points
 *   (`azure-storage-concurrency/lease`), never by a path into src/, as any other user does;
 * - in the tools, the benchmarks sit below the command line tool (the CLI runs them, they never
 *   reach up into it);
 * - each feature (a folder of src/: optimistic, lease, queue, idempotency, ...) is imported by the
 *   others only through its front door, `index.ts` (its public entry point) or `internal.ts` (what
 *   other features need beyond it, never a package entry point), so that a feature's files can be
 *   moved and renamed without touching another feature;
 * - the shared helpers (src/internal/, src/observability/) import no feature, and src/errors.ts
 *   imports none at run time (its code map, src/error-codes.ts, reads the features' error classes
 *   as types only).
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { libraryEntryPoints } from "../../../scripts/entry-points.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const src = join(root, "src");
const tools = join(root, "tools");

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? entry.name === "dist" || entry.name === "node_modules"
        ? []
        : filesUnder(join(dir, entry.name))
      : entry.name.endsWith(".ts")
        ? [join(dir, entry.name)]
        : [],
  );
}

/** Every module specifier a file imports or re-exports (`import type` and `import()` included). */
function specifiersOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const pattern =
    /\bimport\(\s*"([^"]+)"\s*\)|^\s*(?:import|export)\s+(?:type\s+)?[^"';]*?\sfrom\s+"([^"]+)"|^\s*import\s+"([^"]+)"/gm;
  return [...text.matchAll(pattern)].map((match) => (match[1] ?? match[2] ?? match[3])!);
}

/** The project files a file imports by relative path, resolved. */
function relativeImportsOf(file: string): string[] {
  return specifiersOf(file)
    .filter((specifier) => specifier.startsWith("."))
    .map((specifier) => resolve(dirname(file), specifier.replace(/\.js$/, ".ts")));
}

const rel = (file: string) => relative(root, file);

/** The shared helpers' folders: below every feature. */
const SHARED = new Set(["internal", "observability"]);
/** The feature a file of src/ belongs to (its top folder), or undefined for src/'s own files and the shared helpers. */
function featureOf(file: string): string | undefined {
  const parts = relative(src, file).split(/[\\/]/);
  return parts.length > 1 && !SHARED.has(parts[0]!) ? parts[0] : undefined;
}

/** The specifiers a file imports at run time (not `import type`, not an import of types only). */
function runtimeSpecifiersOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const pattern = /^\s*(?:import|export)\s+(type\s+)?(\{[^}]*\}|\*)?[^"';]*?\sfrom\s+"([^"]+)"/gm;
  return [...text.matchAll(pattern)]
    .filter(([, typeOnly, names]) => {
      if (typeOnly) return false;
      const items = names?.startsWith("{")
        ? names
            .slice(1, -1)
            .split(",")
            .map((item) => item.trim())
            .filter(Boolean)
        : [];
      return !(items.length > 0 && items.every((item) => item.startsWith("type ")));
    })
    .map((match) => match[3]!);
}
const under = (dir: string) => (file: string) => file.startsWith(dir + "/");

describe("layering", () => {
  it("the library (src/) imports nothing from the tools package, by path or by name", () => {
    const found = filesUnder(src).flatMap((file) => [
      ...relativeImportsOf(file)
        .filter(under(tools))
        .map((target) => `${rel(file)} -> ${rel(target)}`),
      ...specifiersOf(file)
        .filter((specifier) => /^azure-storage-concurrency-cli(\/|$)/.test(specifier))
        .map((specifier) => `${rel(file)} -> ${specifier}`),
    ]);
    expect(found).toEqual([]);
  });

  it("the tools import the library only by its package name, never by a path into src/", () => {
    const found = filesUnder(tools).flatMap((file) =>
      relativeImportsOf(file)
        .filter((target) => !under(tools)(target))
        .map((target) => `${rel(file)} -> ${rel(target)}`),
    );
    expect(found).toEqual([]);
    // ...and they do use it (the check above would pass on a tools package that imports nothing).
    expect(filesUnder(tools).some((file) => specifiersOf(file).includes("azure-storage-concurrency/lease"))).toBe(true);
  });

  it("the library's entry points load no chart writer", () => {
    for (const entry of libraryEntryPoints(root)) {
      const seen = new Set<string>();
      const queue = [join(root, entry.source)];
      while (queue.length > 0) {
        const file = queue.pop()!;
        if (seen.has(file)) continue;
        seen.add(file);
        queue.push(...relativeImportsOf(file));
      }
      expect([...seen].map(rel).filter((file) => /chart/.test(file))).toEqual([]);
    }
  });

  it("tools/bench/ imports nothing from tools/cli/ (what both need lives below both)", () => {
    const upward = filesUnder(join(tools, "bench")).flatMap((file) =>
      relativeImportsOf(file)
        .filter(under(join(tools, "cli")))
        .map((target) => `${rel(file)} -> ${rel(target)}`),
    );
    expect(upward).toEqual([]);
  });

  it("nothing outside tools/cli/ imports from it", () => {
    const upward = [...filesUnder(src), ...filesUnder(tools)]
      .filter((file) => !under(join(tools, "cli"))(file))
      .flatMap((file) =>
        relativeImportsOf(file)
          .filter(under(join(tools, "cli")))
          .map((target) => `${rel(file)} -> ${rel(target)}`),
      );
    expect(upward).toEqual([]);
  });

  it("features import each other only through their index.ts or internal.ts", () => {
    const deep = filesUnder(src).flatMap((file) =>
      relativeImportsOf(file)
        .filter((target) => {
          const feature = featureOf(target);
          if (feature === undefined || feature === featureOf(file)) return false;
          return !["index.ts", "internal.ts"].includes(relative(join(src, feature), target));
        })
        .map((target) => `${rel(file)} -> ${rel(target)}`),
    );
    expect(deep).toEqual([]);
    // ...and features do import each other (the check above would pass on a library without imports).
    expect(
      filesUnder(join(src, "queue")).some((file) => specifiersOf(file).includes("../idempotency/internal.js")),
    ).toBe(true);
  });

  it("the shared helpers import no feature, and src/errors.ts none at run time", () => {
    const upward = filesUnder(src)
      .filter((file) => SHARED.has(relative(src, file).split(/[\\/]/)[0]!))
      .flatMap((file) =>
        relativeImportsOf(file)
          .filter((target) => featureOf(target) !== undefined)
          .map((target) => `${rel(file)} -> ${rel(target)}`),
      );
    const errors = join(src, "errors.ts");
    const fromErrors = runtimeSpecifiersOf(errors)
      .filter((specifier) => specifier.startsWith("."))
      .map((specifier) => resolve(src, specifier.replace(/\.js$/, ".ts")))
      .filter((target) => target !== errors && !SHARED.has(relative(src, target).split(/[\\/]/)[0]!))
      .map((target) => `src/errors.ts -> ${rel(target)}`);
    expect([...upward, ...fromErrors]).toEqual([]);
  });
});
