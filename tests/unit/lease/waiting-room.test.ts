/** The waiting room's bookkeeping (src/lease/waiting-room.ts): who looks, who is woken, how often. */
import { expect } from "@jest/globals";
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

  it("a fresh head looks around the poll interval; one waiting far longer than usual looks more often", () => {
    const room = waitingRoom(Symbol("delays"));
    const fresh = room.enter();
    const delay = room.delayFor(fresh, 1000);
    expect(delay).toBeGreaterThanOrEqual(750);
    expect(delay).toBeLessThanOrEqual(1250);
    Object.assign(fresh, { since: performance.now() - 100 });
    room.leave(fresh, true); // waited 100 ms: the typical wait now
    const old = room.enter();
    Object.assign(old, { since: performance.now() - 10_000 });
    expect(room.delayFor(old, 1000)).toBeLessThanOrEqual(0.5 * 1250);
  });
});
