/**
 * Waiting for a permit, shared by the `acquire()` calls of one process that wait on the same
 * semaphore: what finds a freed slot quickly is how often *someone* looks, not how often each waiter
 * does, so the waiters of a process take turns instead of each polling on its own. The lock's
 * waiting room (`../lease/waiting-room.ts`) is the model; a semaphore adds slots to hand out, and
 * the difference between plenty and scarcity.
 *
 * What the process believes free: the slots its latest look saw free, less those it has taken or
 * been refused since, plus those it freed while others were free too. A belief is only ever a
 * slot to try (the acquire decides), never a decision. While it believes a slot free, permits are
 * plentiful: a call tries one at once, and a release is handed to a waiter of the process. Once it
 * believes none free, permits are scarce, and the rules keep processes fair to each other:
 *
 * - Looks: one look (one listing of every slot) per `pollIntervalInMs` for the whole process,
 *   whatever its number of waiters or of slots, made by the waiter at the head of the room (the
 *   longest waiting). The interval is counted from the room's previous look, so a new head does not
 *   look sooner. Each wait is drawn around the interval, shorter for a head that has waited longer
 *   than this process's waiters usually do and longer for a fresh one: from 0.5x to 1.5x (then
 *   jittered from 75% to 125%), so that across processes the longest waiting heads look most often
 *   and win most free slots, without the process looking more often on average.
 * - Shares: a look that finds several slots free hands one to each of the first waiters, in the
 *   order they came (the head first); each tries its own at once.
 * - Releases: a permit released in this process is handed to the first waiter without a slot in
 *   hand, which tries that slot at once, without a look; when permits are scarce, at most
 *   {@link LOCAL_HANDOFFS_IN_A_ROW} such handoff in a row, and a slot not handed on is left to
 *   whoever looks first (not believed free here), so that a process with several waiters cannot
 *   keep its permits from the other processes' waiters.
 * - Arrivals: a call that finds waiters of its process joins them. One that finds none tries a
 *   slot believed free at once (or, knowing nothing and holding nothing, the slot it held last, or
 *   slot 0); believing none free, or refused, it looks at once if the process has not looked
 *   within the poll interval ({@link SemaphoreRoom.lookDue}), and otherwise waits for its turn.
 *
 * Rooms are keyed by the semaphore (its container's URL and name) and dropped when the last waiter
 * leaves and no permit of the process is held (with what they believed).
 */
import { sleep, uniform } from "../internal/sleep.js";

/** How many permits in a row a process may hand its own waiters on release before leaving the next to whoever looks first. */
const LOCAL_HANDOFFS_IN_A_ROW = 1;

/** A slot handed to a waiter: from a release in this process (`local`) or from a look. */
interface SlotOffer {
  readonly slot: number;
  readonly local: boolean;
}

/** One `acquire()` call waiting in a room. */
interface Waiter {
  /** When it started waiting (`performance.now()`). */
  readonly since: number;
  /** A slot to try at once, when one was handed to it. */
  offer: SlotOffer | undefined;
  /** Ends the current pause early (an offer, or the waiter became head). */
  nudge: (() => void) | undefined;
}

/** The waiters of one process for one semaphore; see the module's description. */
export class SemaphoreRoom {
  readonly #key: string;
  readonly #waiters: Waiter[] = [];
  #holders = 0;
  #localHandoffs = 0;
  /** A moving average of how long this process's waiters waited, in ms (0 before the first). */
  #typicalWaitInMs = 0;
  /** When the room last looked (`performance.now()`); -Infinity before the first look. */
  #lastLookAt = -Infinity;
  /** The slots believed free (see the module's description); `undefined` before the first look. */
  #free: Set<number> | undefined;

  constructor(key: string) {
    this.#key = key;
  }

  /** Whether someone of this process waits for a permit now. */
  get someoneWaits(): boolean {
    return this.#waiters.length > 0;
  }

  /** Whether a permit of this process is held now. */
  get holding(): boolean {
    return this.#holders > 0;
  }

  /** The slots believed free, in no order; `undefined` when the process has not looked yet. */
  get believedFree(): readonly number[] | undefined {
    return this.#free && [...this.#free];
  }

  /** A look saw `free` slots free (every other slot held): what the process believes from now on. */
  saw(free: readonly number[], now = performance.now()): void {
    this.#free = new Set(free);
    this.#lastLookAt = Math.max(this.#lastLookAt, now);
  }

  /** `slot` was taken by this process, or its try was refused: not free any more. */
  notFree(slot: number): void {
    this.#free?.delete(slot);
  }

  enter(now = performance.now()): Waiter {
    const waiter: Waiter = { since: now, offer: undefined, nudge: undefined };
    this.#waiters.push(waiter);
    return waiter;
  }

  isHead(waiter: Waiter): boolean {
    return this.#waiters[0] === waiter;
  }

  /** How long the head waits between two looks, around `pollIntervalInMs` (see the module's description). */
  delayFor(waiter: Waiter, pollIntervalInMs: number, now = performance.now(), random = Math.random): number {
    const age = now - waiter.since;
    // Before any wait of this process ended, the poll interval stands for the usual wait: a head
    // that has waited longer than one interval already looks more often than a fresh one.
    const typical = this.#typicalWaitInMs > 0 ? this.#typicalWaitInMs : pollIntervalInMs;
    const factor = Math.min(1.5, Math.max(0.5, 1.5 - age / typical));
    return pollIntervalInMs * factor * uniform(0.75, 1.25, random);
  }

