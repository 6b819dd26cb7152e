/**
 * The local expiry guard, as pure logic: over an in-memory leasable whose renewals never answer
 * (the situation the guard exists for), and over a fake clock. Claims: the handle gives the lock up
 * at its deadline even when the timer fires early, when the event loop was blocked past it, and
 * when the machine was suspended (the monotonic clock stood still while the wall clock moved on).
 */
import { afterEach, expect, jest } from "@jest/globals";
import { isLeaseLostError, LeaseLock, type Leasable } from "../../../src/lease/index.js";
import { ExpiryGuard } from "../../../src/lease/guard.js";
import { fakeClock } from "../../support/fake-clock.js";

/** A leasable in memory: acquires and writes succeed at once; renewals never answer (and ignore their signal). */
function hangingRenewals(): Leasable & { renewals: number } {
  const leasable = {
    description: "blob 'memory/lock'",
    finiteDurations: true,
    renewals: 0,
    acquire: () => Promise.resolve(),
    renew: () => {
      leasable.renewals += 1;
      return new Promise<void>(() => undefined);
    },
    release: () => Promise.resolve(),
    change: () => Promise.resolve(),
    breakLease: () => Promise.resolve(0),
    getProperties: () =>
      Promise.resolve({
        state: "available" as const,
        durationType: undefined,
        metadata: {},
        etag: '"e"',
        lastModified: undefined,
      }),
    setMetadata: () => Promise.resolve(),
    conditionalMetadataWrites: true,
  };
  return leasable;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

afterEach(() => {
  jest.restoreAllMocks();
});

describe("the lock's expiry guard", () => {
  it("a guard timer that fires before performance.now() reaches the deadline is armed again", async () => {
    // Guard 1000 ms after the acquire; the renewal at 900 ms hangs, is abandoned at its time limit
    // (half the 100 ms left) and tried again no sooner than 1030 ms: between 1000 and 1030 only the
    // guard's own timer can give the lock up.
    const lock = new LeaseLock(hangingRenewals(), {
      durationInSeconds: 15,
      safetyMarginInMs: 14_000,
      renewIntervalInMs: 900,
    });
    const handle = await lock.acquire();
    let lostBy: unknown;
    handle.signal.addEventListener("abort", () => (lostBy = handle.signal.reason as unknown));
    // libuv's timers run on a whole-millisecond clock and may fire up to ~2 ms before
    // performance.now() reaches the deadline; make that 5 ms by letting both clocks lag behind.
    const now = performance.now.bind(performance);
    const wallNow = Date.now.bind(Date);
    jest.spyOn(performance, "now").mockImplementation(() => now() - 5);
    jest.spyOn(Date, "now").mockImplementation(() => wallNow() - 5);
    await sleep(1020);
    expect(isLeaseLostError(lostBy)).toBe(true);
    expect(lostBy).toMatchObject({ reason: "expiry-guard" });
    await handle.release();
  });

  it("after a blocked event loop, signal.aborted says lost before any timer had a turn", async () => {
    const lock = new LeaseLock(hangingRenewals(), {
      durationInSeconds: 15,
      safetyMarginInMs: 14_700,
      renewIntervalInMs: 200,
    });
    const handle = await lock.acquire();
    const kept = handle.signal; // code under the lock keeps the signal, and reads it later
    const until = performance.now() + 400;
    while (performance.now() < until) {
      // a blocked event loop: a long synchronous computation, a GC pause
    }
    expect(kept.aborted).toBe(true);
    expect(kept.reason).toMatchObject({ name: "LeaseLostError", reason: "expiry-guard" });
    expect(handle.status).toBe("lost");
    await handle.release();
  });

  it("after a suspend (the wall clock moved on, performance.now() did not), the lock is given up", async () => {
    const lock = new LeaseLock(hangingRenewals(), { durationInSeconds: 15 });
    const handle = await lock.acquire();
    expect(handle.status).toBe("held");
    const wall = Date.now();
    jest.spyOn(Date, "now").mockImplementation(() => wall + 60_000); // slept for a minute
    expect(handle.signal.aborted).toBe(true);
    expect(handle.status).toBe("lost");
    expect(handle.signal.reason).toMatchObject({ reason: "expiry-guard" });
    expect((handle.signal.reason as Error).message).toMatch(/suspended/);
    expect(() => handle.assertHeld()).toThrow(expect.objectContaining({ code: "LockNotHeld" }));
    await handle.release();
  });
});

describe("ExpiryGuard", () => {
  it("fires once at its deadline; a timer that fires early is armed again for the rest", () => {
    const time = fakeClock();
    const expiries: string[] = [];
    new ExpiryGuard(1000, { monotonic: 1000, wall: time.clock.wall() }, (e) => expiries.push(e), time.clock);
    time.advance(999, 2); // the timer fires 2 ms early: nothing yet, but armed again
    expect(expiries).toEqual([]);
    expect(time.pending()).toBe(1);
    time.advance(1);
    expect(expiries).toEqual(["monotonic"]);
    time.advance(5_000);
    expect(expiries).toEqual(["monotonic"]);
    expect(time.pending()).toBe(0);
  });

  it("a successful renewal moves the deadline on, never back", () => {
    const time = fakeClock();
    const expiries: string[] = [];
    const guard = new ExpiryGuard(
      1000,
      { monotonic: 1000, wall: time.clock.wall() },
      (e) => expiries.push(e),
      time.clock,
    );
    time.advance(500);
    guard.extend({ monotonic: 1400, wall: time.clock.wall() - 100 }); // sent 100 ms ago: deadline 2400
    guard.extend({ monotonic: 1100, wall: time.clock.wall() - 400 }); // an older one answering late: no change
    expect(guard.timeLeftInMs()).toBe(900);
    time.advance(899);
    expect(expiries).toEqual([]);
    time.advance(1);
    expect(expiries).toEqual(["monotonic"]);
  });

  it("a suspend (wall clock only) is seen by the next check, and the time left is the stricter clock's", () => {
    const time = fakeClock();
    const expiries: string[] = [];
    const guard = new ExpiryGuard(
      10_000,
      { monotonic: 1000, wall: time.clock.wall() },
      (e) => expiries.push(e),
      time.clock,
    );
    time.advance(2_000);
    time.suspend(5_000);
    expect(guard.timeLeftInMs()).toBe(3_000);
    expect(guard.check()).toBe(false);
    time.suspend(5_000);
    expect(guard.timeLeftInMs()).toBe(0);
    expect(guard.check()).toBe(true);
    expect(expiries).toEqual(["wall"]);
    expect(guard.check()).toBe(true);
    expect(expiries).toEqual(["wall"]);
  });
});
