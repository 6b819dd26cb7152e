/**
 * Starts a benchmark's worker process (the scripts in ./workers/), the same way from source and from
 * the package: from source (tests, `npm run bench`) this module is TypeScript and the worker runs as
 * `tools/bench/workers/<name>.ts` through tsx; from the package it is bundled JavaScript and the
 * worker runs as the bundled `dist/bench/workers/<name>.js` (an entry of tools/tsup.config.ts), with
 * nothing but Node.js.
 *
 * A worker gets the account's connection string through its environment
 * ({@link workerConnectionString}), never on its command line: any local user can read a process's
 * command line (`ps`), and the connection string holds the account key or a SAS.
 */
import { join } from "node:path";
import { spawnNodeProcess, type WorkerProcess } from "../internal/processes.js";
import { locatePackage } from "../internal/package-root.js";

/** The worker scripts, by name (each is a file in ./workers/ and an entry of the build). */
export type BenchWorker =
  "lock-contender" | "semaphore-contender" | "optimistic-writer" | "queue-consumer" | "schedule-instance";

/**
 * The Node.js arguments that run worker `name` for the module at `moduleUrl`: through tsx when the
 * module is TypeScript (running from source), as plain JavaScript otherwise (running from `dist/`).
 */
export function workerCommand(name: BenchWorker, moduleUrl: string): string[] {
  const { root, fromSource } = locatePackage(moduleUrl);
  return fromSource
    ? ["--import", "tsx", join(root, "bench", "workers", `${name}.ts`)]
    : [join(root, "dist", "bench", "workers", `${name}.js`)];
}

/** The environment variable that hands a worker its connection string. */
const CONNECTION_STRING_VARIABLE = "BENCH_CONNECTION_STRING";

/**
 * Starts worker `name` with `args` (nothing secret: they are visible in the process list) on the
 * account of `connectionString` (handed over in the environment); `env` is added to the environment.
 */
export function spawnBenchWorker(
  name: BenchWorker,
  args: readonly string[],
  connectionString: string,
  env: Record<string, string> = {},
): WorkerProcess {
  return spawnNodeProcess(name, [...workerCommand(name, import.meta.url), ...args], {
    ...env,
    [CONNECTION_STRING_VARIABLE]: connectionString,
  });
}

/** In a worker process: the connection string its scenario handed over. */
export function workerConnectionString(): string {
  const value = process.env[CONNECTION_STRING_VARIABLE];
  if (!value) throw new Error(`${CONNECTION_STRING_VARIABLE} is not set: start this worker with spawnBenchWorker`);
  return value;
}