  /**
   * How long `waiter` should pause before its next turn: 0 when it has an offer, or is head and
   * its look is due (then the look is counted as made now).
   */
  turnIn(waiter: Waiter, pollIntervalInMs: number, now = performance.now()): number {
    if (waiter.offer) return 0;
    const delay = this.delayFor(waiter, pollIntervalInMs, now);
    if (!this.isHead(waiter)) return delay;
    const due = this.#lastLookAt + delay - now;
    if (due > 0) return due;
    this.#lastLookAt = now;
    return 0;
  }

  /**
   * Waits for `waiter`'s next turn: a slot to try at once (an offer), or `"look"` when it is head
   * and its look is due. Rejects with the signal's reason when aborted.
   */
  async next(waiter: Waiter, pollIntervalInMs: number, signal: AbortSignal): Promise<SlotOffer | "look"> {
    for (;;) {
      const pauseInMs = this.turnIn(waiter, pollIntervalInMs);
      if (pauseInMs === 0) return this.takeOffer(waiter) ?? "look";
      await pause(waiter, pauseInMs, signal);
    }
  }

  /** The offer `waiter` holds, taken out of its hands. */
  takeOffer(waiter: Waiter): SlotOffer | undefined {
    const offer = waiter.offer;
    waiter.offer = undefined;
    return offer;
  }

  /** A look out of turn starts now (an arrival's, or one after its first try was refused). */
  looked(now = performance.now()): void {
    this.#lastLookAt = now;
  }

  /**
   * Whether a look out of turn is allowed now: none was made in the last `pollIntervalInMs`, so the
   * process still looks at most once per interval (a call whose first pick was refused looks at
   * once only then; otherwise it waits for its turn like everyone, and does not overtake the
   * longest waiting heads of other processes).
   */
  lookDue(pollIntervalInMs: number, now = performance.now()): boolean {
    return now - this.#lastLookAt >= pollIntervalInMs;
  }

  /**
   * The head's look found `free` slots (in the order to try them): the head keeps the first, and
   * each next waiter without an offer gets one of the others (and is nudged to try it at once).
   */
  share(head: Waiter, free: readonly number[]): number | undefined {
    const [mine, ...rest] = free;
    if (mine !== undefined) this.notFree(mine);
    for (const waiter of this.#waiters) {
      if (rest.length === 0) break;
      if (waiter === head || waiter.offer) continue;
      const slot = rest.shift()!;
      this.notFree(slot); // in hand: not for arrivals to try as well
      waiter.offer = { slot, local: false };
      waiter.nudge?.();
    }
    return mine;
  }

  /** `waiter` stops waiting: it took a permit (`acquired`; `local`: one a release here handed it), or gave up. */
  leave(waiter: Waiter, acquired: boolean, local = false, now = performance.now()): void {
    const index = this.#waiters.indexOf(waiter);
    if (index < 0) return;
    this.#waiters.splice(index, 1);
    if (acquired) {
      const waited = now - waiter.since;
      this.#typicalWaitInMs = this.#typicalWaitInMs === 0 ? waited : 0.8 * this.#typicalWaitInMs + 0.2 * waited;
      if (!local) this.#localHandoffs = 0;
    }
    // An offer it did not use goes to the next waiter without one: the slot may well be free.
    const unused = this.takeOffer(waiter);
    if (unused) this.#offer(unused);
    if (index === 0) this.#waiters[0]?.nudge?.(); // the new head counts its turn from the last look
    this.#dropIfIdle();
  }

  /** A permit of this process was taken. */
  held(): void {
    this.#holders += 1;
  }

  /** A permit of this process ended; `freed`: its release freed `slot` (now free at the service). */
  letGo(slot: number, freed: boolean): void {
    this.#holders = Math.max(0, this.#holders - 1);
    if (freed) {
      const scarce = this.#free !== undefined && this.#free.size === 0;
      const waiter = this.#waiters.find((w) => w.offer === undefined);
      if (waiter && (!scarce || this.#localHandoffs < LOCAL_HANDOFFS_IN_A_ROW)) {
        if (scarce) this.#localHandoffs += 1;
        this.#offer({ slot, local: true });
      } else if (scarce) {
        this.#localHandoffs = 0; // this one is left to whoever looks first
      } else {
        this.#free?.add(slot);
      }
    }
    this.#dropIfIdle();
  }

  /** Hands `offer` to the first waiter without one, and nudges it. */
  #offer(offer: SlotOffer): void {
    const waiter = this.#waiters.find((w) => w.offer === undefined);
    if (!waiter) return;
    waiter.offer = offer;
    waiter.nudge?.();
  }

  #dropIfIdle(): void {
    if (this.#waiters.length === 0 && this.#holders === 0 && rooms.get(this.#key) === this) rooms.delete(this.#key);
  }
}

/** Sleeps `ms`, or less when the waiter is nudged; rejects with the signal's reason when aborted. */
async function pause(waiter: Waiter, ms: number, signal: AbortSignal): Promise<void> {
  const nudged = new AbortController();
  waiter.nudge = () => nudged.abort();
  try {
    await sleep(ms, AbortSignal.any([signal, nudged.signal]));
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    if (!nudged.signal.aborted) throw error;
  } finally {
    waiter.nudge = undefined;
  }
}

const rooms = new Map<string, SemaphoreRoom>();

/** The room of the semaphore identified by `key` in this process, if one is open. */
export function openSemaphoreRoom(key: string): SemaphoreRoom | undefined {
  return rooms.get(key);
}

/** The room of the semaphore identified by `key` in this process. */
export function semaphoreRoom(key: string): SemaphoreRoom {
  let room = rooms.get(key);
  if (!room) rooms.set(key, (room = new SemaphoreRoom(key)));
  return room;
}
