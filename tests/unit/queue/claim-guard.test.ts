/**
 * The local expiry guard of an idempotency claim (issue 21, defect 2), as pure logic on a fake
 * clock: the deadline counts from the *send* of the claim or of an extension known to have landed;
 * an extension that fails or hangs moves nothing, and one that lands after others whose outcome
 * was unknown moves the deadline only from the earliest of them; `idempotent()`'s held claim is
 * extended on schedule, given up at the deadline (its extension in flight abandoned), refuses its
 * done mark from then on, and sees a suspend by the wall clock.
 */
import type { IdempotencyClaim, IdempotencyStore } from "../../../src/idempotency/index.js";
import { ClaimGuard, safetyMarginInMs } from "../../../src/idempotency/claim-guard.js";
import { StoreCalls } from "../../../src/idempotency/store-calls.js";
import { IdempotencyClaimLostError } from "../../../src/idempotency/errors.js";
import { HeldClaim } from "../../../src/idempotency/held-claim.js";
import { fakeClock } from "../../support/fake-clock.js";

/** A claim of 1000 ms: margin 250 ms, so the deadline is 750 ms after the send it counts from. */
const DURATION_IN_MS = 1_000;

describe("ClaimGuard", () => {
  it("has a margin of 1 s, at most a quarter of the duration", () => {
    expect(safetyMarginInMs(30_000)).toBe(1_000);
    expect(safetyMarginInMs(4_000)).toBe(1_000);
    expect(safetyMarginInMs(2_000)).toBe(500);
    expect(safetyMarginInMs(1_000)).toBe(250);
  });

  it("gives the claim up its duration less the margin after the claim was sent, when no extension lands", () => {
    const time = fakeClock();
    const expiries: string[] = [];
    const sent = { monotonic: time.clock.monotonic(), wall: time.clock.wall() };
    time.advance(100); // the claim's answer came 100 ms after it was sent: that does not count
    const guard = new ClaimGuard(DURATION_IN_MS, sent, (e) => expiries.push(e), time.clock);
    time.advance(300);
    guard.extending(); // sent at 400, and never answered
    time.advance(349);
    expect(expiries).toEqual([]);
    expect(guard.timeLeftInMs()).toBe(1);
    time.advance(1);
    expect(expiries).toEqual(["monotonic"]);
    expect(guard.check()).toBe(true);
  });

  it("moves the deadline from the earliest extension sent since the last one known to have landed", () => {
    const time = fakeClock();
    const expiries: string[] = [];
    const guard = new ClaimGuard(
      DURATION_IN_MS,
      { monotonic: time.clock.monotonic(), wall: time.clock.wall() },
      (e) => expiries.push(e),
      time.clock,
    );
    time.advance(300);
    guard.extending(); // at 300: its outcome stays unknown (it may have landed: the record may carry its expiry)
    time.advance(200);
    guard.extending(); // at 500: lands
    guard.extended();
    expect(guard.timeLeftInMs()).toBe(300 + 750 - 500);
    time.advance(100);
    guard.extending(); // at 600: lands; nothing unknown before it any more
    guard.extended();
    expect(guard.timeLeftInMs()).toBe(750);
    guard.extended(); // nothing sent since: no change
    expect(guard.timeLeftInMs()).toBe(750);
    time.advance(750);
    expect(expiries).toEqual(["monotonic"]);
  });

  it("sees a suspend: the wall clock moved on while the monotonic clock stood still", () => {
    const time = fakeClock();
    const expiries: string[] = [];
    const guard = new ClaimGuard(
      DURATION_IN_MS,
      { monotonic: time.clock.monotonic(), wall: time.clock.wall() },
      (e) => expiries.push(e),
      time.clock,
    );
    time.suspend(800);
    expect(guard.check()).toBe(true);
    expect(expiries).toEqual(["wall"]);
  });
});

/** A store whose extensions and done marks the test answers, one by one. */
function scriptedStore() {
  const extensions: {
    claim: IdempotencyClaim;
    signal: AbortSignal | undefined;
    answer: (etag: string) => void;
    fail: (error: unknown) => void;
  }[] = [];
  const completed: IdempotencyClaim[] = [];
  const store: IdempotencyStore = {
    name: "scripted",
    claim: () => Promise.reject(new Error("not used")),
    release: () => Promise.resolve(),
    extend: (claim, _ttlInMs, options) =>
      new Promise((resolve, reject) =>
        extensions.push({
          claim,
          signal: options?.abortSignal,
          answer: (etag) => resolve({ ...claim, etag }),
          fail: reject,
        }),
      ),
    complete: (claim) => {
      completed.push(claim);
      return Promise.resolve();
    },
  };
  return { store, extensions, completed };
}

