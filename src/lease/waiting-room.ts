/**
 * Waiting for a lock, shared by the `acquire()` calls of one process that wait for the same lock:
 * what finds a freed lease quickly is how often *someone* looks, not how often each waiter does, so
 * the waiters of a process take turns instead of each polling on its own.
 *
 * - Looks: one look (one HEAD) per `pollIntervalInMs` for the whole process, whatever its number of
 *   waiters, made by the waiter at the head of the room (the longest waiting). Each wait is drawn
 *   around the interval, shorter for a head that has waited longer than this process's waiters
 *   usually do and longer for a fresh one: from 0.5x to 1.5x (then jittered from 75% to 125%), so
 *   that across processes the longest waiting heads look most often and win most handoffs, without
 *   the process looking more often on average.
 * - Releases: a release in this process wakes the head at once; it sends its acquire without a
 *   look, and writes its record on the ETag of the record the releasing lock wrote (`lastSeen`). At most {@link LOCAL_HANDOFFS_IN_A_ROW} such handoffs in a row, so that a process with
 *   several waiters cannot keep the lock from the other processes' waiters.
 * - First tries: a call that finds others of this process waiting, or a holder in this process,
 *   joins the room without trying (the lock is held: a try would be a 409).
 *
 * Rooms are keyed by the leased resource (`Leasable.key`, its URL for blobs); a leasable without a
 * key gets a room per lock. A room is dropped when its last waiter leaves and no handle holds it.
 */
import { uniform } from "../internal/sleep.js";
import type { LeasableProperties } from "./leasable.js";

/**
 * How many handoffs in a row a process may give its own waiters on release before it leaves the
 * next handoff to whoever looks first.
 */
const LOCAL_HANDOFFS_IN_A_ROW = 2;

/** One `acquire()` call waiting in a room. */
interface Waiter {
  /** When it started waiting (`performance.now()`). */
  readonly since: number;
  /** Set by a release in this process: the lock was just freed, look at once. */
  woken: boolean;
  /** Ends the current wait early (a wake, or the waiter became head). */
  nudge: (() => void) | undefined;
}

/** The waiters of one process for one lock. */
export class WaitingRoom {
  readonly #key: unknown;
  readonly #waiters: Waiter[] = [];
  /** Handles of this process that hold the lock now. */
  #holders = 0;
  /** Handoffs in a row this process gave its own waiters on release. */
  #localHandoffs = 0;
  /** A moving average of how long this process's waiters waited, in ms (0 before the first). */
  #typicalWaitInMs = 0;
  /**
   * The lock's record as this process last saw it (ETag and metadata), from any of its locks on
   * the resource: a waiter woken by a release here writes its record `If-Match` it without a look.
   */
  lastSeen: Pick<LeasableProperties, "etag" | "metadata"> | undefined;

  constructor(key: unknown) {
    this.#key = key;
  }

  /** Whether a call arriving now should try at once: nobody of this process waits for it or holds it. */
  get looksFree(): boolean {
    return this.#waiters.length === 0 && this.#holders === 0;
  }

  enter(): Waiter {
    const waiter: Waiter = { since: performance.now(), woken: false, nudge: undefined };
    this.#waiters.push(waiter);
    return waiter;
  }

  /** Whether `waiter` is the one to look now. */
  isHead(waiter: Waiter): boolean {
    return this.#waiters[0] === waiter;
  }

  /**
   * How long `waiter` waits before its next turn: as head, around `pollIntervalInMs` (see the
   * module's description); otherwise the same, to check whether it became head (no request).
   */
  delayFor(waiter: Waiter, pollIntervalInMs: number): number {
    const age = performance.now() - waiter.since;
    const typical = this.#typicalWaitInMs;
    const factor = typical > 0 ? Math.min(1.5, Math.max(0.5, 1.5 - age / typical)) : 1;
    return pollIntervalInMs * factor * uniform(0.75, 1.25);
  }

  /**
   * Waits for `waiter`'s next look: its turn as head (see {@link WaitingRoom.delayFor}), or at once
   * when a release in this process woke it (then resolves `true`). Rejects with the signal's reason
   * when aborted.
   */
  async nextLook(waiter: Waiter, pollIntervalInMs: number, signal: AbortSignal): Promise<boolean> {
    for (;;) {
      if (!waiter.woken) await pause(waiter, this.delayFor(waiter, pollIntervalInMs), signal);
      if (waiter.woken) {
        waiter.woken = false;
        return true;
      }
      if (this.isHead(waiter)) return false;
    }
  }

  /** `waiter` stops waiting: it took the lock (`acquired`; `handedOff`: on a look a release here woke it), or gave up. */
  leave(waiter: Waiter, acquired: boolean, handedOff = false): void {
    const index = this.#waiters.indexOf(waiter);
    if (index < 0) return;
    this.#waiters.splice(index, 1);
    if (acquired) {
      const waited = performance.now() - waiter.since;
      this.#typicalWaitInMs = this.#typicalWaitInMs === 0 ? waited : 0.8 * this.#typicalWaitInMs + 0.2 * waited;
      if (!handedOff) this.#localHandoffs = 0;
    }
    if (index === 0) this.#waiters[0]?.nudge?.(); // the new head looks at its next turn, not later
    this.#dropIfIdle();
  }

  /** A handle of this process took the lock. */
  held(): void {
    this.#holders += 1;
  }

  /** A handle of this process let the lock go; `freed`: it released the lease (the lock is free now). */
  letGo(freed: boolean): void {
    this.#holders = Math.max(0, this.#holders - 1);
    const head = this.#waiters[0];
    if (freed && head && this.#localHandoffs < LOCAL_HANDOFFS_IN_A_ROW) {
      this.#localHandoffs += 1;
      head.woken = true;
      head.nudge?.();
    } else if (freed) {
      this.#localHandoffs = 0;
    }
    this.#dropIfIdle();
  }

  #dropIfIdle(): void {
    if (this.#waiters.length === 0 && this.#holders === 0 && rooms.get(this.#key) === this) rooms.delete(this.#key);
  }
}

/** Sleeps `ms`, or less when the waiter is nudged; rejects with the signal's reason when aborted. */
function pause(waiter: Waiter, ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise((resolve, reject) => {
    const end = (settle: () => void) => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      waiter.nudge = undefined;
      settle();
    };
    const onAbort = () => end(() => reject(signal.reason as Error));
    const timer = setTimeout(() => end(resolve), ms);
    waiter.nudge = () => end(resolve);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

const rooms = new Map<unknown, WaitingRoom>();

/** The room of the lock identified by `key` in this process, if one is open. */
export function openWaitingRoom(key: unknown): WaitingRoom | undefined {
  return rooms.get(key);
}

/** The room of the lock identified by `key` in this process. */
export function waitingRoom(key: unknown): WaitingRoom {
  let room = rooms.get(key);
  if (!room) rooms.set(key, (room = new WaitingRoom(key)));
  return room;
}
