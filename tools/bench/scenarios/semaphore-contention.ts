/**
 * One contention round of the `semaphore` benchmark: P processes run C contenders in all, each taking
 * a permit of one semaphore of N permits in a loop (wait, hold, release, rest), with the library or
 * the raw SDK loop; measured from the processes' logs (one line per acquisition, with its slot):
 *
 * - `overlapsAboveMax`: acquisitions that made more than N critical sections (acquire resolved ..
 *   release called) overlap: must be 0; `slotOverlaps`: two holders of one slot at once: must be 0;
 * - `tokensIncreasePerSlot`: each slot's fencing tokens go up with the order of its acquisitions;
 * - `longestWaitToMeanWait`: the longest any contender waited (finished or cut off by the end of the
 *   round) over the mean wait: how far from starving the unluckiest waiter was; `waitMedianMs`;
 * - `requestsPerWaiterPerSec`: the cost of waiting: every request made inside `acquire()` except
 *   those that take a permit once a slot is free (the granted acquire, and the slot's record: its
 *   HEAD and metadata write): listings, acquires answered 409, releases of unused lease ids. Per
 *   second spent waiting; `requestsPerAcquisition`: those left out, per acquisition;
 * - `handoffMedianMs`: for each release while another contender was waiting, from the release
 *   call to the next acquisition by another contender;
 * - `permitUtilisation`: the share of the N permits' time that was held.
 */
import { median, round } from "../harness.js";
import { per, runContenderProcesses } from "./lock-contention.js";

interface Acquisition {
  id: string;
  waitStart: number;
  acquiredAt: number;
  releaseStart: number;
  releasedAt: number;
  slot: number;
  token: number | undefined;
  waitKinds: Record<string, number>;
}
interface UnfinishedWait {
  id: string;
  waitStart: number;
  waitEnd: number;
  waitKinds: Record<string, number>;
}

/** The requests that take a permit once a slot is free: the granted acquire and the slot's record (read and write). */
const ACQUISITION_KINDS = /^(acquire-201|metadata-\d+|head-.*)$/;

/** How a round is run. */
export interface PermitRoundSettings {
  readonly processes: number;
  readonly contenders: number;
  /** The semaphore's `maxCount`. */
  readonly permits: number;
  readonly seconds: number;
  readonly holdMs: number;
  readonly restMs: number;
  /** The semaphore's poll interval; `undefined`: the library's default. */
  readonly pollIntervalInMs: number | undefined;
}

/** Acquisitions that took the number of overlapping critical sections above `permits`. */
export function overlapsAbove(acquisitions: readonly Acquisition[], permits: number): number {
  // A release at the same moment as an acquisition ends first: the permit was free.
  const events = acquisitions
    .flatMap((a) => [
      { at: a.acquiredAt, delta: 1 },
      { at: a.releaseStart, delta: -1 },
    ])
    .sort((a, b) => a.at - b.at || a.delta - b.delta);
  let held = 0;
  let above = 0;
  for (const { delta } of events) {
    held += delta;
    if (delta > 0 && held > permits) above += 1;
  }
  return above;
}

/** Per slot: overlapping holders, and whether the fencing tokens go up in the order of acquisition. */
function perSlot(acquisitions: readonly Acquisition[]) {
  const bySlot = new Map<number, Acquisition[]>();
  for (const a of acquisitions) bySlot.set(a.slot, [...(bySlot.get(a.slot) ?? []), a]);
  let slotOverlaps = 0;
  let tokensIncrease: boolean | null = null;
  for (const held of bySlot.values()) {
    held.sort((a, b) => a.acquiredAt - b.acquiredAt);
    for (let i = 1; i < held.length; i++) {
      if (held[i]!.acquiredAt < held[i - 1]!.releaseStart) slotOverlaps += 1;
      const [before, after] = [held[i - 1]!.token, held[i]!.token];
      if (before !== undefined && after !== undefined) tokensIncrease = (tokensIncrease ?? true) && after > before;
    }
  }
  return { slotOverlaps, tokensIncreasePerSlot: tokensIncrease, slotsUsed: bySlot.size };
}

/** Runs one round in child processes and measures it from their logs. */
export async function contendForPermits(
  mode: "library" | "anchor",
  connectionString: string,
  containerName: string,
  name: string,
  settings: PermitRoundSettings,
) {
  const messages = await runContenderProcesses(
    "semaphore-contender",
    settings.processes,
    (goFile) => [
      mode,
      containerName,
      name,
      String(settings.permits),
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
  const waits = [
    ...acquisitions.map((a) => ({ id: a.id, from: a.waitStart, to: a.acquiredAt })),
    ...unfinished.map((w) => ({ id: w.id, from: w.waitStart, to: w.waitEnd })),
  ];
  const waitTimes = waits.map((w) => w.to - w.from);
  const waitMs = waitTimes.reduce((sum, w) => sum + w, 0);
  const meanWait = waitMs / Math.max(1, waitTimes.length);

  const sorted = [...acquisitions].sort((a, b) => a.acquiredAt - b.acquiredAt);
  const handoffs: number[] = [];
  for (const held of acquisitions) {
    const someoneWaiting = waits.some(
      (w) => w.id !== held.id && w.from <= held.releaseStart && w.to > held.releaseStart,
    );
    const next = sorted.find((a) => a.id !== held.id && a.acquiredAt >= held.releaseStart);
    if (someoneWaiting && next) handoffs.push(next.acquiredAt - held.releaseStart);
  }

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
  const heldMs = acquisitions.reduce((sum, a) => sum + (a.releaseStart - a.acquiredAt), 0);
  return {
    contenders: settings.contenders,
    permits: settings.permits,
    processes: settings.processes,
    acquisitions: acquisitions.length,
    acquisitionsPerSec: acquisitions.length === 0 ? 0 : per(acquisitions.length, (last - first) / 1000, 1),
    overlapsAboveMax: overlapsAbove(acquisitions, settings.permits),
    ...perSlot(acquisitions),
    // null, not NaN, when there was nothing to measure: JSON has no NaN.
    longestWaitMs: waitTimes.length === 0 ? null : round(Math.max(...waitTimes), 1),
    meanWaitMs: waitTimes.length === 0 ? null : round(meanWait, 1),
    waitMedianMs: waitTimes.length === 0 ? null : round(median(waitTimes), 1),
    longestWaitToMeanWait: meanWait > 0 ? round(Math.max(...waitTimes) / meanWait, 2) : null,
    handoffMedianMs: handoffs.length === 0 ? null : round(median(handoffs), 1),
    handoffs: handoffs.length,
    requestsPerWaiterPerSec: per(all - acquiring, waitMs / 1000, 2),
    requestsPerAcquisition: per(acquiring, acquisitions.length, 2),
    allRequestsPerWaiterPerSec: per(all, waitMs / 1000, 2),
    waitingSeconds: round(waitMs / 1000, 1),
    permitUtilisation: last > first ? round(heldMs / (settings.permits * (last - first)), 2) : null,
    requestKinds,
  };
}
