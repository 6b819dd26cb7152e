/**
 * The adaptive limiter's arithmetic on a fake clock: unlimited until the first throttle, the cut
 * (once per round trip), the CUBIC growth back, FIFO waits, aborts, idle keys forgotten.
 */
import {
  AdaptiveRateLimiter,
  throttleScopeOf,
  type RateLimiterPermit,
  type ThrottleScope,
} from "../../../src/index.js";
import { rateAfterCut, rateSinceCut } from "../../../src/throttling/cubic.js";
import { fakeClock } from "../../support/fake-clock.js";

const scope: ThrottleScope = throttleScopeOf("https://acct.table.core.windows.net/t(PartitionKey='hot',RowKey='r')");
const partition = scope.partition!;
const busy = { name: "RestError", statusCode: 503, code: "ServerBusy", message: "The server is busy." };

/** A limiter on a fake clock, and a way to send `count` requests `gapInMs` apart (each served). */
function setUp(options: ConstructorParameters<typeof AdaptiveRateLimiter>[0] = {}) {
  const time = fakeClock();
  const limiter = new AdaptiveRateLimiter(options, time.clock);
  const send = async (count: number, gapInMs: number, error?: unknown) => {
    for (let i = 0; i < count; i++) {
      let permit: RateLimiterPermit | undefined;
      void limiter.acquire(scope).then((granted) => (permit = granted));
      await settle();
      while (permit === undefined) {
        time.advance(1); // the token's timer, when the key is limited
        await settle();
      }
      limiter.record(permit, error);
      time.advance(gapInMs);
    }
  };
  return { time, limiter, send };
}

