import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { workerCommand, type BenchWorker } from "../../../tools/bench/workers.js";

/** The tools package, where the benchmarks live (the repository's tools/ folder). */
const root = resolve("tools");
const WORKERS: readonly BenchWorker[] = [
  "lock-contender",
  "semaphore-contender",
  "optimistic-writer",
  "queue-consumer",
  "schedule-instance",
];
const url = (...path: string[]) => pathToFileURL(join(root, ...path)).href;

describe("benchmark worker processes", () => {
  it("run through tsx from source", () => {
    for (const name of WORKERS) {
      const command = workerCommand(name, url("bench", "workers.ts"));
      expect(command).toEqual(["--import", "tsx", join(root, "bench", "workers", `${name}.ts`)]);
      expect(existsSync(command[2]!)).toBe(true);
    }
  });

  it("run as the bundled JavaScript from dist/, whichever chunk starts them", () => {
    for (const from of [url("dist", "chunk-ABC123.js"), url("dist", "cli", "main.js")]) {
      expect(workerCommand("lock-contender", from)).toEqual([
        join(root, "dist", "bench", "workers", "lock-contender.js"),
      ]);
    }
  });

  it("are each an entry of the build, so that dist/ has them", () => {
    const config = readFileSync(join(root, "tsup.config.ts"), "utf8");
    for (const name of WORKERS) {
      expect(config).toContain(`"bench/workers/${name}": "bench/workers/${name}.ts"`);
    }
  });
});
