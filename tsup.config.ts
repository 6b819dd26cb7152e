import { defineConfig, type Options } from "tsup";

/**
 * The package's entry points (its `exports` map): the root, and one per feature, each from its
 * folder's `index.ts` (`/errors` from `src/error-codes.ts`). ESM and CJS, with types.
 */
const library = {
  index: "src/index.ts",
  "errors/index": "src/error-codes.ts",
  "files/index": "src/files/index.ts",
  "idempotency/index": "src/idempotency/index.ts",
  "lease/index": "src/lease/index.ts",
  "optimistic/index": "src/optimistic/index.ts",
  "queue/index": "src/queue/index.ts",
  "retry/index": "src/retry/index.ts",
  "tables/index": "src/tables/index.ts",
  "testing/index": "src/testing/index.ts",
  "claim-check/index": "src/claim-check/index.ts",
  "outbox/index": "src/outbox/index.ts",
  "schedule/index": "src/schedule/index.ts",
  "semaphore/index": "src/semaphore/index.ts",
  "throttling/index": "src/throttling/index.ts",
  "express/index": "src/express/index.ts",
  "fastify/index": "src/fastify/index.ts",
  "functions/index": "src/functions/index.ts",
};

const shared: Options = {
  entry: library,
  dts: { entry: library },
  // No source maps: the JavaScript is not minified, so stack traces and a debugger show readable
  // code with the source's names, and the package carries it once (maps embedding the sources came
  // to 2 MB, twice over for the ESM and CommonJS builds).
  sourcemap: false,
  target: "node22",
  tsconfig: "tsconfig.build.json",
  // Shared chunks in both formats: every entry point of one format runs on one copy of the
  // library's modules, so `require("azure-storage-concurrency")` and
  // `require("azure-storage-concurrency/optimistic")` share one optimistic engine (one pool of
  // writer slots, one write-skip cache), as the ES module entry points do.
  splitting: true,
};

export default defineConfig([
  { ...shared, format: "esm", clean: true },
  // p-retry is ESM-only. Bundling it into the CommonJS build keeps `require()` working on every
  // Node 22 release (require of ES modules is only unflagged from 22.12). See THIRD_PARTY_NOTICES.md.
  { ...shared, format: "cjs", noExternal: ["p-retry", "is-network-error"] },
]);
