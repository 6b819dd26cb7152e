/**
 * Child processes for tests and benchmarks whose claim is about several processes: each runs a
 * script with the current Node.js binary, gets its storage through its environment, and reports by
 * printing lines (JSON lines by convention) on stdout. The tests' `spawnWorker` runs TypeScript
 * through tsx; the benchmarks' workers run as TypeScript from source and as JavaScript from the
 * package (tools/bench/workers.ts).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";

/** A running worker process. */
export interface WorkerProcess {
  readonly child: ChildProcess;
  /** Every stdout line so far. */
  readonly lines: readonly string[];
  /** Every stdout line parsed as JSON (lines that are not JSON are skipped). */
  readonly messages: readonly unknown[];
  /** Everything printed on stderr so far. */
  readonly stderr: () => string;
  /** Resolves with the exit code (or signal) once the process has exited and its output has all been read. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the first stdout line (parsed as JSON when possible) that satisfies `predicate`. */
  waitFor<T = unknown>(predicate: (message: T) => boolean, timeoutInMs?: number): Promise<T>;
  /** Sends a signal (SIGKILL by default) and waits for the exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Starts `node ...nodeArgs` with the current Node.js binary.
 * @param name - what the process is called in error messages (its script).
 * @param env - added to the current environment.
 */
export function spawnNodeProcess(
  name: string,
  nodeArgs: readonly string[],
  env: Record<string, string> = {},
): WorkerProcess {
  const child = spawn(process.execPath, nodeArgs, {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: string[] = [];
  const messages: unknown[] = [];
  const waiters = new Set<(line: string, message: unknown) => void>();
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  createInterface({ input: child.stdout }).on("line", (line) => {
    lines.push(line);
    let message: unknown = line;
    try {
      message = JSON.parse(line);
      messages.push(message);
    } catch {
      // not JSON: kept in `lines` only
    }
    for (const waiter of [...waiters]) waiter(line, message);
  });
  // "close", not "exit": a process can exit before its last output line has been read, and that line
  // (a worker's report, say) must reach the waiters before they hear that the process is gone.
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("close", (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    lines,
    messages,
    stderr: () => stderr,
    exited,
    waitFor<T>(predicate: (message: T) => boolean, timeoutInMs = 30_000): Promise<T> {
      const already = messages.find((m) => predicate(m as T));
      if (already !== undefined) return Promise.resolve(already as T);
      return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(new Error(`worker ${name} printed nothing matching within ${timeoutInMs} ms; stderr:\n${stderr}`));
        }, timeoutInMs);
        const waiter = (_line: string, message: unknown) => {
          if (!predicate(message as T)) return;
          clearTimeout(timer);
          waiters.delete(waiter);
          resolve(message as T);
        };
        waiters.add(waiter);
        void exited.then(() => {
          if (!waiters.has(waiter)) return;
          clearTimeout(timer);
          waiters.delete(waiter);
          reject(new Error(`worker ${name} exited before printing what was awaited; stderr:\n${stderr}`));
        });
      });
    },
    async kill(signal: NodeJS.Signals = "SIGKILL") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}
