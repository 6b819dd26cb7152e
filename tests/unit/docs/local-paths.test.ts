/**
 * No documentation points into someone's machine: an absolute local path (`/work/…`, `/home/…`,
 * `C:\…`, `file://…`) means nothing to a reader. Cite a source document by its title, a file of this
 * project by its path relative to the repository, anything else by its public URL. Checked: every
 * Markdown file in git (README.md, docs/, the notices; not the generated docs/api/) and the TSDoc
 * comments of src/ (from which the API reference is built) and tools/.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

/** An absolute local path: a Unix root folder where home and work directories live, a drive letter, a file URL, `~/`. */
const LOCAL_PATH =
  /(?<![\w.:/~-])(?:\/(?:work|home|Users|root|tmp|mnt|var|opt|srv|private|Volumes)\/|~\/|[A-Za-z]:\\|file:\/\/)/g;

/** `file:line: the path` for each local path in `text`. */
function localPaths(file: string, text: string): string[] {
  return [...text.matchAll(LOCAL_PATH)].map((match) => {
    const line = text.slice(0, match.index).split("\n").length;
    const rest = text.slice(match.index).split(/[\s`)"'>\]]/)[0];
    return `${file}:${line}: ${rest}`;
  });
}

const tracked = (pattern: string) =>
  execFileSync("git", ["ls-files", pattern], { encoding: "utf8" }).split("\n").filter(Boolean);

describe("local paths in the documentation", () => {
  it("are found wherever they are written", () => {
    const text = [
      "see /work/shared/seeds/ and `/home/me/notes.md`,",
      "C:\\Users\\me\\doc.docx or file:///tmp/x, ~/notes",
      "but not https://example.com/home/page, src/work/x.ts, a/tmp/b or 4 MiB/s",
    ].join("\n");
    expect(localPaths("x.md", text)).toEqual([
      "x.md:1: /work/shared/seeds/",
      "x.md:1: /home/me/notes.md",
      "x.md:2: C:\\Users\\me\\doc.docx",
      "x.md:2: file:///tmp/x,",
      "x.md:2: ~/notes",
    ]);
  });

  it("are nowhere in the Markdown files or the TSDoc comments", () => {
    const found = tracked("*.md")
      .filter((file) => !file.startsWith("docs/api/"))
      .flatMap((file) => localPaths(file, readFileSync(file, "utf8")));
    for (const file of [...tracked("src/**/*.ts"), ...tracked("tools/**/*.ts")]) {
      const text = readFileSync(file, "utf8");
      for (const comment of text.matchAll(/\/\*\*[\s\S]*?\*\//g)) {
        const offset = text.slice(0, comment.index).split("\n").length - 1;
        found.push(
          ...localPaths(file, comment[0]).map((hit) =>
            hit.replace(/:(\d+):/, (_, line) => `:${Number(line) + offset}:`),
          ),
        );
      }
    }
    expect(found).toEqual([]);
  });
});
