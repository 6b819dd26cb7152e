/**
 * Type-checks every TypeScript snippet of the documentation: each ```ts block inside a TSDoc comment
 * in `src/` and `tools/` (the `@example`s) and each ```ts block of `README.md` and `docs/**.md`.
 *
 * All snippets go into ONE TypeScript program (with the project's compiler options and the same
 * `azure-storage-concurrency` path mapping as the examples), each as its own ES module, so a check
 * of every snippet costs about one `tsc` run. Conventions for writing snippets:
 *
 * - A snippet is a module of its own: it imports what it uses (top-level `await` is fine).
 * - It may use the placeholders declared in {@link PRELUDE} without declaring them: what a reader's
 *   application already has (`connectionString`; SDK clients `container`/`containerClient`,
 *   `blob`/`blobClient`, `table`/`tableClient`, `queueClient`, `shareClient`, `fileClient`; a
 *   `lock` and a held lock's `handle`; a `semaphore` and a held `permit`), so that an example can show the call it is about. Anything
 *   else (the application's own functions and data) the snippet declares, e.g.
 *   `declare function buildReport(options: { abortSignal: AbortSignal }): Promise<void>;`.
 * - A snippet whose first line is `// @noCheck` is skipped (and counted): for deliberately partial
 *   code such as a shape being described. Keep these rare.
 *
 * It also checks that every function and class exported by the packages' entry points (the
 * library's root and sub-paths, and the tools package's module: `scripts/entry-points.ts`) has an
 * `@example`. An error class and its `is…Error` guard share one: an example on either covers both.
 *
 * Run: `npx tsx scripts/check-doc-examples.ts` (exit 1 and one line per problem when a snippet does
 * not compile); `tests/unit/docs/doc-examples.test.ts` runs the same check in `npm test`.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { entryPoints } from "./entry-points.js";
import { readProjectConfig } from "./project-config.js";

/** One snippet, with where it was found. */
export interface DocExample {
  /** The file it comes from, relative to the project root, with `/` separators. */
  readonly file: string;
  /** The 1-based line of the file on which the snippet's first code line is. */
  readonly line: number;
  /** The snippet's code, without the comment's `*` margins or the fence's indentation. */
  readonly code: string;
}

/** What {@link checkDocExamples} found. */
export interface DocExamplesReport {
  /** Snippets type-checked. */
  readonly checked: number;
  /** Snippets skipped with a leading `// @noCheck`. */
  readonly skipped: readonly DocExample[];
  /** One line per problem: `file:line:column message`. Empty when every snippet compiles. */
  readonly problems: readonly string[];
  /** Exported functions and classes without an `@example`, as `name (file)`. */
  readonly missingExamples: readonly string[];
}

/**
 * The placeholders a snippet may use without declaring them, as declarations (a script file, so
 * they are global to the snippets only). Each stands for something the reader's application has.
 */
export const PRELUDE = `
/** The storage account's connection string. */
declare const connectionString: string;
declare const blobServiceClient: import("@azure/storage-blob").BlobServiceClient;
declare const container: import("@azure/storage-blob").ContainerClient;
declare const containerClient: import("@azure/storage-blob").ContainerClient;
declare const blob: import("@azure/storage-blob").BlockBlobClient;
declare const blobClient: import("@azure/storage-blob").BlockBlobClient;
declare const table: import("@azure/data-tables").TableClient;
declare const tableClient: import("@azure/data-tables").TableClient;
declare const queueClient: import("@azure/storage-queue").QueueClient;
declare const shareClient: import("@azure/storage-file-share").ShareClient;
declare const fileClient: import("@azure/storage-file-share").ShareFileClient;
/** A lock made with blobLock, containerLock, fileLock, shareLock or new LeaseLock. */
declare const lock: import("azure-storage-concurrency/lease").LeaseLock;
/** A lock's handle while it is held. */
declare const handle: import("azure-storage-concurrency/lease").LockHandle;
/** A counting semaphore made with blobSemaphore. */
declare const semaphore: import("azure-storage-concurrency/semaphore").BlobSemaphore;
/** A semaphore's permit while it is held. */
declare const permit: import("azure-storage-concurrency/semaphore").PermitHandle;
`;

const NO_CHECK = /^\s*\/\/\s*@noCheck\b/;
const FENCE_OPEN = /^(\s*)```(ts|typescript)\s*$/;
const FENCE_CLOSE = /^\s*```\s*$/;

