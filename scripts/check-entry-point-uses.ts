/**
 * Every export of a feature's entry point (`src/<feature>/index.ts`, `azure-storage-concurrency/<feature>`)
 * is something a user writes (issue 22): a name no document, example, test or tool outside the
 * feature's folder mentions is either an internal that leaked into the public API, or public API
 * nobody shows or checks. Either way it should not ship as it is: move it out of the entry point
 * (to the feature's `internal.ts` when a sibling needs it), or document and test it.
 *
 * "Mentions" is read from the text, as a reader finds it: the name as a whole word in the
 * documentation (`README.md`, `docs/**.md`) or in a file of `examples/`, `tests/` or `tools/`. The
 * CHANGELOG does not count (it names what was removed too), nor does src/: a feature's own files or
 * a sibling's are not users. The root entry point (`src/index.ts`), which re-exports the features
 * for code written against 0.1, is judged by its sub-paths.
 *
 * Run: `npx tsx scripts/check-entry-point-uses.ts` (exit 1 and one line per unused export);
 * `tests/unit/project/entry-point-uses.test.ts` runs the same check in `npm test`.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { libraryEntryPoints } from "./entry-points.js";
import { readProjectConfig } from "./project-config.js";

/** Where users of the library are found, relative to the root: folders searched for these file types. */
const USERS: readonly { readonly dir: string; readonly ext: RegExp }[] = [
  { dir: "docs", ext: /\.md$/ },
  { dir: "examples", ext: /\.(ts|mts|js|mjs|cjs|md)$/ },
  { dir: "tests", ext: /\.(ts|mts|js|mjs|cjs)$/ },
  { dir: "tools", ext: /\.(ts|mts|js|mjs|cjs|md)$/ },
];

function filesUnder(dir: string, ext: RegExp): string[] {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((entry) =>
    entry.isDirectory()
      ? ["node_modules", "dist", "coverage"].includes(entry.name)
        ? []
        : filesUnder(join(dir, entry.name), ext)
      : ext.test(entry.name)
        ? [join(dir, entry.name)]
        : [],
  );
}

/** One export of a feature entry point: its name, and the names its public declaration mentions. */
interface Export {
  readonly name: string;
  /** A type only (interface, type alias): users write it only where another export's signature names it. */
  readonly typeOnly: boolean;
  /** The words of its public declaration (a function's signature, a class's public members, a type's body). */
  readonly mentions: ReadonlySet<string>;
}

const wordsOf = (text: string) => new Set(text.match(/[A-Za-z_$][\w$]*/g) ?? []);

/** The words a user of `node` sees: a signature without its body, a class without its private members. */
function publicText(node: ts.Node, checker: ts.TypeChecker): string {
  const signature = (fn: ts.SignatureDeclarationBase) =>
    [...(fn.typeParameters ?? []), ...fn.parameters, ...(fn.type ? [fn.type] : [])].map((n) => n.getText()).join(" ");
  if (ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isConstructorDeclaration(node)) {
    return signature(node);
  }
  if (ts.isClassDeclaration(node)) {
    const heritage = (node.heritageClauses ?? []).map((h) => h.getText()).join(" ");
    const visible = node.members.filter(
      (m) =>
        !(m.name && ts.isPrivateIdentifier(m.name)) &&
        !(ts.getCombinedModifierFlags(m as ts.Declaration) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)),
    );
    return [heritage, ...visible.map((m) => (ts.isFunctionLike(m) ? signature(m) : m.getText()))].join(" ");
  }
  if (ts.isVariableDeclaration(node)) {
    if (node.type) return node.type.getText();
    return checker.typeToString(checker.getTypeAtLocation(node), undefined, ts.TypeFormatFlags.NoTruncation);
  }
  return node.getText();
}

/** The exports of each feature entry point, as `src/<feature>/index.ts` -> exports. */
export function featureExports(root: string): Map<string, Export[]> {
  const entries = libraryEntryPoints(root).filter((entry) => entry.subpath !== ".");
  const { options } = readProjectConfig(root);
  const program = ts.createProgram({
    rootNames: entries.map((entry) => join(root, entry.source)),
    options: { ...options, noEmit: true },
  });
  const checker = program.getTypeChecker();
  const found = new Map<string, Export[]>();
  for (const entry of entries) {
    const file = program.getSourceFile(join(root, entry.source));
    const moduleSymbol = file && checker.getSymbolAtLocation(file);
    if (!moduleSymbol) throw new Error(`cannot read the exports of ${entry.source}`);
    found.set(
      entry.source,
      checker.getExportsOfModule(moduleSymbol).map((alias) => {
        const symbol = alias.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(alias) : alias;
        const declarations = symbol.declarations ?? [];
        return {
          name: alias.name,
          typeOnly: !(symbol.flags & ts.SymbolFlags.Value),
          mentions: wordsOf(declarations.map((d) => publicText(d, checker)).join(" ")),
        };
      }),
    );
  }
  return found;
}

/**
 * The exports of the feature entry points that nothing outside src/ mentions, as
 * `src/<feature>/index.ts: name`. A type counts as used also when the public declaration of a used
 * export of its entry point names it (an option or result type: users need it to name what they
 * pass or get, and the API reference links it).
 */
export function findUnmentionedExports(root: string): string[] {
  const texts = [
    readFileSync(join(root, "README.md"), "utf8"),
    ...USERS.flatMap(({ dir, ext }) => filesUnder(join(root, dir), ext)).map((file) => readFileSync(file, "utf8")),
  ];
  const words = wordsOf(texts.join("\n"));
  const unmentioned: string[] = [];
  for (const [source, exports] of featureExports(root)) {
    const used = new Set(exports.filter((e) => words.has(e.name)).map((e) => e.name));
    for (let grew = true; grew;) {
      grew = false;
      for (const e of exports) {
        if (used.has(e.name) || !e.typeOnly) continue;
        if (exports.some((other) => used.has(other.name) && other.name !== e.name && other.mentions.has(e.name))) {
          used.add(e.name);
          grew = true;
        }
      }
    }
    for (const e of exports) if (!used.has(e.name)) unmentioned.push(`${source}: ${e.name}`);
  }
  return unmentioned.sort();
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const unmentioned = findUnmentionedExports(resolve(dirname(fileURLToPath(import.meta.url)), ".."));
  for (const line of unmentioned) console.log(line);
  console.log(`${unmentioned.length} exports of the feature entry points that no doc, example, test or tool mentions`);
  process.exitCode = unmentioned.length ? 1 : 0;
}
