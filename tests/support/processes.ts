/**
 * Child processes for tests whose claim is about several processes: each runs a TypeScript worker
 * script through tsx, gets the test storage through its environment, and reports by printing lines
 * (JSON lines by convention) on stdout.
 */
import { spawnNodeProcess, type WorkerProcess } from "../../src/internal/processes.js";

export type { WorkerProcess } from "../../src/internal/processes.js";

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
