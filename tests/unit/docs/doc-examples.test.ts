/**
 * The documentation's TypeScript compiles: every ```ts block of the TSDoc comments in src/, of
 * README.md and of docs/*.md, type-checked in one program by scripts/check-doc-examples.ts; and every
 * exported function and class has an `@example`.
 */
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { checkDocExamples, examplesInMarkdown, examplesInSource } from "../../../scripts/check-doc-examples.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

describe("documentation snippets", () => {
  it("extracts ```ts blocks from TSDoc comments without their margins, at their source lines", () => {
    const source = [
      "/**",
      " * Adds.",
      " *",
      " * @example",
      " * ```ts",
      ' * import { add } from "x";',
      " *",
      " *   add(1, 2);",
      " * ```",
      " */",
      "export const add = (a: number, b: number) => a + b;",
      "// ```ts outside a doc comment is not a snippet",
    ].join("\n");
    expect(examplesInSource("src/add.ts", source)).toEqual([
      { file: "src/add.ts", line: 6, code: 'import { add } from "x";\n\n  add(1, 2);' },
    ]);
  });

  it("extracts ```ts and ```typescript blocks from Markdown, indented ones too, and no others", () => {
    const markdown = [
      "# T",
      "```sh",
      "npm test",
      "```",
      "- item",
      "  ```typescript",
      "  const a = 1;",
      "  ```",
      "```ts",
      "b();",
      "```",
    ].join("\n");
    expect(examplesInMarkdown("docs/t.md", markdown)).toEqual([
      { file: "docs/t.md", line: 7, code: "const a = 1;" },
      { file: "docs/t.md", line: 10, code: "b();" },
    ]);
    expect(() => examplesInMarkdown("docs/u.md", "```ts\nopen();")).toThrow(
      /docs\/u\.md:1: a ```ts block is never closed/,
    );
  });

  it("all compile, and every exported function and class has an @example", () => {
    const report = checkDocExamples(root);
    expect(report.problems).toEqual([]);
    expect(report.missingExamples).toEqual([]);
    expect(report.checked).toBeGreaterThan(100); // the extraction found the snippets
    expect(report.skipped.map((example) => `${example.file}:${example.line}`)).toEqual([]);
  });
});
