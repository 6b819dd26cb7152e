/**
 * Waiting for a lock, shared by the `acquire()` calls of one process that wait for the same lock:
 * what finds a freed lease quickly is how often *someone* looks, not how often each waiter does, so
 * the waiters of a process take turns instead of each polling on its own.
 *
 * - Looks: made by the waiter at the head of the room (the longest waiting), one look (one HEAD) per
 *   {@link INTERVALS_PER_LOOK} poll intervals per waiter, up to {@link MAX_LOOKS_SPREAD} waiters: a
 *   lone waiter looks every 750 ms by default (1.3 requests a second: less than the anchor's loop,
 *   which tries every 250-1000 ms), two waiters make the process look twice as often, and beyond
 *   four the process's rate stays put. So the fleet's rate of looks grows with the number of
 *   waiters, and finds a freed lock sooner, while each waiter's share stays below the anchor's.
 *   Each wait is drawn around that, shorter for a head that has waited longer than this process's
 *   waiters usually do and longer for a fresh one: from 0.5x to 1.5x (then jittered from 75% to
 *   125%), so that across processes the longest waiting heads look most often and win most
 *   handoffs, without the process looking more often on average.
 * - Releases: a release in this process wakes the head at once; it sends its acquire without a
 *   look, and writes its record on the ETag of the record the releasing lock wrote (`lastSeen`). At most {@link LOCAL_HANDOFFS_IN_A_ROW} such handoffs in a row, so that a process with
 *   several waiters cannot keep the lock from the other processes' waiters.
 * - First tries: a call that finds others of this process waiting, or a holder in this process,
 *   joins the room without trying (the lock is held: a try would be a 409).
 * - Yielding after a contended hold: a process whose holder had to wait for the lock (it saw it
 *   held by someone else) and freed it without a waiter of its own to wake leaves the freed lock to
 *   the other processes' looks for as long as a lone waiter elsewhere can go between two looks
 *   ({@link YIELD_INTERVALS} poll intervals): a call of its own arriving in that time joins the room
 *   and looks only once the time is up, instead of trying at once. Without it, at 2-4 contenders (one
 *   waiter per process) the former holder takes the lock back as soon as it wants it again, and a
 *   waiter elsewhere only wins when its look happens to land in the short gap between the two: its
 *   wait is a lottery of several poll intervals (the longest wait 8-12x the mean, issue 27). With
 *   it, the lock alternates between the processes that want it. It costs nothing without
 *   contention (no hold saw the lock held), and one yield, once, when contention ends (the next
 *   hold took a free lock: it does not yield).
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

/** Each waiter's share of the looks: one per this many poll intervals (see the module's description). */
const INTERVALS_PER_LOOK = 1.5;

/** Beyond this many waiters, more waiters in a process do not make it look more often. */
const MAX_LOOKS_SPREAD = 4;

/**
 * How long a release after a contended hold yields, in poll intervals: the longest a lone waiter
 * in another process goes between two looks (its share, at most 1.5x for a fresh head, jittered up
 * to 125%), so that a waiter elsewhere looks at least once before this process's next call does.
 */
const YIELD_INTERVALS = INTERVALS_PER_LOOK * 1.5 * 1.25;

/** One `acquire()` call waiting in a room. */
interface Waiter {
  /** When it started waiting (`performance.now()`). */
  readonly since: number;
  /** Set by a release in this process: the lock was just freed, look at once. */
  woken: boolean;
  /** Ends the current wait early (a wake, or the waiter became head). */
  nudge: (() => void) | undefined;
  /** It found the lock held by someone else (a look saw it leased, or an acquire was refused). */
  sawHeld: boolean;
}

/** The waiters of one process for one lock. */
export class WaitingRoom {
  readonly #key: unknown;
  readonly #waiters: Waiter[] = [];
  /** Handles of this process that hold the lock now. */
  #holders = 0;
  /** Handoffs in a row this process gave its own waiters on release. */
  #localHandoffs = 0;
  /** The current hold in this process was contended: its release yields (see the module's description). */
  #holdContended = false;
  /** Until when (`performance.now()`) a call arriving in this process yields the freed lock to others. */
  #yieldUntil = 0;
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

  /**
   * Whether a call arriving now should try at once: nobody of this process waits for it or holds
   * it, and this process is not yielding a lock it just freed after a contended hold.
   */
  get looksFree(): boolean {
    return this.#waiters.length === 0 && this.#holders === 0 && performance.now() >= this.#yieldUntil;
  }

  enter(): Waiter {
    const waiter: Waiter = { since: performance.now(), woken: false, nudge: undefined, sawHeld: false };
    this.#waiters.push(waiter);
    return waiter;
  }

  /** Whether `waiter` is the one to look now. */
  isHead(waiter: Waiter): boolean {
    return this.#waiters[0] === waiter;
  }

  /**
   * How long `waiter` waits before its next turn: as head, around its share of the looks (see the
   * module's description); otherwise the same, to check whether it became head (no request).
   */
  delayFor(waiter: Waiter, pollIntervalInMs: number): number {
    const age = performance.now() - waiter.since;
    const typical = this.#typicalWaitInMs;
    const factor = typical > 0 ? Math.min(1.5, Math.max(0.5, 1.5 - age / typical)) : 1;
    const spread = Math.max(1, Math.min(MAX_LOOKS_SPREAD, this.#waiters.length));
    return ((pollIntervalInMs * INTERVALS_PER_LOOK) / spread) * factor * uniform(0.75, 1.25);
  }

  /**
   * Waits for `waiter`'s next look: its turn as head (see {@link WaitingRoom.delayFor}), or at once
   * when a release in this process woke it (then resolves `true`). Rejects with the signal's reason
   * when aborted.
   */
  async nextLook(waiter: Waiter, pollIntervalInMs: number, signal: AbortSignal): Promise<boolean> {
    for (;;) {
      // While this process yields a lock it freed (see the module's description), not before it is up.
      const delay = Math.max(this.delayFor(waiter, pollIntervalInMs), this.#yieldUntil - performance.now());
      if (!waiter.woken) await pause(waiter, delay, signal);
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
      this.#holdContended = waiter.sawHeld;
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

  /**
   * A handle of this process let the lock go; `freed`: it released the lease (the lock is free now).
   * `pollIntervalInMs`: the lock's, from which a release after a contended hold yields.
   */
  letGo(freed: boolean, pollIntervalInMs = 0): void {
    this.#holders = Math.max(0, this.#holders - 1);
    const contended = this.#holdContended;
    this.#holdContended = false;
    const head = this.#waiters[0];
    if (freed && head && this.#localHandoffs < LOCAL_HANDOFFS_IN_A_ROW) {
      this.#localHandoffs += 1;
      head.woken = true;
      head.nudge?.();
    } else if (freed) {
      this.#localHandoffs = 0;
      if (contended && !head) this.#yieldUntil = performance.now() + YIELD_INTERVALS * pollIntervalInMs;
    }
    this.#dropIfIdle();
  }

  #dropIfIdle(): void {
    if (this.#waiters.length > 0 || this.#holders > 0 || rooms.get(this.#key) !== this) return;
    const yieldingForMs = this.#yieldUntil - performance.now();
    if (yieldingForMs <= 0) rooms.delete(this.#key);
    // Kept while it yields (a call arriving then must find it); dropped after, if still idle.
    else setTimeout(() => this.#dropIfIdle(), yieldingForMs + 1).unref?.();
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