/** Lets the promise callbacks run (the store's answers, the held claim's reactions). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

function heldClaim() {
  const time = fakeClock();
  const { store, extensions, completed } = scriptedStore();
  const lost: IdempotencyClaimLostError[] = [];
  const claim: IdempotencyClaim = {
    key: "k",
    partitionKey: "k",
    rowKey: "inbox:k",
    etag: '"1"',
    expiresOn: new Date(time.clock.wall() + DURATION_IN_MS),
    owner: "me",
  };
  const held = new HeldClaim(
    new StoreCalls(store, 60_000),
    claim,
    { monotonic: time.clock.monotonic(), wall: time.clock.wall() },
    DURATION_IN_MS,
    (error) => lost.push(error),
    time.clock,
  );
  return { time, held, extensions, completed, lost };
}

describe("idempotent()'s held claim", () => {
  it("extends a third of the duration after the send the deadline counts from, and completes with the newest version", async () => {
    const { time, held, extensions, completed, lost } = heldClaim();
    time.advance(333);
    expect(extensions).toHaveLength(0);
    time.advance(1);
    expect(extensions).toHaveLength(1); // sent at 333.3…
    time.advance(100);
    extensions[0]!.answer('"2"'); // answered at 434
    await settle();
    expect(held.claim.etag).toBe('"2"');
    time.advance(232);
    expect(extensions).toHaveLength(1);
    time.advance(1); // a third of the duration after the landed extension was sent: 666.6…
    expect(extensions).toHaveLength(2);
    extensions[1]!.answer('"3"');
    await settle();
    await held.stopExtending();
    await held.complete("result", []);
    expect(completed.map((c) => c.etag)).toEqual(['"3"']);
    expect(lost).toEqual([]);
    held.end();
  });

  it("gives the claim up when its extensions hang, abandons the one in flight, and refuses the done mark", async () => {
    const { time, held, extensions, completed, lost } = heldClaim();
    time.advance(334);
    expect(extensions).toHaveLength(1); // never answered
    time.advance(415); // 749
    expect(lost).toEqual([]);
    expect(held.lost).toBeUndefined();
    time.advance(1); // 750 after the claim was sent
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatchObject({ name: "IdempotencyClaimLostError", reason: "expiry-guard", key: "k" });
    expect(extensions[0]!.signal?.aborted).toBe(true);
    extensions[0]!.answer('"2"'); // an answer after the guard changes nothing
    await settle();
    await held.stopExtending();
    await expect(held.complete("result", [])).rejects.toBe(lost[0]);
    expect(completed).toEqual([]);
    held.end();
  });

  it("tries a failed extension again soon, and counts a landed one from the failed one's send", async () => {
    const { time, held, extensions, lost } = heldClaim();
    time.advance(334);
    extensions[0]!.fail(new Error("refused for a reason of its own")); // not ambiguous: no immediate retry
    await settle();
    time.advance(130); // tried again after a quarter of the 416 ms left, give or take 20 %
    expect(extensions).toHaveLength(2);
    extensions[1]!.answer('"2"');
    await settle();
    // The failed one, sent at 333.3…, may be the one the record carries: the deadline is 750 after
    // it, 1083.3…, not 750 after the second one's send (later extensions hang: no answer).
    expect(held.lost).toBeUndefined();
    time.advance(1_082 - 464);
    expect(lost).toEqual([]);
    time.advance(2);
    expect(lost).toHaveLength(1);
    held.end();
  });

  it("loses the claim at once when the store refuses an extension (another call took the key over)", async () => {
    const { time, held, extensions, lost } = heldClaim();
    time.advance(334);
    extensions[0]!.fail(new IdempotencyClaimLostError("taken over", { key: "k" }));
    await settle();
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatchObject({ reason: "record-changed" });
    expect(held.lost).toBe(lost[0]);
    time.advance(5_000);
    expect(lost).toHaveLength(1);
    expect(extensions).toHaveLength(1);
    held.end();
  });

  it("reading `lost` sees a suspend before any timer had a turn", () => {
    const { time, held, lost } = heldClaim();
    time.suspend(60_000);
    expect(held.lost).toMatchObject({ reason: "expiry-guard" });
    expect(held.lost?.message).toMatch(/suspended/);
    expect(lost).toHaveLength(1);
    held.end();
  });
});
