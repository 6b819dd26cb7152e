/**
 * Every link of the README works from the npm page (issue 23, item 2). The package has no
 * repository URL, so npm cannot resolve a relative link: the README links the guides, recipes and
 * examples it names by absolute URLs to this version's published files on unpkg (which serves the
 * files of every npm tarball), and each such file must be in the packed tarball. Also: the version
 * in those URLs is the package's (bumping the version without the links fails here), anchors name
 * a heading of the README, and the contributor quick start stays, after the app developer's steps.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { posix } from "node:path";

const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { name: string; version: string };
const readme = readFileSync("README.md", "utf8");
const CDN = `https://unpkg.com/${pkg.name}@${pkg.version}/`;

/** The targets of the README's Markdown links, outside code blocks. */
function links(markdown: string): string[] {
  const prose = markdown.replace(/^```[\s\S]*?^```$/gm, "");
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
}

/** GitHub's and npm's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");
}

/** The files `npm pack` puts in the tarball (no build needed: the README links nothing of dist/). */
function packedFiles(): Set<string> {
  const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  });
  return new Set((JSON.parse(out) as [{ files: { path: string }[] }])[0].files.map((f) => f.path));
}

describe("the README's links, from the npm page", () => {
  const targets = links(readme);

  it("are found", () => {
    expect(targets.length).toBeGreaterThan(20);
  });

  it("are never relative: npm has no repository to resolve them against", () => {
    expect(targets.filter((t) => !/^(https:\/\/|#)/.test(t))).toEqual([]);
  });

  it("link the package's own files at this version, each in the packed tarball", () => {
    const packed = packedFiles();
    const own = targets.filter((t) => t.includes("unpkg.com/"));
    expect(own.length).toBeGreaterThan(20);
    expect(own.filter((t) => !t.startsWith(CDN))).toEqual([]); // the version is package.json's
    const missing = own.map((t) => t.slice(CDN.length).replace(/#.*$/, "")).filter((path) => !packed.has(path));
    expect(missing).toEqual([]);
  }, 60_000);

  it("anchors name a heading of the README", () => {
    const headings = new Set([...readme.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)));
    expect(targets.filter((t) => t.startsWith("#") && !headings.has(t.slice(1)))).toEqual([]);
  });

  it("start with what an app developer does; the contributors' two commands come after", () => {
    const install = readme.indexOf("npm install azure-storage-concurrency");
    const contributors = readme.indexOf("## Working on the library (contributors)");
    expect(install).toBeGreaterThan(0);
    expect(contributors).toBeGreaterThan(install);
    expect(readme.indexOf("npm ci && npm run demo")).toBeGreaterThan(contributors);
    expect(readme.indexOf("npm ci && npm test")).toBeGreaterThan(contributors);
    expect(readme).toContain("AZURE_STORAGE_CONNECTION_STRING");
    expect(readme.indexOf("```ts")).toBeLessThan(contributors);
  });

  it("say where the API reference is when the package comes from npm", () => {
    expect(readme).toMatch(/API reference\*\* ships in the package's type declarations/);
    expect(readme).not.toMatch(/API reference: `npm run docs`/);
  });
});

describe("the shipped guides' relative links", () => {
  it("point to files the tarball ships, so that they resolve on unpkg as in a clone", () => {
    const packed = packedFiles();
    const guides = [...packed].filter((path) => /^docs\/(recipes\/)?[\w-]+\.md$/.test(path));
    expect(guides.length).toBeGreaterThan(10);
    const dead = guides.flatMap((guide) =>
      links(readFileSync(guide, "utf8"))
        .filter((t) => !/^(https?:|#|mailto:)/.test(t))
        .map((t) => ({ t, path: posix.normalize(posix.join(posix.dirname(guide), t.replace(/#.*$/, ""))) }))
        .filter(({ path }) => !packed.has(path) && ![...packed].some((p) => p.startsWith(`${path}/`)))
        .map(({ t }) => `${guide}: ${t}`),
    );
    expect(dead).toEqual([]);
  }, 60_000);
});
