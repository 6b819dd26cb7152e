/**
 * Starts a benchmark's worker process (the scripts in ./workers/), the same way from source and from
 * the package: from source (tests, `npm run bench`) this module is TypeScript and the worker runs as
 * `src/bench/workers/<name>.ts` through tsx; from the package it is bundled JavaScript and the worker
 * runs as the bundled `dist/bench/workers/<name>.js` (an entry of tsup.config.ts), with nothing but
 * Node.js. The package's root is found by walking up from this module to the nearest package.json,
 * because in the bundle this code may sit in any chunk of `dist/`.
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { spawnNodeProcess, type WorkerProcess } from "../internal/processes.js";

/** The worker scripts, by name (each is a file in ./workers/ and an entry of the build). */
export type BenchWorker = "lock-contender" | "optimistic-writer";

/**
 * The Node.js arguments that run worker `name` for the module at `moduleUrl`: through tsx when the
 * module is TypeScript (running from source), as plain JavaScript otherwise (running from `dist/`).
 */
export function workerCommand(name: BenchWorker, moduleUrl: string): string[] {
  const fromSource = /\.[cm]?ts$/.test(new URL(moduleUrl).pathname);
  let root = dirname(fileURLToPath(moduleUrl));
  while (!existsSync(join(root, "package.json"))) {
    const parent = dirname(root);
    if (parent === root) throw new Error(`no package.json above ${fileURLToPath(moduleUrl)}`);
    root = parent;
  }
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
