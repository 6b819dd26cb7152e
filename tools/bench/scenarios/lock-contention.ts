/**
 * One contention round of the `lock` benchmark: P processes run C contenders in all, each taking one
 * blob lock in a loop (wait, hold, release, rest), with the library or the anchor's raw SDK loop;
 * measured from the processes' logs:
 *
 * - `overlaps`: critical sections (acquire resolved .. release called) that overlap: must be 0;
 * - `handoffMedianMs`, `handoffP90Ms`, `handoffP99Ms`: for each release while another contender was
 *   waiting, from the release call to the next holder's acquire() resolving (fencing token written);
 * - `waitMedianMs`, and `longestWaitToMeanWait`: the longest any contender waited (finished or cut
 *   off by the end of the round) over the mean wait: how far from starving the unluckiest waiter was;
 * - `requestsPerWaiterPerSec`: the cost of waiting: every request made inside `acquire()` except
 *   those that take the lock once it is free (the granted acquire and the record write): HEAD
 *   polls, acquires answered 409, the release of an unused lease id. Per second spent waiting;
 * - `requestsPerAcquisition`: those that take it, per acquisition: the granted acquire and the
 *   record write, more when the record write has to fall back (a 412, then the record read under
 *   the new lease, `record-head-*`, then the write);
 * - `requestsPerWaiterPerSecWithRecordReads`: `requestsPerWaiterPerSec` counting those record reads
 *   as waiting too, as this benchmark did before issue 27 (the worker could not tell them from polls);
 * - `allRequestsPerWaiterPerSec`: both together, per second spent in `acquire()`.
 */