/** Lets the promises resolved by fired timers run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("CUBIC curve", () => {
  const curve = { decreaseFactor: 0.7, growthTimeInSec: 1 };
  it("cuts to β·W, is back at W after K seconds, and probes above it after", () => {
    expect(rateAfterCut(100, curve)).toBeCloseTo(70);
    expect(rateSinceCut(100, 0, curve)).toBeCloseTo(70);
    expect(rateSinceCut(100, 0.5, curve)).toBeCloseTo(100 * (1 - 0.3 * 0.125)); // concave: 96.25
    expect(rateSinceCut(100, 1, curve)).toBeCloseTo(100);
    expect(rateSinceCut(100, 2, curve)).toBeCloseTo(130);
    // Four times W is found in K·(1 + ∛(3/0.3)) ≈ 3.15 K.
    expect(rateSinceCut(100, 1 + Math.cbrt(10), curve)).toBeCloseTo(400);
  });

  it("is scale-free: the same times for a partition of 50/s and one of 2,000/s", () => {
    expect(rateSinceCut(50, 0.7, curve) / 50).toBeCloseTo(rateSinceCut(2000, 0.7, curve) / 2000);
  });
});

describe("AdaptiveRateLimiter", () => {
  it("lets a key's requests out at once until the service throttles it, with no timer", async () => {
    const { limiter, send, time } = setUp();
    await send(50, 10);
    expect(limiter.stateOf(partition)).toMatchObject({ limited: false, ratePerSec: Infinity, waiting: 0, cuts: 0 });
    expect(limiter.stateOf(partition)!.measuredPerSec).toBeCloseTo(100, -1);
    expect(time.pending()).toBe(0);
  });

  it("cuts the rate to β times the measured send rate on the first throttle", async () => {
    const { limiter, send } = setUp();
    await send(200, 10); // 100 requests per second for 2 s
    await send(1, 10, busy);
    const state = limiter.stateOf(partition)!;
    expect(state.limited).toBe(true);
    expect(state.cuts).toBe(1);
    expect(state.ratePerSec).toBeGreaterThan(0.7 * 90);
    expect(state.ratePerSec).toBeLessThan(0.7 * 110);
  });

  it("cuts once per round trip: answers to requests sent before the cut do not cut again", async () => {
    const { limiter, send, time } = setUp();
    await send(100, 10);
    // 20 requests in flight, all answered 503 after the first cut.
    const inFlight = await Promise.all(Array.from({ length: 20 }, () => limiter.acquire(scope)));
    time.advance(5);
    for (const permit of inFlight) limiter.record(permit, busy);
    expect(limiter.stateOf(partition)!.cuts).toBe(1);
    const rateAfterFirst = limiter.stateOf(partition)!.ratePerSec;
    // A request sent after the cut and throttled again does cut again.
    time.advance(200);
    const later = await limiter.acquire(scope);
    limiter.record(later, busy);
    expect(limiter.stateOf(partition)!.cuts).toBe(2);
    expect(limiter.stateOf(partition)!.ratePerSec).toBeLessThan(rateAfterFirst);
  });

  it("cuts from what the partition served, not from a flood sent at ten times that", async () => {
    const { limiter, send, time } = setUp();
    await send(100, 10); // 100/s, all served
    // A flood: 200 requests in 100 ms, answered later.
    const flood = await Promise.all(Array.from({ length: 200 }, () => limiter.acquire(scope)));
    time.advance(100);
    limiter.record(flood[0]!, busy);
    const rate = limiter.stateOf(partition)!.ratePerSec;
    expect(rate).toBeGreaterThan(0.7 * 80);
    expect(rate).toBeLessThan(0.7 * 120);
  });

  it("does not cut again for requests sent within a tenth of the growth time after a cut", async () => {
    const { limiter, send, time } = setUp({ growthTimeInMs: 1000 });
    await send(100, 10);
    await send(1, 0, busy);
    await send(1, 50, busy); // sent 0 ms after the cut: the partition still works off the excess
    time.advance(100);
    await send(1, 0, busy); // sent 150 ms after it
    expect(limiter.stateOf(partition)!.cuts).toBe(2);
  });

  it("grows a slow key back over growthRequests requests rather than over growthTimeInMs", async () => {
    const { limiter, send, time } = setUp({ growthTimeInMs: 1000, growthRequests: 50 });
    await send(25, 200); // 5 requests per second
    await send(1, 0, busy);
    const cutTo = limiter.stateOf(partition)!.ratePerSec;
    time.advance(2_000); // two growth times: a fast key would be past its old rate by now
    await send(1, 0);
    expect(limiter.stateOf(partition)!.ratePerSec).toBeLessThan(cutTo / 0.7);
  });

  it("grows back along the curve while served, up to the rate it was cut from after K", async () => {
    const { limiter, send, time } = setUp({ growthTimeInMs: 1000 });
    await send(100, 10); // 100/s
    await send(1, 0, busy);
    const cutTo = limiter.stateOf(partition)!.ratePerSec;
    // Keep 50 requests waiting, so that the measured rate follows the limit, for 1.2 s.
    let waiting = 0;
    for (let t = 0; t < 1200; t += 5) {
      for (; waiting < 50; waiting++) {
        void limiter.acquire(scope).then((permit) => {
          limiter.record(permit);
          waiting -= 1;
        });
      }
      time.advance(5);
      await settle();
    }
    const after = limiter.stateOf(partition)!;
    expect(after.ratePerSec).toBeGreaterThan(cutTo);
    expect(after.ratePerSec).toBeGreaterThan(0.95 * (cutTo / 0.7));
  });

  it("never grows past twice the measured send rate (a key used slowly learns nothing about fast)", async () => {
    const { limiter, send } = setUp({ growthTimeInMs: 100 });
    await send(50, 100); // 10 requests per second
    await send(1, 0, busy);
    await send(300, 100); // 10 requests per second for 30 s more, all served
    expect(limiter.stateOf(partition)!.ratePerSec).toBeLessThanOrEqual(2 * 10 * 1.2);
  });

  it("hands out tokens first come first served, at the key's rate", async () => {
    const { limiter, send, time } = setUp({ burstInMs: 0 });
    await send(20, 100); // 10/s
    await send(1, 0, busy); // limited at 7/s
    const rate = limiter.stateOf(partition)!.ratePerSec;
    const order: number[] = [];
    const waiting = Array.from({ length: 5 }, (_, i) => limiter.acquire(scope).then(() => order.push(i)));
    expect(limiter.stateOf(partition)!.waiting).toBeGreaterThan(0);
    for (let t = 0; t < 6 * (1000 / rate); t += 10) {
      time.advance(10);
      await settle();
    }
    await Promise.all(waiting);
    expect(order).toEqual([0, 1, 2, 3, 4]);
    expect(time.pending()).toBe(0); // no waiter, no timer
  });

  it("stops a wait when its signal aborts, with the signal's reason, and frees the slot", async () => {
    const { limiter, send, time } = setUp({ burstInMs: 0 });
    await send(20, 100);
    await send(1, 0, busy);
    const controller = new AbortController();
    const first = limiter.acquire(scope, { abortSignal: controller.signal });
    const reason = new Error("stop waiting");
    controller.abort(reason);
    await expect(first).rejects.toBe(reason);
    expect(limiter.stateOf(partition)!.waiting).toBe(0);
    expect(time.pending()).toBe(0);
    await expect(limiter.acquire(scope, { abortSignal: AbortSignal.abort(reason) })).rejects.toBe(reason);
  });

  it("cuts the account's key on an account-level 503, and leaves the partition's alone", async () => {
    const { limiter, send } = setUp();
    await send(50, 10);
    await send(1, 0, { ...busy, message: "Operations per second is over the account limit." });
    expect(limiter.stateOf(scope.account)!.limited).toBe(true);
    expect(limiter.stateOf(partition)!.limited).toBe(false);
  });

  it("reads 500 OperationTimedOut as throttling, and no answer or 500 InternalError as nothing", async () => {
    const { limiter, send } = setUp();
    await send(50, 10, Object.assign(new Error("reset"), { code: "ECONNRESET" }));
    await send(1, 0, { name: "RestError", statusCode: 500, code: "InternalError", message: "x" });
    expect(limiter.stateOf(partition)!.limited).toBe(false);
    await send(1, 0, { name: "RestError", statusCode: 500, code: "OperationTimedOut", message: "x" });
    expect(limiter.stateOf(partition)!.limited).toBe(true);
  });

  it("forgets a key idle past idleTimeoutInMs, and keeps at most maxKeys keys", async () => {
    const { limiter, send, time } = setUp({ idleTimeoutInMs: 5_000, maxKeys: 3 });
    await send(50, 10);
    await send(1, 0, busy);
    time.advance(6_000);
    const permit = await limiter.acquire(scope); // starts afresh: unlimited
    limiter.record(permit);
    expect(limiter.stateOf(partition)!.limited).toBe(false);
    for (let i = 0; i < 10; i++) await limiter.acquire({ account: "account:a", partition: `blob:a/c/${i}` });
    expect(limiter.size).toBeLessThanOrEqual(3);
  });

  it("runs a call: waits, sends, learns, and passes the call's answer or error through", async () => {
    const { limiter } = setUp();
    await expect(limiter.run(scope, async () => 42)).resolves.toBe(42);
    await expect(limiter.run(scope, async () => Promise.reject(busy))).rejects.toBe(busy);
    expect(limiter.stateOf(partition)!.cuts).toBe(1);
  });

  it("rejects bad options and arguments with errors naming them", async () => {
    expect(() => new AdaptiveRateLimiter({ decreaseFactor: 1 })).toThrow(
      /`decreaseFactor` must be between 0.1 and 0.95/,
    );
    expect(() => new AdaptiveRateLimiter({ growthTimeInMs: 5 })).toThrow(/`growthTimeInMs`/);
    expect(() => new AdaptiveRateLimiter({ maxKeys: 0.5 })).toThrow(/`maxKeys` must be a whole number/);
    expect(() => new AdaptiveRateLimiter({ name: "" })).toThrow(/`name`/);
    const limiter = new AdaptiveRateLimiter();
    await expect(limiter.acquire("account:a" as never)).rejects.toThrow(/throttleScopeOf/);
    await expect(limiter.run(scope, "nope" as never)).rejects.toThrow(/`call` must be a function/);
  });
});
