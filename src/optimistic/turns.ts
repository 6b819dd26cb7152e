/**
 * Taking turns under contention: the one fairness rule of the optimistic engine.
 *
 * A process that wrote a cell last may skip the read of its next update (the write-skip cache,
 * `process-state.ts`): it already knows the version and ETag, so its write goes out at once. Under
 * contention that is unfair: while the others get their 412, wait and read again, the last writer's
 * next write is already on its way, and it wins again, for ever. Nothing tells it that others wait:
 * their failed writes leave no trace on the cell.
 *
 * So a process that knows the cell is contended skips reads only a few times in a row (its
 * streak). Then it hands the cell over: it pauses for a few of its own request times, which is room
 * for a waiting writer's read and write, and reads before it writes again. A waiting writer that
 * lands in the pause takes the next turn, and hands over in its turn. Waiting writers wait at most a
 * few request times per process writing the cell before they read again (the caller's backoff is
 * capped by that), so that together they try about once per pause whatever their number: a hand-over
 * is soon taken, and the cell's load does not grow with the writers.
 *
 * A cell counts as contended for a second after the last sign of another writer: a conflict, a read
 * showing another process's write last, or a hand-over somebody took. So a lone writer never pauses,
 * and a writer that was alone for a second goes back to skipping every read. Only when to read and
 * how long to wait change: every write keeps its `If-Match`, so this rule can cost time, never
 * correctness. Who takes a turn is not ordered (the waiting writers cannot announce themselves), so
 * shares even out over many turns, while a single update can still lose several turns in a row.
 *
 * The state is per cell and per process: a {@link Turns} record in the cell's state
 * (`process-state.ts`), beside the write-skip cache; the functions here read and update it.
 */
import { PROCESS_ID, parseWriteLog } from "./write-log.js";

/** Writes in a row a process makes with skipped reads on a contended cell before handing it over. */
const STREAK = 8;
/** How long a cell counts as contended after the last sign of another writer, in milliseconds. */
const CONTENTION_MEMORY_IN_MS = 1_000;
/** A hand-over's pause, in this process's recent request times on the cell. */
const PAUSE_IN_REQUEST_TIMES = 3;
/**
 * On a contended cell, the longest wait after a conflict, in recent request times per process
 * writing the cell: the waiting processes together then try about once per hand-over pause, however
 * many they are, so a hand-over is soon taken and the cell's load does not grow with the writers.
 */
const MAX_WAIT_IN_REQUEST_TIMES_PER_WRITER = 1.5;
/** One cell's turns, as this process saw them. */
export interface Turns {
  /** When this process last saw a sign of another writer (performance.now()); -Infinity: never. */
  contendedAt: number;
  /** Writes made in a row with skipped reads since the last read. */
  streak: number;
  /** Smoothed duration of this process's requests to the cell, in milliseconds. */
  requestTimeInMs: number;
  /** How many processes wrote the cell lately, as its history showed when this process last read it. */
  writers: number;
}

/** The turns of a cell this process knows nothing of yet: uncontended, no streak. */
export function newTurns(): Turns {
  return { contendedAt: -Infinity, streak: 0, requestTimeInMs: 0, writers: 1 };
}

/**
 * Before an update that could skip its read: the pause (milliseconds) after which it should read
 * instead, handing the cell over; undefined to go ahead and skip the read.
 */
export function handOverPause(turns: Turns): number | undefined {
  if (!isContended(turns) || turns.streak < STREAK) return undefined;
  return PAUSE_IN_REQUEST_TIMES * turns.requestTimeInMs;
}

/** The longest a writer should wait after a conflict before reading again (the backoff is capped by it). */
export function maxWaitAfterConflict(turns: Turns): number {
  if (!isContended(turns) || turns.requestTimeInMs === 0) return Infinity;
  return MAX_WAIT_IN_REQUEST_TIMES_PER_WRITER * Math.max(2, turns.writers) * turns.requestTimeInMs;
}

/** A request of this process to the cell took `elapsedInMs` (the time a hand-over pause is measured in). */
export function noteRequestTime(turns: Turns, elapsedInMs: number): void {
  smoothRequestTime(turns, elapsedInMs);
}

function smoothRequestTime(turns: Turns, elapsedInMs: number): void {
  turns.requestTimeInMs = turns.requestTimeInMs === 0 ? elapsedInMs : 0.8 * turns.requestTimeInMs + 0.2 * elapsedInMs;
}

/** A write of this process landed, taking `elapsedInMs`; `skippedRead` when it was made without reading first. */
export function noteWrite(turns: Turns, elapsedInMs: number, skippedRead: boolean): void {
  smoothRequestTime(turns, elapsedInMs);
  turns.streak = skippedRead ? turns.streak + 1 : 1;
}

/** Another writer's write made ours fail. */
export function noteLostWrite(turns: Turns): void {
  turns.contendedAt = performance.now();
  turns.streak = 0;
}

/**
 * This process read the cell; `handOver` when it paused to hand the cell over, with the ETag it
 * wrote last.
 */
export function noteRead(
  turns: Turns,
  version: { readonly etag: string; readonly log: string | undefined } | undefined,
  handOver: { readonly ownEtag: string } | undefined,
): void {
  turns.streak = 0;
  const history = parseWriteLog(version?.log);
  // Writer slots start with their process's id.
  const processOf = (slot: string) => slot.slice(0, PROCESS_ID.length);
  turns.writers = new Set(history?.writers.map((w) => processOf(w.slot))).size;
  const last = history?.writers.find((w) => w.seq === history.seq);
  const foreign = handOver
    ? version?.etag !== handOver.ownEtag // someone took the turn
    : last !== undefined && processOf(last.slot) !== PROCESS_ID;
  if (foreign) turns.contendedAt = performance.now();
}

function isContended(turns: Turns): boolean {
  return performance.now() - turns.contendedAt < CONTENTION_MEMORY_IN_MS;
}
