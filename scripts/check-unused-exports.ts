/**
 * Finds exports of `src/` and `tools/` that nothing uses: not part of the public API (not reachable
 * from the packages' entry points, `scripts/entry-points.ts`, or the tools' command), and not
 * imported by any other file of the project (src, tools, tests, examples, scripts, as
 * `tsconfig.json` includes them).
 * Such an export is either dead code or should not be exported.
 *
 * One TypeScript program over the project; every import (named, default, namespace, `export … from`,
 * and `import("…")`) is resolved to the symbol it names, so re-exports through index files count as
 * uses of the original declaration.
 *
 * Run: `npx tsx scripts/check-unused-exports.ts` (exit 1 and one line per unused export);
 * `tests/unit/project/unused-exports.test.ts` runs the same check in `npm test`.
 */
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { entryPoints } from "./entry-points.js";
import { readProjectConfig } from "./project-config.js";

/** The command line tool's script (the tools package's `bin`), relative to the root. */
const BIN = "tools/cli/main.ts";

/** The unused exports of the project at `root`, as `file: name`, sorted. */
export function findUnusedExports(root: string): string[] {
  const parsed = readProjectConfig(root);
  const program = ts.createProgram({ rootNames: parsed.fileNames, options: { ...parsed.options, noEmit: true } });
  const checker = program.getTypeChecker();
  const rel = (fileName: string) => relative(root, fileName).split(sep).join("/");
  const projectFiles = program
    .getSourceFiles()
    .filter((file) => !file.isDeclarationFile && !rel(file.fileName).startsWith(".."));

  const original = (symbol: ts.Symbol): ts.Symbol =>
    symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
  const exportsOf = (file: ts.SourceFile | undefined): ts.Symbol[] => {
    const moduleSymbol = file && checker.getSymbolAtLocation(file);
    return moduleSymbol ? checker.getExportsOfModule(moduleSymbol) : [];
  };
  const moduleFile = (specifier: ts.Expression, from: ts.SourceFile): ts.SourceFile | undefined => {
    if (!ts.isStringLiteralLike(specifier)) return undefined;
    const symbol = checker.getSymbolAtLocation(specifier);
    const declaration = symbol?.declarations?.find(ts.isSourceFile);
    if (declaration) return declaration;
    const resolved = ts.resolveModuleName(
      specifier.text,
      from.fileName,
      program.getCompilerOptions(),
      ts.sys,
    ).resolvedModule;
    return resolved ? program.getSourceFile(resolved.resolvedFileName) : undefined;
  };

  const used = new Set<ts.Symbol>();
  for (const entry of [...entryPoints(root).map((e) => e.source), BIN])
    for (const symbol of exportsOf(program.getSourceFile(join(root, entry)))) used.add(original(symbol));

  for (const file of projectFiles) {
    const visit = (node: ts.Node): void => {
      if (ts.isImportDeclaration(node) && node.importClause) {
        const { name, namedBindings } = node.importClause;
        if (name) used.add(original(checker.getSymbolAtLocation(name)!));
        if (namedBindings && ts.isNamedImports(namedBindings)) {
          for (const element of namedBindings.elements) used.add(original(checker.getSymbolAtLocation(element.name)!));
        } else if (namedBindings) {
          for (const symbol of exportsOf(moduleFile(node.moduleSpecifier, file))) used.add(original(symbol));
        }
      } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && file !== undefined) {
        // `export { a } from` and `export * from` pass symbols on: whether they are used is decided
        // where the re-exporting module is imported (or by the entry points), by resolution.
        if (node.exportClause && ts.isNamespaceExport(node.exportClause)) {
          for (const symbol of exportsOf(moduleFile(node.moduleSpecifier, file))) used.add(original(symbol));
        }
      } else if (
        ts.isCallExpression(node) &&
        node.expression.kind === ts.SyntaxKind.ImportKeyword &&
        node.arguments[0]
      ) {
        for (const symbol of exportsOf(moduleFile(node.arguments[0], file))) used.add(original(symbol));
      } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
        const target = moduleFile(node.argument.literal, file);
        const member =
          node.qualifier && (ts.isIdentifier(node.qualifier) ? node.qualifier.text : node.qualifier.left.getText());
        for (const symbol of exportsOf(target)) if (!member || symbol.name === member) used.add(original(symbol));
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }

  const unused: string[] = [];
  for (const file of projectFiles) {
    const path = rel(file.fileName);
    // (A tool's configuration, such as tools/tsup.config.ts, is read by the tool, not imported.)
    if (!/^(src|tools)\//.test(path) || path.endsWith(".config.ts")) continue;
    for (const symbol of exportsOf(file)) {
      const target = original(symbol);
      // Re-exports are judged at their declaration.
      if (target.declarations?.some((declaration) => declaration.getSourceFile() !== file)) continue;
      if (!used.has(target)) unused.push(`${path}: ${symbol.name}`);
    }
  }
  return unused.sort();
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const unused = findUnusedExports(resolve(dirname(fileURLToPath(import.meta.url)), ".."));
  for (const line of unused) console.log(line);
  console.log(`${unused.length} unused exports`);
  process.exitCode = unused.length ? 1 : 0;
}
