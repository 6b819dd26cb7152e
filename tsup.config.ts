import { defineConfig, type Options } from "tsup";

/** The package's entry points (its `exports` map): ESM and CJS, with types. */
const library = { index: "src/index.ts", "testing/index": "src/testing/index.ts" };

const shared: Options = {
  dts: { entry: library },
  // No source maps: the JavaScript is not minified, so stack traces and a debugger show readable
  // code with the source's names, and the package carries it once (maps embedding the sources came
  // to 2 MB, twice over for the ESM and CommonJS builds).
  sourcemap: false,
  target: "node22",
  tsconfig: "tsconfig.build.json",
};

export default defineConfig([
  {
    ...shared,
    format: "esm",
    clean: true,
    entry: {
      ...library,
      // The command line tool (package.json `bin`) and the benchmarks' worker processes, which it
      // starts as plain JavaScript from dist/bench/workers/ (src/bench/workers.ts). ESM only: no one
      // can require() them (they are not in `exports`), and the chunks are shared with the library.
      "cli/main": "src/cli/main.ts",
      "bench/workers/lock-contender": "src/bench/workers/lock-contender.ts",
      "bench/workers/semaphore-contender": "src/bench/workers/semaphore-contender.ts",
      "bench/workers/optimistic-writer": "src/bench/workers/optimistic-writer.ts",
      "bench/workers/queue-consumer": "src/bench/workers/queue-consumer.ts",
      "bench/workers/schedule-instance": "src/bench/workers/schedule-instance.ts",
    },
  },
  // p-retry is ESM-only. Bundling it into the CommonJS build keeps `require()` working on every
  // Node 22 release (require of ES modules is only unflagged from 22.12). See THIRD_PARTY_NOTICES.md.
  { ...shared, format: "cjs", entry: library, noExternal: ["p-retry", "is-network-error"] },
]);
