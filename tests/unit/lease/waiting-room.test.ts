/** The waiting room's bookkeeping (src/lease/waiting-room.ts): who looks, who is woken, how often. */
import { afterEach, beforeEach, expect, jest } from "@jest/globals";
import { waitingRoom, type WaitingRoom } from "../../../src/lease/waiting-room.js";

const never = 3_600_000;

describe("waiting room", () => {
  it("only the longest waiting looks; when it leaves, the next does", () => {
    const room = waitingRoom(Symbol("turns"));
    expect(room.looksFree).toBe(true);
    const a = room.enter();
    const b = room.enter();
    expect(room.looksFree).toBe(false);
    expect([room.isHead(a), room.isHead(b)]).toEqual([true, false]);
    room.leave(a, false);
    expect(room.isHead(b)).toBe(true);
    room.leave(b, false);
    expect(room.looksFree).toBe(true);
  });

  it("a holder in the process makes new callers wait without trying", () => {
    const room = waitingRoom(Symbol("held"));
    room.held();
    expect(room.looksFree).toBe(false);
    room.letGo(true);
    expect(room.looksFree).toBe(true);
  });

  /** A waiter joins, a holder of the process releases: whether the release woke it (else it was aborted). */
  async function handOff(room: WaitingRoom): Promise<boolean> {
    const waiter = room.enter();
    const controller = new AbortController();
    const look = room.nextLook(waiter, never, controller.signal);
    room.held();
    room.letGo(true);
    // Not woken: only the abort ends its hour-long wait.
    controller.abort(new Error("not woken"));
    const woken = await look.then(
      (wake) => wake,
      () => false,
    );
    room.leave(waiter, true, woken);
    return woken;
  }

  it("a release wakes the head at once, at most twice in a row; then the next waits for its turn", async () => {
    const room = waitingRoom(Symbol("handoffs"));
    expect([await handOff(room), await handOff(room), await handOff(room)]).toEqual([true, true, false]);
  });

  it("a handoff after the lock went to a look starts the count again", async () => {
    const room = waitingRoom(Symbol("again"));
    expect([await handOff(room), await handOff(room)]).toEqual([true, true]);
    const looked = room.enter();
    room.leave(looked, true, false); // took it on a look of its own
    expect(await handOff(room)).toBe(true);
  });

  it("a fresh lone head looks around 1.5 poll intervals; one waiting far longer than usual looks more often", () => {
    const room = waitingRoom(Symbol("delays"));
    const fresh = room.enter();
    const delay = room.delayFor(fresh, 1000);
    expect(delay).toBeGreaterThanOrEqual(1125);
    expect(delay).toBeLessThanOrEqual(1875);
    Object.assign(fresh, { since: performance.now() - 100 });
    room.leave(fresh, true); // waited 100 ms: the typical wait now
    const old = room.enter();
    Object.assign(old, { since: performance.now() - 10_000 });
    expect(room.delayFor(old, 1000)).toBeLessThanOrEqual(0.5 * 1875);
  });

  it("the process looks more often with more waiters, up to four; each waiter's share stays the same", () => {
    const room = waitingRoom(Symbol("spread"));
    const waiters = Array.from({ length: 8 }, () => room.enter());
    const head = waiters[0]!;
    // Eight waiters: the process looks as often as with four (a quarter of a lone waiter's interval).
    expect(room.delayFor(head, 1000)).toBeGreaterThanOrEqual(1125 / 4);
    expect(room.delayFor(head, 1000)).toBeLessThanOrEqual(1875 / 4);
    for (const w of waiters.slice(2)) room.leave(w, false);
    // Two: half a lone waiter's interval.
    expect(room.delayFor(head, 1000)).toBeGreaterThanOrEqual(1125 / 2);
    expect(room.delayFor(head, 1000)).toBeLessThanOrEqual(1875 / 2);
    room.leave(waiters[1]!, false);
    room.leave(head, false);
  });
});

/**
 * Yielding after a contended hold (on a fake clock): the process that held a lock it had to wait
 * for leaves the freed lock to the other processes' looks for one poll interval.
 */
describe("waiting room: yielding after a contended hold", () => {
  beforeEach(() => void jest.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => void jest.useRealTimers());

  /** A call of this process takes the lock (`sawHeld`: after finding it held elsewhere) and releases it. */
  function holdAndRelease(room: WaitingRoom, sawHeld: boolean, pollIntervalInMs = 500): void {
    const waiter = room.enter();
    waiter.sawHeld = sawHeld;
    room.held();
    room.leave(waiter, true);
    room.letGo(true, pollIntervalInMs);
  }

  // The longest a lone waiter elsewhere goes between looks: 1.5 intervals, 1.5x for a fresh head, 125% jitter.
  const yieldMs = 500 * 1.5 * 1.5 * 1.25;

  it("after a contended hold, a call arriving while it yields waits; after it, tries at once", () => {
    const key = Symbol("yield");
    holdAndRelease(waitingRoom(key), true);
    expect(waitingRoom(key).looksFree).toBe(false);
    jest.advanceTimersByTime(yieldMs - 1);
    expect(waitingRoom(key).looksFree).toBe(false);
    jest.advanceTimersByTime(2);
    expect(waitingRoom(key).looksFree).toBe(true);
  });

  it("a call arriving while its process yields looks only once the yield is up", async () => {
    const room = waitingRoom(Symbol("first look"));
    holdAndRelease(room, true);
    jest.advanceTimersByTime(100);
    const waiter = room.enter();
    let looked = false;
    const look = room.nextLook(waiter, 1, new AbortController().signal).then(() => (looked = true));
    await jest.advanceTimersByTimeAsync(yieldMs - 100 - 2);
    expect(looked).toBe(false);
    await jest.advanceTimersByTimeAsync(10);
    expect(looked).toBe(true);
    await look;
    room.leave(waiter, true);
  });

  it("a hold that took a free lock does not yield (no cost without contention)", () => {
    const room = waitingRoom(Symbol("free"));
    holdAndRelease(room, false);
    expect(room.looksFree).toBe(true);
  });

  it("contention ends: the hold after a yield took a free lock, so its release does not yield", () => {
    const room = waitingRoom(Symbol("ends"));
    holdAndRelease(room, true);
    expect(room.looksFree).toBe(false);
    jest.advanceTimersByTime(yieldMs + 1);
    holdAndRelease(room, false);
    expect(room.looksFree).toBe(true);
  });

  it("a release that wakes a waiter of this process hands off locally instead", async () => {
    const room = waitingRoom(Symbol("local"));
    const holder = room.enter();
    holder.sawHeld = true;
    room.held();
    room.leave(holder, true);
    const next = room.enter();
    const look = room.nextLook(next, never, new AbortController().signal);
    room.letGo(true, 500);
    expect(await look).toBe(true);
    room.leave(next, true, true);
    expect(room.looksFree).toBe(true);
  });

  it("a lock released without freeing the lease (lost, expired) does not yield", () => {
    const room = waitingRoom(Symbol("lost"));
    const waiter = room.enter();
    waiter.sawHeld = true;
    room.held();
    room.leave(waiter, true);
    room.letGo(false, 500);
    expect(room.looksFree).toBe(true);
  });
});
