/**
 * The semaphore's waiting room (src/semaphore/waiting-room.ts), on explicit clock readings: who
 * looks and when, how often a process looks whatever its number of waiters, who gets the slots a
 * look found and a release freed, and how many handoffs a process may keep to itself.
 */
import { expect } from "@jest/globals";
import { semaphoreRoom, type SemaphoreRoom } from "../../../src/semaphore/waiting-room.js";

const POLL = 500;
let serial = 0;
const room = (): SemaphoreRoom => semaphoreRoom(`test-${(serial += 1)}`);
/** The middle of the jitter: delays are exactly the interval times the age factor. */
const middle = () => 0.5;

describe("semaphore waiting room", () => {
  it("only the head looks, at most once per poll interval for the process, whatever its number of waiters", () => {
    const r = room();
    const waiters = Array.from({ length: 5 }, () => r.enter(0));
    // The first look is due at once; the next one only after the interval (here 1x: no history yet).
    expect(r.turnIn(waiters[0]!, POLL, 0)).toBe(0);
    expect(r.turnIn(waiters[0]!, POLL, 100)).toBeGreaterThan(0);
    for (const waiter of waiters.slice(1)) expect(r.turnIn(waiter, POLL, 100)).toBeGreaterThan(0);
    let looks = 1;
    for (let now = 0; now <= 10_000; now += 10) if (r.turnIn(waiters[0]!, POLL, now) === 0) looks += 1;
    // About one look per 0.5 x interval at most (the head ages), never one per waiter.
    expect(looks).toBeLessThanOrEqual(10_000 / (0.5 * 0.75 * POLL) + 1);
    expect(looks).toBeGreaterThanOrEqual(10_000 / (1.5 * 1.25 * POLL));
  });

  it("a head that has waited longer than usual looks more often than a fresh one (0.5x to 1.5x the interval)", () => {
    const r = room();
    const fresh = r.enter(1_000);
    expect(r.delayFor(fresh, POLL, 1_000, middle)).toBe(1.5 * POLL);
    // No wait has ended yet: the interval stands for the usual wait.
    expect(r.delayFor(fresh, POLL, 1_000 + POLL, middle)).toBe(0.5 * POLL);
    r.leave(fresh, true, false, 1_000 + 2_000); // this process's waits take about 2 s
    const next = r.enter(10_000);
    expect(r.delayFor(next, POLL, 10_000, middle)).toBe(1.5 * POLL);
    expect(r.delayFor(next, POLL, 11_000, middle)).toBe(1.0 * POLL);
    expect(r.delayFor(next, POLL, 14_000, middle)).toBe(0.5 * POLL);
  });

  it("a look's free slots go to the head and then, one each, to the next waiters in the order they came", () => {
    const r = room();
    const [a, b, c] = [r.enter(0), r.enter(1), r.enter(2)];
    const nudged: string[] = [];
    b.nudge = () => nudged.push("b");
    c.nudge = () => nudged.push("c");
    expect(r.share(a, [3, 1])).toBe(3);
    expect(r.takeOffer(b)).toEqual({ slot: 1, local: false });
    expect(c.offer).toBeUndefined();
    expect(nudged).toEqual(["b"]);
    expect(r.share(a, [])).toBeUndefined();
  });

  it("when permits are scarce, a release hands its slot to a waiter of the process once in a row; then it is left to the looks", () => {
    const r = room();
    r.saw([]); // the latest look saw every slot held
    const handOff = (slot: number) => {
      const waiter = r.enter();
      r.held();
      r.letGo(slot, true);
      const offer = r.takeOffer(waiter);
      r.leave(waiter, offer !== undefined, offer?.local ?? false);
      return offer?.slot;
    };
    expect([handOff(0), handOff(1), handOff(0), handOff(1)]).toEqual([0, undefined, 0, undefined]);
    expect(r.believedFree).toEqual([]); // a slot left to the looks is not believed free here
    // A permit taken on a look of its own starts the count again.
    expect(handOff(0)).toBe(0);
    const looked = r.enter();
    r.leave(looked, true, false);
    expect(handOff(1)).toBe(1);
  });

  it("when permits are plentiful, every release goes to a waiter, or is believed free for the next arrival", () => {
    const r = room();
    r.saw([3]);
    const handOff = (slot: number) => {
      const waiter = r.enter();
      r.held();
      r.letGo(slot, true);
      const offer = r.takeOffer(waiter);
      r.leave(waiter, offer !== undefined, offer?.local ?? false);
      return offer?.slot;
    };
    expect([handOff(0), handOff(1), handOff(0)]).toEqual([0, 1, 0]);
    r.held();
    r.letGo(1, true); // nobody waits
    expect([...(r.believedFree ?? [])].sort()).toEqual([1, 3]);
    r.notFree(3); // taken (or refused) since
    expect(r.believedFree).toEqual([1]);
  });

  it("before its first look the process believes nothing; a look's share is not believed free any more", () => {
    const r = room();
    expect(r.believedFree).toBeUndefined();
    const [a, b] = [r.enter(), r.enter()];
    r.saw([0, 1, 2]);
    expect(r.share(a, [2, 0])).toBe(2);
    expect(b.offer).toEqual({ slot: 0, local: false });
    expect(r.believedFree).toEqual([1]);
  });

  it("a lost permit hands nothing on; an offer left unused goes to the next waiter", () => {
    const r = room();
    const [a, b] = [r.enter(), r.enter()];
    r.held();
    r.letGo(2, false);
    expect(a.offer).toBeUndefined();
    r.held();
    r.letGo(2, true); // nothing believed yet: not scarce, handed on
    expect(a.offer).toEqual({ slot: 2, local: true });
    r.leave(a, false); // gave up (aborted) with the offer in hand
    expect(b.offer).toEqual({ slot: 2, local: true });
  });

  it("knows whether the process waits or holds; the room is dropped when idle", () => {
    const key = `idle-${(serial += 1)}`;
    const r = semaphoreRoom(key);
    expect([r.someoneWaits, r.holding]).toEqual([false, false]);
    r.held();
    expect(r.holding).toBe(true);
    r.letGo(0, true);
    const w = r.enter();
    expect([r.someoneWaits, r.holding]).toEqual([true, false]);
    r.leave(w, false);
    expect(semaphoreRoom(key)).not.toBe(r); // dropped, a new one now
  });

  it("a look out of turn is allowed only when the process has not looked within the interval", () => {
    const r = room();
    expect(r.lookDue(POLL, 0)).toBe(true);
    r.looked(0);
    expect(r.lookDue(POLL, POLL - 1)).toBe(false);
    expect(r.lookDue(POLL, POLL)).toBe(true);
    const head = r.enter(0);
    expect(r.turnIn(head, POLL, 10)).toBeGreaterThan(0); // the out-of-turn look counts for the head too
  });

  it("next() resolves with an offer at once, and rejects with the signal's reason when aborted", async () => {
    const r = room();
    const [a, b] = [r.enter(), r.enter()];
    const controller = new AbortController();
    const waiting = r.next(b, 3_600_000, controller.signal);
    r.held();
    r.letGo(4, true); // a has no offer: it gets this one
    expect(a.offer).toEqual({ slot: 4, local: true });
    r.leave(a, false); // ...and passes it on: b is nudged out of its hour-long pause
    await expect(waiting).resolves.toEqual({ slot: 4, local: true });
    const reason = new Error("stop");
    r.looked(); // b is head now: its next look is an interval away
    const stopped = r.next(b, 3_600_000, controller.signal);
    controller.abort(reason);
    await expect(stopped).rejects.toBe(reason);
    r.leave(b, false);
  });
});