/** The ```ts blocks of some lines of text; `firstLine` is the 1-based line number of `lines[0]`. */
function fencedBlocks(file: string, lines: readonly string[], firstLine: number): DocExample[] {
  const found: DocExample[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE_OPEN.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && !FENCE_CLOSE.test(lines[j]!)) body.push(lines[j++]!.slice(indent));
    if (j >= lines.length) throw new Error(`${file}:${firstLine + i}: a \`\`\`ts block is never closed`);
    found.push({ file, line: firstLine + i + 1, code: body.join("\n") });
    i = j;
  }
  return found;
}

/** The ```ts blocks inside the TSDoc comments of a TypeScript source. */
export function examplesInSource(file: string, text: string): DocExample[] {
  const found: DocExample[] = [];
  for (const comment of text.matchAll(/\/\*\*[\s\S]*?\*\//g)) {
    const firstLine = text.slice(0, comment.index).split("\n").length;
    const lines = comment[0].split("\n").map((line) => line.replace(/^\s*(\/\*\*|\*\/|\*(?!\/))? ?/, ""));
    found.push(...fencedBlocks(file, lines, firstLine));
  }
  return found;
}

/** The ```ts blocks of a Markdown document. */
export function examplesInMarkdown(file: string, text: string): DocExample[] {
  return fencedBlocks(file, text.split("\n"), 1);
}

function filesUnder(dir: string, extension: string, skip: (path: string) => boolean): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (skip(path)) continue;
    if (entry.isDirectory()) out.push(...filesUnder(path, extension, skip));
    else if (entry.name.endsWith(extension)) out.push(path);
  }
  return out.sort();
}

/** Every documentation snippet of the project at `root`. */
export function collectDocExamples(root: string): DocExample[] {
  const rel = (path: string) => relative(root, path).split(sep).join("/");
  const examples: DocExample[] = [];
  const built = (path: string) => /[/\\](dist|node_modules)$/.test(path);
  for (const path of [
    ...filesUnder(join(root, "src"), ".ts", () => false),
    ...filesUnder(join(root, "tools"), ".ts", built),
  ]) {
    examples.push(...examplesInSource(rel(path), readFileSync(path, "utf8")));
  }
  const apiDocs = join(root, "docs", "api");
  const markdown = [join(root, "README.md"), ...filesUnder(join(root, "docs"), ".md", (path) => path === apiDocs)];
  for (const path of markdown) examples.push(...examplesInMarkdown(rel(path), readFileSync(path, "utf8")));
  return examples;
}

/** Type-checks every documentation snippet of the project at `root` in one program. */
export function checkDocExamples(root: string): DocExamplesReport {
  const examples = collectDocExamples(root);
  const skipped = examples.filter(isSkipped);
  const checked = examples.filter((example) => !skipped.includes(example));

  const parsed = readProjectConfig(root);
  // jest's globals are not part of what a reader has.
  const options: ts.CompilerOptions = {
    ...parsed.options,
    types: ["node"],
    noEmit: true,
    sourceMap: false,
    declaration: false,
  };
  const entries = entryPoints(root).map((entry) => join(root, entry.source));
  // A TSDoc example sits beside its source file, so an internal module's example can import it
  // with a relative path ("./chart.js"); public examples import "azure-storage-concurrency" anyway.
  const { program, problems } = compileDocExamples(checked, {
    options,
    rootNames: entries,
    dirOf: (example) =>
      /^(src|tools)\//.test(example.file) ? join(root, dirname(example.file)) : join(root, ".doc-examples"),
  });
  return {
    checked: checked.length,
    skipped,
    problems,
    missingExamples: exportsWithoutExamples(program, entries, root),
  };
}

/** Whether a snippet opts out of checking with a leading `// @noCheck`. */
export function isSkipped(example: DocExample): boolean {
  return NO_CHECK.test(example.code.split("\n")[0] ?? "");
}

/** Where and how {@link compileDocExamples} compiles the snippets. */
export interface CompileDocExamplesSettings {
  /** The compiler options. */
  readonly options: ts.CompilerOptions;
  /**
   * The folder each snippet is compiled in, as if it were a file there (module resolution and the
   * module format follow from it); {@link PRELUDE} goes in the first snippet's folder.
   */
  readonly dirOf: (example: DocExample) => string;
  /** More files for the program, e.g. the package's entry points. */
  readonly rootNames?: readonly string[];
  /** More virtual files (absolute path to text); their problems are reported as `path:line`. */
  readonly extraFiles?: ReadonlyMap<string, string>;
}

/**
 * Compiles snippets in one program, each as its own module, beside the {@link PRELUDE}. Answers the
 * program and one line per problem found in the snippets, the prelude or the extra files:
 * `file:line:column message`, at the snippet's place in its document.
 */
