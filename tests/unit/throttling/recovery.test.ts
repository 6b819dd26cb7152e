/**
 * The limiter's recovery after a capacity drop (issue 26), on a fake clock: one cut per round trip,
 * W remembered from before a burst of cuts, and the bench's drop-to-a-quarter-and-back run as a
 * closed-loop simulation against the throttling model (tests/support/throttling-sim.ts).
 *
 * The defect these reproduce: a second cut soon after the first read a served rate taken while the
 * partition was still paying off the first burst, took the rate to about 1 request per second, and
 * CUBIC's growth derived from that low point kept it under 2 per second for some 30 s after the
 * capacity came back.
 */
import { AdaptiveRateLimiter, throttleScopeOf, type RateLimiterPermit } from "../../../src/index.js";
import { fakeClock } from "../../support/fake-clock.js";
import { simulate, type SimResult } from "../../support/throttling-sim.js";

const scope = throttleScopeOf("https://acct.table.core.windows.net/t(PartitionKey='hot',RowKey='r')");
const partition = scope.partition!;
const busy = { name: "RestError", statusCode: 503, code: "ServerBusy", message: "The server is busy." };
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A limiter on a fake clock; `send` sends `count` requests `gapInMs` apart, each answered after `roundTripInMs`. */
function setUp() {
  const time = fakeClock();
  const limiter = new AdaptiveRateLimiter({}, time.clock);
  const send = async (count: number, gapInMs: number, error?: unknown, roundTripInMs = 0) => {
    for (let i = 0; i < count; i++) {
      let permit: RateLimiterPermit | undefined;
      void limiter.acquire(scope).then((granted) => (permit = granted));
      await settle();
      while (permit === undefined) {
        time.advance(1);
        await settle();
      }
      time.advance(roundTripInMs);
      limiter.record(permit, error);
      time.advance(gapInMs);
    }
  };
  /** Keeps `depth` requests waiting (so the send rate follows the limit), all served, for `ms`. */
  const saturate = async (ms: number, depth = 50) => {
    let waiting = 0;
    for (let t = 0; t < ms; t += 5) {
      for (; waiting < depth; waiting++) {
        void limiter.acquire(scope).then((permit) => {
          limiter.record(permit);
          waiting -= 1;
        });
      }
      time.advance(5);
      await settle();
    }
  };
  return { time, limiter, send, saturate };
}

describe("AdaptiveRateLimiter after a burst of cuts", () => {
  it("grows back to the rate of before the burst, not to the low point a second cut reached", async () => {
    const { limiter, send, saturate, time } = setUp();
    await send(200, 10); // 100 requests per second, served
    await send(1, 0, busy); // the congestion event: cut to about 70
    time.advance(150);
    await send(1, 0, busy); // sent 150 ms after the cut, still throttled: cut again, same event
    const state = limiter.stateOf(partition)!;
    expect(state.cuts).toBe(2);
    expect(state.ratePerSec).toBeLessThan(55);
    // Served from now on: within about one growth time (1 s, a little more from a deeper point)
    // the rate is back near the 100 it was served at before the event.
    await saturate(1_500);
    expect(limiter.stateOf(partition)!.ratePerSec).toBeGreaterThan(90);
  });

  it("does not cut again for a request sent within one round trip of the cut", async () => {
    const { limiter, send, time } = setUp();
    // 100 requests per second, each answered 400 ms after it was sent: the round trip.
    const inFlight: { permit: RateLimiterPermit; answerAt: number }[] = [];
    for (let i = 0; i < 200; i++) {
      inFlight.push({ permit: await limiter.acquire(scope), answerAt: time.clock.monotonic() + 400 });
      time.advance(10);
      while (inFlight.length > 0 && inFlight[0]!.answerAt <= time.clock.monotonic())
        limiter.record(inFlight.shift()!.permit);
    }
    const throttled = await limiter.acquire(scope);
    time.advance(400);
    limiter.record(throttled, busy); // the cut
    expect(limiter.stateOf(partition)!.cuts).toBe(1);
    time.advance(200);
    await send(1, 0, busy, 400); // sent 200 ms after the cut, within the round trip
    expect(limiter.stateOf(partition)!.cuts).toBe(1);
    time.advance(300);
    await send(1, 0, busy, 400); // sent more than a round trip after it: the new rate is too high
    expect(limiter.stateOf(partition)!.cuts).toBe(2);
  });

  it("cuts a new congestion event from what the key was served at, after the last event is over", async () => {
    const { limiter, send, saturate, time } = setUp();
    await send(200, 10);
    await send(1, 0, busy);
    await saturate(2_000); // back at about 100 and probing above
    time.advance(10);
    await send(1, 0, busy); // a new event, more than a growth time later
    const state = limiter.stateOf(partition)!;
    expect(state.cuts).toBe(2);
    expect(state.ratePerSec).toBeGreaterThan(0.7 * 80);
    expect(state.ratePerSec).toBeLessThan(0.7 * 140);
  });
});

describe("the drop-to-a-quarter-and-back run (64 writers, simulated against the throttling model)", () => {
  const capacityPerSec = 20;
  let run: SimResult;
  beforeAll(async () => {
    run = await simulate({
      writers: 64,
      capacity: [
        [0, capacityPerSec],
        [6_000, capacityPerSec / 4],
        [12_000, capacityPerSec],
      ],
      durationInMs: 20_000,
      latencyInMs: 100,
      stepInMs: 2,
    });
  });
  /** Goodput averaged over the samples in (fromMs, toMs]. */
  const goodput = (fromMs: number, toMs: number) => {
    const window = run.samples.filter((s) => s.atMs > fromMs && s.atMs <= toMs);
    return window.reduce((sum, s) => sum + s.goodputPerSec, 0) / window.length;
  };

  it("serves at least 90% of the capacity once learnt, before the drop", () => {
    expect(goodput(2_000, 6_000)).toBeGreaterThanOrEqual(0.9 * capacityPerSec);
  });

  it("follows the drop down within 3 s, without collapsing far below the quarter", () => {
    const after = run.samples.filter((s) => s.atMs > 6_000 && s.atMs <= 12_000);
    const down = after.find((s) => s.ratePerSec <= 1.2 * (capacityPerSec / 4));
    expect(down).toBeDefined();
    expect(down!.atMs - 6_000).toBeLessThanOrEqual(3_000);
    expect(Math.min(...after.map((s) => s.ratePerSec))).toBeGreaterThanOrEqual(0.4 * (capacityPerSec / 4));
  });

  it("is back at 90% of the capacity within 5 s after it returns (the rate and the goodput)", () => {
    const back = run.samples.find((s) => s.atMs > 12_000 && s.ratePerSec >= 0.9 * capacityPerSec);
    expect(back).toBeDefined();
    expect(back!.atMs - 12_000).toBeLessThanOrEqual(5_000);
    const served = run.samples.find((s) => s.atMs >= 13_000 && goodput(s.atMs - 1_000, s.atMs) >= 0.9 * capacityPerSec);
    expect(served).toBeDefined();
    expect(served!.atMs - 1_000 - 12_000).toBeLessThanOrEqual(5_000);
  });

  it("gives up on no operation", () => {
    expect(run.gaveUp).toBe(0);
  });
});
