/**
 * The published types as users compile them: the packed package installed in a scratch project
 * (tests/support/packed.ts) with the SDKs and `@types/node` beside it, and compiled there under the
 * settings strict projects use (`strict`, `exactOptionalPropertyTypes`, `noUncheckedIndexedAccess`,
 * `verbatimModuleSyntax`), with `nodenext` and with `bundler` resolution, no `skipLibCheck`:
 * - the package's own declaration files;
 * - every ```ts snippet of the README, of docs/ and of the public TSDoc examples (those that import
 *   the package, not a file of src/), with the placeholders of scripts/check-doc-examples.ts;
 * - a few expectations of this file's own (narrowing, the `abortSignal` a callback is given, a
 *   CommonJS consumer).
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { readdirSync } from "node:fs";
import { collectDocExamples, compileDocExamples, isSkipped } from "../../scripts/check-doc-examples.js";
import { entryPoints } from "../../scripts/entry-points.js";
import { FRAMEWORKS, packedProject, root, SDKS } from "../support/packed.js";

/** What strict projects set, whatever their module resolution. */
const STRICT = {
  strict: true,
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
  verbatimModuleSyntax: true,
  target: "es2022",
  lib: ["es2023"],
  types: ["node"],
  skipLibCheck: false,
  noEmit: true,
};

const RESOLUTIONS = {
  nodenext: { module: "nodenext", moduleResolution: "nodenext" },
  bundler: { module: "esnext", moduleResolution: "bundler" },
} as const;

/** Checked in every resolution: what the issue said must compile, stated as types. */
const EXPECTATIONS = `
import { blobJsonCell, optimisticUpdate, writeIfMatch, type MutationContext } from "azure-storage-concurrency/optimistic";
import { retry, type RetryAttemptContext } from "azure-storage-concurrency/retry";
import type { BlockBlobClient } from "@azure/storage-blob";

declare const blockBlob: BlockBlobClient;
declare function sdkCall(options: { abortSignal?: AbortSignal }): Promise<number>;

// The callbacks' abortSignal is always an AbortSignal, so it can be passed on under exactOptionalPropertyTypes.
const fromRetry: AbortSignal = ({} as RetryAttemptContext).abortSignal;
const fromMutate: AbortSignal = ({} as MutationContext).abortSignal;
await retry(({ abortSignal }) => sdkCall({ abortSignal }));

// After \`if (result.written)\`, the value is the value written.
const counter = blobJsonCell<{ visits: number }>(blockBlob);
const result = await optimisticUpdate(counter, (current, { abortSignal }) => {
  void sdkCall({ abortSignal });
  return { visits: (current?.visits ?? 0) + 1 };
});
if (result.written) {
  const visits: number = result.value.visits;
  void visits;
} else {
  // @ts-expect-error a skipped update's value may be undefined
  void result.value.visits;
}
const saved = await writeIfMatch(counter, "etag", { visits: 1 });
if (saved.written) void (saved.value.visits satisfies number);
export { fromRetry, fromMutate };
`;

/**
 * A CommonJS consumer (nodenext only: \`import x = require()\` is not ES module syntax), passing
 * the SDK's CommonJS types to the library's CommonJS types.
 */
const COMMONJS_CONSUMER = `
import lease = require("azure-storage-concurrency/lease");
import retry = require("azure-storage-concurrency/retry");
import testing = require("azure-storage-concurrency/testing");
import blob = require("@azure/storage-blob");

declare const container: blob.ContainerClient;
const lock: lease.LeaseLock = lease.blobLock(container, "nightly");
const policy: retry.RetryPolicy = retry.retryPolicy({ maxRetries: 1 });
const started: Promise<testing.RunningAzurite> = testing.startAzurite();
void [lock, policy, started];
`;

/** Every entry point of both packages, imported (so that every declaration file is checked). */
const ENTRY_POINTS = entryPoints(root).map((entry) => entry.specifier);
const EVERY_ENTRY_POINT = ENTRY_POINTS.map((specifier, i) => `import type * as entry${i} from "${specifier}";`)
  .concat([`export type Entries = [${ENTRY_POINTS.map((_, i) => `typeof entry${i}`).join(", ")}];`])
  .join("\n");