import { randomUUID } from "node:crypto";
import { renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { median, round } from "../harness.js";
import { spawnBenchWorker, type BenchWorker } from "../workers.js";

interface Acquisition {
  id: string;
  waitStart: number;
  acquiredAt: number;
  releaseStart: number;
  releasedAt: number;
  token: number | undefined;
  waitKinds: Record<string, number>;
}
interface UnfinishedWait {
  id: string;
  waitStart: number;
  waitEnd: number;
  waitKinds: Record<string, number>;
}

/** The requests that take a lock once it is free: the granted acquire and the lock record's write. */
const ACQUISITION_KINDS = /^(acquire-201|metadata-\d+|record-.*)$/;

/**
 * Counts overlapping critical sections and measures handoffs: for each release while another
 * contender was already waiting, the time from the release call to the next acquisition by anyone
 * else (the lock's idle gap while there was demand for it).
 */
function analyse(acquisitions: readonly Acquisition[], unfinished: readonly UnfinishedWait[] = []) {
  const sorted = [...acquisitions].sort((a, b) => a.acquiredAt - b.acquiredAt);
  const waits = [
    ...acquisitions.map((a) => ({ id: a.id, from: a.waitStart, to: a.acquiredAt })),
    ...unfinished.map((w) => ({ id: w.id, from: w.waitStart, to: w.waitEnd })),
  ];
  let overlaps = 0;
  let selfReacquisitions = 0;
  const handoffs: number[] = [];
  for (let i = 0; i < sorted.length; i++) {
    const held = sorted[i]!;
    const next = sorted.slice(i + 1).find((a) => a.id !== held.id);
    if (sorted[i + 1]?.id === held.id) selfReacquisitions += 1;
    if (sorted[i + 1] && sorted[i + 1]!.acquiredAt < held.releaseStart) overlaps += 1;
    const someoneWaiting = waits.some(
      (w) => w.id !== held.id && w.from <= held.releaseStart && w.to > held.releaseStart,
    );
    if (next && someoneWaiting) handoffs.push(next.acquiredAt - held.releaseStart);
  }
  return { overlaps, handoffs, selfReacquisitions };
}

/** `count / over`, rounded; null when `over` is 0 (nothing to divide by). */
export function per(count: number, over: number, digits: number): number | null {
  return over > 0 ? round(count / over, digits) : null;
}

/** A contention round in a few words, for the progress lines ("n/a" for what could not be measured). */
export function summarise(round: {
  handoffMedianMs: number | null;
  handoffs: number;
  requestsPerWaiterPerSec: number | null;
}) {
  const handoff =
    round.handoffMedianMs === null
      ? "no handoffs (no release while another contender waited)"
      : `handoff median ${round.handoffMedianMs} ms over ${round.handoffs}`;
  return `${handoff}, ${round.requestsPerWaiterPerSec ?? "n/a"} req/waiter/s`;
}

/** How a round is run. */
export interface ContendSettings {
  processes: number;
  contenders: number;
  seconds: number;
  holdMs: number;
  restMs: number;
  /** The lock's poll interval; `undefined`: the library's default. */
  pollIntervalInMs: number | undefined;
}

/** Runs one contention round in child processes and measures it from their logs. */
export async function contend(
  mode: "library" | "anchor",
  connectionString: string,
  containerName: string,
  blobName: string,
  settings: ContendSettings,
) {
  const messages = await runContenderProcesses(
    "lock-contender",
    settings.processes,
    (goFile) => [
      mode,
      containerName,
      blobName,
      String(settings.contenders / settings.processes),
      goFile,
      String(settings.holdMs),
      String(settings.restMs),
      String(settings.pollIntervalInMs ?? "default"),
    ],
    connectionString,
    settings.seconds,
  );
  const measured = messages.filter(
    (m): m is Acquisition | UnfinishedWait => typeof m === "object" && m !== null && "waitKinds" in m,
  );
  const acquisitions = measured.filter((m): m is Acquisition => "acquiredAt" in m);
  const unfinished = measured.filter((m): m is UnfinishedWait => "waitEnd" in m);
  const { overlaps, handoffs, selfReacquisitions } = analyse(acquisitions, unfinished);
  const waitTimes = acquisitions.map((a) => a.acquiredAt - a.waitStart);
  const allWaits = [...waitTimes, ...unfinished.map((w) => w.waitEnd - w.waitStart)];
  const meanWait = allWaits.reduce((sum, w) => sum + w, 0) / Math.max(1, allWaits.length);
  const waitMs =
    acquisitions.reduce((sum, a) => sum + (a.acquiredAt - a.waitStart), 0) +
    unfinished.reduce((sum, w) => sum + (w.waitEnd - w.waitStart), 0);
  const requestKinds: Record<string, number> = {};
  for (const m of measured) {
    for (const [kind, n] of Object.entries(m.waitKinds)) requestKinds[kind] = (requestKinds[kind] ?? 0) + n;
  }
  const all = Object.values(requestKinds).reduce((sum, n) => sum + n, 0);
  const acquiring = Object.entries(requestKinds)
    .filter(([kind]) => ACQUISITION_KINDS.test(kind))
    .reduce((sum, [, n]) => sum + n, 0);
  const first = Math.min(...acquisitions.map((a) => a.waitStart));
  const last = Math.max(...acquisitions.map((a) => a.releasedAt));
  const tokens = acquisitions.map((a) => a.token).filter((t) => t !== undefined);
  const sorted = [...handoffs].sort((a, b) => a - b);
  return {
    acquisitions: acquisitions.length,
    acquisitionsPerSec: acquisitions.length === 0 ? 0 : per(acquisitions.length, (last - first) / 1000, 1),
    // null, not NaN, when there was nothing to measure (no handoff, no waiting): JSON has no NaN.
    handoffMedianMs: handoffs.length === 0 ? null : round(median(handoffs), 1),
    handoffP90Ms: handoffs.length === 0 ? null : round(sorted[Math.floor(sorted.length * 0.9)]!, 1),
    handoffP99Ms: handoffs.length === 0 ? null : round(sorted[Math.floor(sorted.length * 0.99)]!, 1),
    handoffs: handoffs.length,
    longestWaitMs: allWaits.length === 0 ? null : round(Math.max(...allWaits), 1),
    longestWaitToMeanWait: meanWait > 0 ? round(Math.max(...allWaits) / meanWait, 2) : null,
    waitMedianMs: waitTimes.length === 0 ? null : round(median(waitTimes), 1),
    selfReacquisitions,
    requestsPerWaiterPerSec: per(all - acquiring, waitMs / 1000, 1),
    requestsPerWaiterPerSecWithRecordReads: per(
      all -
        acquiring +
        Object.entries(requestKinds).reduce((sum, [k, n]) => sum + (k.startsWith("record-") ? n : 0), 0),
      waitMs / 1000,
      1,
    ),
    requestsPerAcquisition: per(acquiring, acquisitions.length, 2),
    allRequestsPerWaiterPerSec: per(all, waitMs / 1000, 1),
    waitingSeconds: round(waitMs / 1000, 1),
    requestKinds,
    overlaps,
    fencingTokensUnique: new Set(tokens).size === tokens.length,
  };
}

/**
 * Starts `processes` worker processes of `worker` (each with the arguments `args(goFile)`), lets them
 * load, starts them together for `seconds`, waits for them to exit and answers every JSON line they
 * printed. The go file holds the start and the deadline (`{"startAt":…,"deadline":…}`, epoch ms).
 */
export async function runContenderProcesses(
  worker: BenchWorker,
  processes: number,
  args: (goFile: string) => string[],
  connectionString: string,
  seconds: number,
): Promise<unknown[]> {
  const goFile = join(tmpdir(), `asc-bench-go-${randomUUID()}`);
  const workers = Array.from({ length: processes }, () => spawnBenchWorker(worker, args(goFile), connectionString));
  try {
    // The processes load first (seconds on a busy machine), then start together.
    await Promise.all(workers.map((w) => w.waitFor((m: { ready?: boolean }) => m?.ready === true, 120_000)));
    const startAt = Date.now() + 200;
    // Written aside, then renamed: the workers poll for the file, and one that found it while
    // writeFileSync had created it but not yet written it read an empty file (seen: JSON.parse failed).
    writeFileSync(`${goFile}.tmp`, JSON.stringify({ startAt, deadline: startAt + seconds * 1000 }));
    renameSync(`${goFile}.tmp`, goFile);
    const exits = await Promise.all(workers.map((w) => w.exited));
    exits.forEach(({ code }, i) => {
      if (code !== 0) throw new Error(`contender process ${i} exited with ${code}: ${workers[i]!.stderr()}`);
    });
  } finally {
    await Promise.all(workers.map((w) => w.kill()));
    rmSync(goFile, { force: true });
  }
  return workers.flatMap((w) => w.messages);
}
