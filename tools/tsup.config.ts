import { defineConfig } from "tsup";

/**
 * The tools package: its module (the partition stress test as a function), the command line tool
 * (`bin`) and the benchmarks' worker processes, which the tool starts as plain JavaScript from
 * dist/bench/workers/ (bench/workers.ts). ES modules only: the library it drives, like the SDKs, is
 * a peer dependency and stays external, resolved from the user's project.
 */
export default defineConfig({
  entry: {
    index: "index.ts",
    "cli/main": "cli/main.ts",
    "bench/workers/lock-contender": "bench/workers/lock-contender.ts",
    "bench/workers/semaphore-contender": "bench/workers/semaphore-contender.ts",
    "bench/workers/optimistic-writer": "bench/workers/optimistic-writer.ts",
    "bench/workers/queue-consumer": "bench/workers/queue-consumer.ts",
    "bench/workers/schedule-instance": "bench/workers/schedule-instance.ts",
  },
  dts: { entry: { index: "index.ts" } },
  format: "esm",
  clean: true,
  sourcemap: false,
  target: "node22",
  tsconfig: "tsconfig.build.json",
  external: [/^azure-storage-concurrency(\/|$)/],
});
