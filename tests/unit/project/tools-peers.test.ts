/**
 * The tools package (`tools/package.json`) declares the Azure SDKs as peers too: each of its ranges
 * must be one the library accepts, or an install that satisfies the tools' peers can hand the
 * library an SDK older than it supports.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

type Manifest = { peerDependencies?: Record<string, string>; version: string };
const read = (file: string) => JSON.parse(readFileSync(join(process.cwd(), file), "utf8")) as Manifest;

/** The lowest version a caret range admits ("^12.32.0" -> [12, 32, 0]). */
function lowest(range: string): number[] {
  const match = /^\^(\d+)\.(\d+)\.(\d+)$/.exec(range);
  if (!match) throw new Error(`expected a caret range, got ${range}`);
  return match.slice(1).map(Number);
}

describe("the tools package's peer dependencies", () => {
  const library = read("package.json");
  const tools = read("tools/package.json");

  it.each(Object.entries(tools.peerDependencies ?? {}).filter(([name]) => name !== "azure-storage-concurrency"))(
    "%s: the tools' range %s starts no lower than the library's",
    (name, range) => {
      const libraryRange = library.peerDependencies?.[name];
      expect(libraryRange).toBeDefined(); // every SDK the tools name, the library names too
      const [a, b] = [lowest(range), lowest(libraryRange!)];
      expect(a[0]).toBe(b[0]); // the same major
      expect(a[1]! * 1e6 + a[2]!).toBeGreaterThanOrEqual(b[1]! * 1e6 + b[2]!);
    },
  );

  it("accepts this version of the library", () => {
    const range = tools.peerDependencies?.["azure-storage-concurrency"];
    expect(range).toBeDefined();
    const [major, minor] = lowest(range!);
    const [libMajor, libMinor] = library.version.split(".").map(Number);
    expect([major, minor]).toEqual([libMajor, libMinor]);
  });
});
