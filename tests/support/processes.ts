/**
 * Child processes for tests whose claim is about several processes: each runs a TypeScript worker
 * script through tsx, gets the test storage through its environment, and reports by printing lines
 * (JSON lines by convention) on stdout.
 */
import { spawnNodeProcess, type WorkerProcess } from "../../tools/internal/processes.js";

export type { WorkerProcess } from "../../tools/internal/processes.js";

/**
 * Starts `node --import tsx <script> ...args` with the current Node.js binary.
 * @param env - added to the current environment.
 */
export function spawnWorker(
  script: string,
  args: readonly string[] = [],
  env: Record<string, string> = {},
): WorkerProcess {
  return spawnNodeProcess(script, ["--import", "tsx", script, ...args], env);
}

/**
 * Workers of one script, started one by one (`start()`, e.g. a replacement after a kill) and
 * stopped together at the end (`stopAll()`: those still running get `signal`).
 */
export function workerGroup(script: string, env: Record<string, string> = {}) {
  const workers: WorkerProcess[] = [];
  return {
    workers,
    start(): WorkerProcess {
      const worker = spawnWorker(script, [], env);
      workers.push(worker);
      return worker;
    },
    async stopAll(signal?: NodeJS.Signals): Promise<void> {
      await Promise.all(workers.map((w) => w.kill(signal)));
    },
  };
}
