/**
 * Starts a benchmark's worker process (the scripts in ./workers/), the same way from source and from
 * the package: from source (tests, `npm run bench`) this module is TypeScript and the worker runs as
 * `src/bench/workers/<name>.ts` through tsx; from the package it is bundled JavaScript and the worker
 * runs as the bundled `dist/bench/workers/<name>.js` (an entry of tsup.config.ts), with nothing but
 * Node.js.
 */
import { join } from "node:path";
import { spawnNodeProcess, type WorkerProcess } from "../internal/processes.js";
import { locatePackage } from "./package-root.js";

/** The worker scripts, by name (each is a file in ./workers/ and an entry of the build). */
export type BenchWorker = "lock-contender" | "optimistic-writer";

/**
 * The Node.js arguments that run worker `name` for the module at `moduleUrl`: through tsx when the
 * module is TypeScript (running from source), as plain JavaScript otherwise (running from `dist/`).
 */
export function workerCommand(name: BenchWorker, moduleUrl: string): string[] {
  const { root, fromSource } = locatePackage(moduleUrl);
  return fromSource
    ? ["--import", "tsx", join(root, "src", "bench", "workers", `${name}.ts`)]
    : [join(root, "dist", "bench", "workers", `${name}.js`)];
}

/** Starts worker `name` with `args`; `env` is added to the current environment. */
export function spawnBenchWorker(
  name: BenchWorker,
  args: readonly string[],
  env: Record<string, string> = {},
): WorkerProcess {
  return spawnNodeProcess(name, [...workerCommand(name, import.meta.url), ...args], env);
}