/** The same, required from CommonJS (the library's entry points; the tools package is ES modules only). */
const EVERY_ENTRY_POINT_REQUIRED = ENTRY_POINTS.filter((specifier) => !specifier.endsWith("-cli"))
  .map((specifier, i) => `import entry${i} = require("${specifier}");\nvoid entry${i};`)
  .join("\n");

/** The declaration files a package ships (paths as `<package>/dist/…`), of the given extensions. */
function declarationsOf(packageName: string, extensions: readonly string[]): string[] {
  const dir = join(scratch, "node_modules", packageName);
  const walk = (sub: string): string[] =>
    readdirSync(join(dir, sub), { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? walk(join(sub, entry.name)) : [join(sub, entry.name)],
    );
  return walk("dist")
    .filter((path) => extensions.some((extension) => path.endsWith(extension)))
    .map((path) => `${packageName}/${path}`);
}

let scratch: string;

beforeAll(() => {
  // docs/observability.md's set-up snippet imports the OpenTelemetry API and SDK, as a user's app would.
  const openTelemetry = ["@opentelemetry/api", "@opentelemetry/sdk-trace-base", "@opentelemetry/sdk-metrics"];
  // The integrations' entry points name their frameworks' types (optional peers a user of /express,
  // /fastify or /functions has installed), and so do their guides' snippets.
  const frameworks = [...FRAMEWORKS, "@types/express", "@types/express-serve-static-core"];
  scratch = packedProject([...SDKS, "@types/node", ...openTelemetry, ...frameworks]);
}, 60_000);

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Public snippets: they import the package (or nothing), never a file of src/. */
function publicSnippets() {
  return collectDocExamples(root).filter(
    (example) => !isSkipped(example) && !/^\s*import[^;]*from\s+["']\.{1,2}\//m.test(example.code),
  );
}

describe.each(Object.entries(RESOLUTIONS))("the published types under %s resolution", (resolution, moduleOptions) => {
  it("compile, with every documentation snippet, under strict settings", () => {
    const { options, errors } = ts.convertCompilerOptionsFromJson({ ...STRICT, ...moduleOptions }, scratch);
    expect(errors.map((e) => ts.flattenDiagnosticMessageText(e.messageText, " "))).toEqual([]);
    const snippets = publicSnippets();
    expect(snippets.length).toBeGreaterThan(100); // the README's, the docs' and the TSDoc examples
    const extraFiles = new Map([
      [join(scratch, "expectations.ts"), EXPECTATIONS],
      [join(scratch, "every-entry-point.ts"), EVERY_ENTRY_POINT],
    ]);
    if (resolution === "nodenext") {
      extraFiles.set(join(scratch, "commonjs-consumer.cts"), COMMONJS_CONSUMER);
      extraFiles.set(join(scratch, "every-entry-point-required.cts"), EVERY_ENTRY_POINT_REQUIRED);
    }

    const { program, problems } = compileDocExamples(snippets, {
      options,
      dirOf: () => join(scratch, "snippets"),
      extraFiles,
    });

    // The packages' own declaration files, all of them, checked as a project without skipLibCheck
    // checks them: those for `import`, and under nodenext those for `require` too (the CommonJS
    // consumers).
    const ours = program
      .getSourceFiles()
      .filter((file) => /\/node_modules\/azure-storage-concurrency(-cli)?\//.test(file.fileName));
    const extensions = resolution === "nodenext" ? [".d.cts", ".d.ts"] : [".d.ts"];
    expect(ours.map((file) => file.fileName.replace(/.*\/node_modules\//, "")).sort()).toEqual(
      [
        ...declarationsOf("azure-storage-concurrency", extensions),
        ...declarationsOf("azure-storage-concurrency-cli", extensions),
      ].sort(),
    );
    for (const file of ours) {
      for (const diagnostic of [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)]) {
        const { line } = file.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
        problems.push(
          `${file.fileName.replace(/.*\/node_modules\//, "")}:${line + 1} ${ts.flattenDiagnosticMessageText(diagnostic.messageText, " ")}`,
        );
      }
    }
    expect(problems).toEqual([]);
  }, 120_000);
});