export function compileDocExamples(
  examples: readonly DocExample[],
  { options, dirOf, rootNames = [], extraFiles = new Map() }: CompileDocExamplesSettings,
): { program: ts.Program; problems: string[] } {
  // Virtual files in a folder of the project, so that module resolution (and ES module detection
  // through package.json's "type") works as for any source file.
  const virtual = new Map<string, { text: string; example?: DocExample }>();
  const preludeDir = examples[0] ? dirOf(examples[0]) : process.cwd();
  virtual.set(join(preludeDir, ".doc-examples-prelude.d.ts"), { text: PRELUDE });
  for (const [path, text] of extraFiles) virtual.set(resolve(path), { text });
  for (const [i, example] of examples.entries()) {
    const isModule = /^\s*(import|export)\s/m.test(example.code);
    const name = `${example.file.replace(/[^A-Za-z0-9]+/g, "_")}_${example.line}_${i}.ts`;
    virtual.set(join(dirOf(example), `.doc-example_${name}`), {
      text: example.code + (isModule ? "\n" : "\nexport {};\n"),
      example,
    });
  }

  const host = ts.createCompilerHost(options, true);
  const getSourceFile = host.getSourceFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const readFile = host.readFile.bind(host);
  host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) => {
    const entry = virtual.get(resolve(fileName));
    return entry
      ? ts.createSourceFile(fileName, entry.text, languageVersion, true)
      : getSourceFile(fileName, languageVersion, onError, shouldCreate);
  };
  host.fileExists = (fileName) => virtual.has(resolve(fileName)) || fileExists(fileName);
  host.readFile = (fileName) => virtual.get(resolve(fileName))?.text ?? readFile(fileName);

  const program = ts.createProgram({ rootNames: [...rootNames, ...virtual.keys()], options, host });
  const problems: string[] = [];
  for (const diagnostic of program.getOptionsDiagnostics()) problems.push(`tsconfig: ${describe(diagnostic)}`);
  for (const [path, { example }] of virtual) {
    const sourceFile = program.getSourceFile(path);
    if (!sourceFile) throw new Error(`the snippet file ${path} is missing from the program`);
    for (const diagnostic of [
      ...program.getSyntacticDiagnostics(sourceFile),
      ...program.getSemanticDiagnostics(sourceFile),
    ]) {
      const at = sourceFile.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
      const where = example ? `${example.file}:${example.line + at.line}` : `${path}:${at.line + 1}`;
      problems.push(`${where}:${at.character + 1} ${describe(diagnostic)}`);
    }
  }
  return { program, problems };
}

/** A diagnostic's message on one line. */
function describe(diagnostic: ts.Diagnostic): string {
  return ts.flattenDiagnosticMessageText(diagnostic.messageText, " ");
}

/** The functions and classes the entry points export that have no `@example` (see the module comment). */
function exportsWithoutExamples(program: ts.Program, entryPoints: readonly string[], root: string): string[] {
  const checker = program.getTypeChecker();
  const documented = new Map<string, { hasExample: boolean; file: string }>();
  for (const entry of entryPoints) {
    const moduleSymbol = checker.getSymbolAtLocation(program.getSourceFile(entry)!);
    for (const exported of moduleSymbol ? checker.getExportsOfModule(moduleSymbol) : []) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      const declaration = symbol.declarations?.[0];
      if (!declaration || !(ts.isFunctionDeclaration(declaration) || ts.isClassDeclaration(declaration))) continue;
      const hasExample = (symbol.declarations ?? []).some((d) =>
        ts.getJSDocTags(d).some((tag) => tag.tagName.text === "example"),
      );
      const file = relative(root, declaration.getSourceFile().fileName).split(sep).join("/");
      documented.set(exported.name, { hasExample, file });
    }
  }
  const partner = (name: string) =>
    /^is[A-Z]\w*Error$/.test(name) ? name.slice(2) : /Error$/.test(name) ? `is${name}` : undefined;
  const missing: string[] = [];
  for (const [name, { hasExample, file }] of documented) {
    const other = partner(name);
    if (!hasExample && !(other && documented.get(other)?.hasExample)) missing.push(`${name} (${file})`);
  }
  return missing.sort();
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
  const report = checkDocExamples(root);
  for (const problem of report.problems) console.log(problem);
  for (const name of report.missingExamples) console.log(`no @example: ${name}`);
  console.log(
    `${report.checked} documentation snippets type-checked, ${report.skipped.length} skipped (// @noCheck), ` +
      `${report.problems.length} problems, ${report.missingExamples.length} exports without an example`,
  );
  process.exitCode = report.problems.length || report.missingExamples.length ? 1 : 0;
}
