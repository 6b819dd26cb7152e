/**
 * The adaptive rate limiter: a client-side token bucket per key (a partition, a queue, a blob, the
 * account; see `scope.ts`) whose rate is learned from the service's answers.
 *
 * - A key starts unlimited: until the service throttles it, requests go out at once and the key
 *   costs a few numbers (its measured send rate). That is the AWS SDKs' adaptive mode too ("the
 *   token bucket is enabled on the first throttling response").
 * - A throttling answer (`verdict.ts`) cuts the key's rate to β times the rate it was sending at
 *   (the lowest of its limit, its measured send rate and, once measured over a full window, the
 *   rate the partition served it). At most once per round trip: an answer to a request sent before
 *   the last cut, or within one round trip (at least a tenth of the growth time) after it, says
 *   nothing about the new rate and does not cut again (TCP's "one reduction per window", RFC 9438
 *   §4.6). Without that rule the 64 answers in flight when a partition saturates would cut the rate
 *   to 0.7⁶⁴ of itself, and the requests sent just after a cut, which meet a partition still working
 *   off the excess sent before it, would cut it again and again. After a cut the key saves up no
 *   burst: the new rate starts at once.
 * - A congestion event (a cut, and the cuts that follow it within one growth time or two round
 *   trips) remembers the rate the key was served at before it (CUBIC's W_max): the later cuts of the
 *   event lower the rate, not W_max, so the curve climbs back to the rate of before the event, not
 *   to the lowest point a burst of cuts reached. Issue 26 measured why: the second cut of a burst
 *   read a served rate taken while the partition was still paying off the first burst, took the
 *   rate to 1 request per second, and the growth derived from that point kept it under 2 per
 *   second for 30 s after the capacity came back. If the capacity did drop, the climb back is
 *   throttled again and the next event starts from the rate that was throttled.
 * - Answers that are not throttling grow the rate back along the CUBIC curve (`cubic.ts`), never
 *   above twice the measured send rate (a key used at 10 requests per second does not learn that
 *   10,000 are fine).
 * - A request waits for a token of its partition's key, then of its account's (each only once that
 *   key is limited): in FIFO order, abortably, with one timer per key that has waiters and none
 *   otherwise.
 * - A key without waiters that has not been used for `idleTimeoutInMs` is forgotten (its next
 *   request starts unlimited again), and at most `maxKeys` keys are kept: memory is bounded, and an
 *   idle key costs nothing.
 *
 * The clock is injected (`LimiterClock`) so that the arithmetic is tested on a fake clock.
 */
import { checkNumber, checkOptionalSignal } from "../internal/validate.js";
import { rateAfterCut, rateSinceCut, type CubicCurve } from "./cubic.js";
import { RateMeter } from "./meter.js";
import { noteRateCut } from "./telemetry.js";
import type { ThrottleScope } from "./scope.js";
import { verdictOfOutcome, type ThrottleVerdict } from "./verdict.js";

/** Options for {@link AdaptiveRateLimiter}. */
export interface AdaptiveRateLimiterOptions {
  /**
   * β: a throttling answer multiplies the key's rate by this (between 0.1 and 0.95). Lower slows
   * down harder and throttles less often; higher keeps more of the rate and probes more often.
   * @default 0.7
   */
  readonly decreaseFactor?: number;
  /**
   * K: how long after a cut the rate is back to the rate it was cut from, in milliseconds (100 to
   * 60,000). Shorter finds a recovered capacity sooner and probes past a steady one more often.
   * @default 1000
   */
  readonly growthTimeInMs?: number;
  /**
   * How many requests the growth back takes at least: a slow key (a partition taking 6 requests a
   * second) grows back to the rate it was cut from over this many requests rather than over
   * `growthTimeInMs`, so that a probe past its capacity, which costs a throttled request or two,
   * comes once in this many (at most two growth times: the probe above it is never slower, so a
   * capacity that comes back is found within a few seconds). With the default, a partition serving
   * fewer than 25 requests a second is probed less often than once a second.
   * @default 25
   */
  readonly growthRequests?: number;
  /**
   * The lowest rate a key is cut to, in requests per second.
   * @default 1
   */
  readonly minRatePerSec?: number;
  /**
   * How much unused rate a key may save up for a burst, in milliseconds of its rate (at least one
   * request's worth). Small, so that a pause is not followed by a burst the partition throttles.
   * @default 50
   */
  readonly burstInMs?: number;
  /**
   * A key without waiters is forgotten after this long unused, in milliseconds: its next request
   * starts unlimited again.
   * @default 60000
   */
  readonly idleTimeoutInMs?: number;
  /**
   * The most keys kept; past it, the least recently used keys without waiters are forgotten first.
   * @default 10000
   */
  readonly maxKeys?: number;
  /**
   * A name for the limiter in metrics (`asc.throttling.limiter`), when several are used.
   * @default "default"
   */
  readonly name?: string;
}

/** Per-call options of {@link AdaptiveRateLimiter.acquire} and {@link AdaptiveRateLimiter.run}. */
export interface RateLimiterWaitOptions {
  /** Stops waiting for a token: the call rejects with the signal's reason and nothing is sent. */
  readonly abortSignal?: AbortSignal;
}

/** A request allowed to go out: hand it back to {@link AdaptiveRateLimiter.record} with its outcome. */
export interface RateLimiterPermit {
  /** The keys it was sent under. */
  readonly scope: ThrottleScope;
  /** When it was allowed out, on the limiter's monotonic clock (milliseconds). */
  readonly sentAt: number;
}

/** A key's state, for charts and tests ({@link AdaptiveRateLimiter.stateOf}). */
export interface RateLimiterKeyState {
  /** False until the key's first throttle: requests go out at once. */
  readonly limited: boolean;
  /** The key's rate in requests per second (`Infinity` while not limited). */
  readonly ratePerSec: number;
  /** The rate it sends at, measured (an exponential average over half-second windows). */
  readonly measuredPerSec: number;
  /** Requests waiting for a token. */
  readonly waiting: number;
  /** Throttling answers that cut the rate. */
  readonly cuts: number;
}

/** The clock the limiter runs on (the system's, or a test's). */
export interface LimiterClock {
  /** Monotonic milliseconds. */
  monotonic(): number;
  /** Calls `callback` after `delayInMs`; returns a handle for `clearTimer`. */
  setTimer(callback: () => void, delayInMs: number): unknown;
  /** Cancels a timer `setTimer` returned. */
  clearTimer(timer: unknown): void;
}

const systemClock: LimiterClock = {
  monotonic: () => performance.now(),
  // A waiting caller awaits its token: like `sleep()`, the timer keeps the process alive meanwhile.
  setTimer: (callback, delayInMs) => setTimeout(callback, delayInMs),
  clearTimer: (timer) => clearTimeout(timer as NodeJS.Timeout),
};

/** How often at most the idle keys are swept, in milliseconds. */
const SWEEP_EVERY_IN_MS = 1_000;
/** The served rate is read only this long after a key's first answer (one meter window). */
const MEASURED_AFTER_IN_MS = 500;
/** A slow key's growth back to W takes at most this many growth times (`growthRequests`). */
const MAX_STRETCH = 2;

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (reason: unknown) => void;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

class KeyState {
  limited = false;
  rate = Infinity;
  tokens = 0;
  refilledAt: number;
  /** CUBIC's W: the rate the key was served at before the congestion event under way. */
  cutFrom = 0;
  /** The rate right after the last cut, where the curve back to W starts. */
  startRate = 0;
  /** When the last cut happened, and when the congestion event it belongs to began. */
  cutAt = -Infinity;
  eventAt = -Infinity;
  cuts = 0;
  /** Requests let out (not those still waiting for a token). */
  readonly sent: RateMeter;
  /** Answers that were served (not throttled), measured from the key's first answer. */
  served: RateMeter | undefined;
  servedSince = 0;
  /** The smoothed round trip, send to answer, in milliseconds (TCP's SRTT); 0 before an answer. */
  roundTripInMs = 0;
  /** T for this key since its event began: the growth time, or longer for a slow key (`growthRequests`). */
  growthInSec = 1;
  usedAt: number;
  readonly waiters: Waiter[] = [];
  timer: unknown = undefined;

  constructor(now: number) {
    this.refilledAt = now;
    this.sent = new RateMeter(now);
    this.usedAt = now;
  }
}

interface Settings {
  readonly decreaseFactor: number;
  readonly growthTimeInSec: number;
  readonly growthRequests: number;
  /** Throttles of requests sent within this long after a cut do not cut again (at least; a round trip if longer). */
  readonly cutSpacingInMs: number;
  readonly minRatePerSec: number;
  readonly burstInMs: number;
  readonly idleTimeoutInMs: number;
  readonly maxKeys: number;
  readonly name: string;
}

/**
 * An adaptive client-side rate limiter, keyed by what Azure Storage throttles (see the module
 * documentation): share one per process (or per account), and pass it to the library's calls
 * (`rateLimiter` options), to {@link retry}, or to the SDK clients through {@link throttlingPolicy}.
 *
 * @example
 * ```ts
 * import { AdaptiveRateLimiter, throttleScopeOf } from "azure-storage-concurrency/throttling";
 *
 * const limiter = new AdaptiveRateLimiter();
 * const scope = throttleScopeOf(`${table.url}/${table.tableName}`, { partitionKey: "device-7" });
 * // Waits for a token of partition 'device-7' (once the service has throttled it), sends, and
 * // learns from the answer: a 503 ServerBusy cuts the partition's rate, a success grows it back.
 * await limiter.run(scope, () => table.upsertEntity({ partitionKey: "device-7", rowKey: "r1", celsius: 21 }));
 * ```
 */
export class AdaptiveRateLimiter {
  /** The settings, defaults filled in. */
  readonly options: Readonly<Required<AdaptiveRateLimiterOptions>>;
  readonly #settings: Settings;
  readonly #clock: LimiterClock;
  readonly #keys = new Map<string, KeyState>();
  #sweptAt: number;

  constructor(options: AdaptiveRateLimiterOptions = {}, clock: LimiterClock = systemClock) {
    if (typeof options !== "object" || options === null) throw new TypeError("`options` must be an object.");
    const decreaseFactor = checkNumber("decreaseFactor", options.decreaseFactor ?? 0.7, { min: 0.1, max: 0.95 });
    const growthTimeInMs = checkNumber("growthTimeInMs", options.growthTimeInMs ?? 1_000, { min: 100, max: 60_000 });
    const growthRequests = checkNumber("growthRequests", options.growthRequests ?? 25, { min: 0, max: 1e6 });
    const minRatePerSec = checkNumber("minRatePerSec", options.minRatePerSec ?? 1, { min: 0.01, max: 1e6 });
    const burstInMs = checkNumber("burstInMs", options.burstInMs ?? 50, { min: 0, max: 60_000 });
    const idleTimeoutInMs = checkNumber("idleTimeoutInMs", options.idleTimeoutInMs ?? 60_000, { min: 0 });
    const maxKeys = checkNumber("maxKeys", options.maxKeys ?? 10_000, { min: 1, integer: true });
    const name = options.name ?? "default";
    if (typeof name !== "string" || name.length === 0)
      throw new TypeError("`name` must be a non-empty string, the limiter's name in metrics.");
    this.options = Object.freeze({
      decreaseFactor,
      growthTimeInMs,
      growthRequests,
      minRatePerSec,
      burstInMs,
      idleTimeoutInMs,
      maxKeys,
      name,
    });
    this.#settings = {
      decreaseFactor,
      growthTimeInSec: growthTimeInMs / 1000,
      growthRequests,
      cutSpacingInMs: growthTimeInMs / 10,
      minRatePerSec,
      burstInMs,
      idleTimeoutInMs,
      maxKeys,
      name,
    };
    this.#clock = clock;
    this.#sweptAt = clock.monotonic();
  }

  /**
   * Waits until a request under `scope` may go out (at once while its keys are not limited), and
   * answers the permit to hand to {@link AdaptiveRateLimiter.record} with the request's outcome.
   *
   * @example
   * ```ts
   * import { AdaptiveRateLimiter, throttleScopeOf } from "azure-storage-concurrency/throttling";
   *
   * const limiter = new AdaptiveRateLimiter();
   * const permit = await limiter.acquire(throttleScopeOf(queueClient.url), { abortSignal: AbortSignal.timeout(5_000) });
   * try {
   *   await queueClient.sendMessage("hello");
   *   limiter.record(permit);
   * } catch (error) {
   *   limiter.record(permit, error); // a 503 ServerBusy cuts the queue's rate
   *   throw error;
   * }
   * ```
   */
  async acquire(scope: ThrottleScope, options: RateLimiterWaitOptions = {}): Promise<RateLimiterPermit> {
    checkScope(scope);
    checkOptionalSignal("abortSignal", options.abortSignal);
    const { abortSignal } = options;
    if (abortSignal?.aborted) throw abortSignal.reason;
    if (scope.partition !== undefined) await this.#take(scope.partition, abortSignal);
    await this.#take(scope.account, abortSignal);
    return { scope, sentAt: this.#clock.monotonic() };
  }

  /**
   * Tells the limiter how the request of `permit` ended: `undefined` for a success, else what it
   * threw. A throttling answer (503 ServerBusy, 429, 500 OperationTimedOut) cuts its key's rate;
   * any other answer grows it back; no answer (a network failure, a cancellation) changes nothing.
   *
   * @example
   * ```ts
   * import { AdaptiveRateLimiter, throttleScopeOf } from "azure-storage-concurrency/throttling";
   *
   * const limiter = new AdaptiveRateLimiter();
   * const permit = await limiter.acquire(throttleScopeOf(blob.url));
   * await blob.getProperties().then(
   *   () => limiter.record(permit),
   *   (error: unknown) => limiter.record(permit, error),
   * );
   * ```
   */
  record(permit: RateLimiterPermit, error?: unknown): void {
    this.recordVerdict(permit, verdictOfOutcome(error));
  }

  /**
   * Like {@link AdaptiveRateLimiter.record}, with the verdict already made (the pipeline policy
   * reads it from the raw HTTP answer).
   *
   * @example
   * ```ts
   * import { AdaptiveRateLimiter, throttleScopeOf } from "azure-storage-concurrency/throttling";
   *
   * const limiter = new AdaptiveRateLimiter();
   * const permit = await limiter.acquire(throttleScopeOf(queueClient.url));
   * limiter.recordVerdict(permit, "account"); // "Operations per second is over the account limit."
   * ```
   */
  recordVerdict(permit: RateLimiterPermit, verdict: ThrottleVerdict): void {
    if (verdict === "none") return;
    const now = this.#clock.monotonic();
    const { scope, sentAt } = permit;
    if (scope.partition !== undefined) this.#answered(scope.partition, sentAt, now);
    this.#answered(scope.account, sentAt, now);
    if (verdict === "served") {
      if (scope.partition !== undefined) this.#grow(scope.partition, sentAt, now);
      this.#grow(scope.account, sentAt, now);
      return;
    }
    const key = verdict === "account" || scope.partition === undefined ? scope.account : scope.partition;
    this.#cut(key, sentAt, now);
  }

  /**
   * Runs `call` as one request under `scope`: waits for a token, sends, records the outcome, and
   * answers what `call` answers (or throws what it throws).
   *
   * @example
   * ```ts
   * import { AdaptiveRateLimiter, throttleScopeOf } from "azure-storage-concurrency/throttling";
   *
   * const limiter = new AdaptiveRateLimiter();
   * const { receivedMessageItems } = await limiter.run(throttleScopeOf(queueClient.url), () =>
   *   queueClient.receiveMessages({ numberOfMessages: 32 }),
   * );
   * ```
   */
  async run<T>(scope: ThrottleScope, call: () => Promise<T>, options: RateLimiterWaitOptions = {}): Promise<T> {
    if (typeof call !== "function") throw new TypeError("`call` must be a function that sends the request.");
    const permit = await this.acquire(scope, options);
    let result: T;
    try {
      result = await call();
    } catch (error) {
      this.record(permit, error);
      throw error;
    }
    this.record(permit);
    return result;
  }

  /**
   * A key's state (`undefined` for a key not seen, or forgotten): for charts and tests.
   *
   * @example
   * ```ts
   * import { AdaptiveRateLimiter, throttleScopeOf } from "azure-storage-concurrency/throttling";
   *
   * declare const limiter: AdaptiveRateLimiter;
   * const { partition } = throttleScopeOf(`${table.url}/${table.tableName}`, { partitionKey: "hot" });
   * console.log(limiter.stateOf(partition!)?.ratePerSec); // Infinity until the partition was throttled
   * ```
   */
  stateOf(key: string): RateLimiterKeyState | undefined {
    const state = this.#keys.get(key);
    if (!state) return undefined;
    const now = this.#clock.monotonic();
    return {
      limited: state.limited,
      ratePerSec: state.rate,
      measuredPerSec: state.sent.rate(now),
      waiting: state.waiters.length,
      cuts: state.cuts,
    };
  }

  /** How many keys the limiter holds (at most `maxKeys`, plus keys with waiters). */
  get size(): number {
    return this.#keys.size;
  }

  // -------------------------------------------------------------------------------------------

  /** Takes a token of `key`, waiting for one when the key is limited. */
  #take(key: string, abortSignal: AbortSignal | undefined): Promise<void> | void {
    const now = this.#clock.monotonic();
    const state = this.#state(key, now);
    if (!state.limited) {
      state.sent.count(now);
      return;
    }
    this.#refill(state, now);
    if (state.waiters.length === 0 && state.tokens >= 1) {
      state.tokens -= 1;
      state.sent.count(now);
      return;
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const index = state.waiters.indexOf(waiter);
        if (index >= 0) state.waiters.splice(index, 1);
        if (state.waiters.length === 0) this.#stopTimer(state);
        reject(abortSignal!.reason);
      };
      const waiter: Waiter = { resolve, reject, signal: abortSignal, onAbort };
      abortSignal?.addEventListener("abort", onAbort, { once: true });
      state.waiters.push(waiter);
      if (state.timer === undefined) this.#schedule(state);
    });
  }

  #state(key: string, now: number): KeyState {
    let state = this.#keys.get(key);
    if (state && state.waiters.length === 0 && now - state.usedAt >= this.#settings.idleTimeoutInMs) {
      state = undefined; // idle past the timeout: forgotten, even if no sweep has dropped it yet
    }
    if (state) {
      // Re-inserted, so that the map's order is the order of last use (the sweep drops the oldest).
      this.#keys.delete(key);
    } else {
      state = new KeyState(now);
      this.#sweep(now);
    }
    state.usedAt = now;
    this.#keys.set(key, state);
    return state;
  }

  #cut(key: string, sentAt: number, now: number): void {
    const state = this.#keys.get(key);
    if (!state) return; // forgotten meanwhile: its next request starts afresh
    // Sent at the old rate, or within a round trip of the cut, when the partition was still working
    // off the excess sent before it: already cut for.
    if (state.limited && sentAt < state.cutAt + Math.max(this.#settings.cutSpacingInMs, state.roundTripInMs)) return;
    this.#refill(state, now);
    // The rate to cut from: what the key sent, no more than its limit, and no more than the
    // partition served it lately (which is what the partition can take: a burst sent at ten times
    // the capacity is cut from the capacity, not from the burst). The served rate counts only once
    // it was measured over a full window of answers: before that it is a handful of answers over a
    // few milliseconds, not a rate.
    const sent = state.sent.rate(now);
    let from = state.limited ? Math.min(state.rate, sent) : sent;
    if (state.served && (!state.limited || now - state.servedSince >= MEASURED_AFTER_IN_MS)) {
      const served = state.served.rate(now);
      if (served > 0) from = Math.min(from, served);
    }
    from = Math.max(this.#settings.minRatePerSec, from);
    const { growthTimeInSec, growthRequests } = this.#settings;
    const eventInMs = Math.max(1000 * growthTimeInSec, 2 * state.roundTripInMs);
    if (!state.limited || now - state.eventAt >= eventInMs) {
      // A new congestion event: W is the rate the key was sent and served at before it.
      state.cutFrom = from;
      state.eventAt = now;
      state.growthInSec = Math.min(MAX_STRETCH * growthTimeInSec, Math.max(growthTimeInSec, growthRequests / from));
    }
    state.limited = true;
    state.cutAt = now;
    state.cuts += 1;
    state.tokens = 0; // no burst right after a cut: the new rate starts now
    this.#setRate(state, rateAfterCut(from, this.#curve(state)));
    state.startRate = state.rate;
    noteRateCut(this.#settings.name, key.slice(0, key.indexOf(":")));
  }

  /** Any answer: the round trip it took, and the served meter's start. */
  #answered(key: string, sentAt: number, now: number): void {
    const state = this.#keys.get(key);
    if (!state) return;
    const roundTripInMs = Math.max(0, now - sentAt);
    state.roundTripInMs = state.served === undefined ? roundTripInMs : (7 * state.roundTripInMs + roundTripInMs) / 8; // RFC 6298
    if (state.served === undefined) {
      state.served = new RateMeter(now);
      state.servedSince = now;
    }
  }

  #grow(key: string, sentAt: number, now: number): void {
    const state = this.#keys.get(key);
    if (!state) return;
    state.served?.count(now);
    if (!state.limited || sentAt < state.cutAt) return;
    const secondsSinceCut = (now - state.cutAt) / 1000;
    const curve = rateSinceCut(state.cutFrom, secondsSinceCut, this.#curve(state), state.startRate);
    // Never above twice the measured send rate, unless requests are waiting: then the key uses all
    // its rate, and a send rate measured over half-second windows at a few requests a second (0 in
    // one window, 2 in the next) must not hold the growth back.
    const cap = state.waiters.length > 0 ? Infinity : 2 * state.sent.rate(now);
    const next = Math.min(curve, Math.max(cap, state.rate));
    if (next > state.rate) {
      this.#refill(state, now);
      this.#setRate(state, next);
    }
  }

  #curve(state: KeyState): CubicCurve {
    return {
      decreaseFactor: this.#settings.decreaseFactor,
      growthTimeInSec: state.growthInSec,
      probeTimeInSec: this.#settings.growthTimeInSec,
    };
  }

  #setRate(state: KeyState, rate: number): void {
    state.rate = Math.max(this.#settings.minRatePerSec, rate);
    state.tokens = Math.min(state.tokens, this.#capacity(state));
    if (state.waiters.length > 0) {
      this.#stopTimer(state);
      this.#schedule(state);
    }
  }

  #capacity(state: KeyState): number {
    return Math.max(1, (state.rate * this.#settings.burstInMs) / 1000);
  }

  #refill(state: KeyState, now: number): void {
    if (state.limited) {
      const earned = ((now - state.refilledAt) * state.rate) / 1000;
      state.tokens = Math.min(this.#capacity(state), state.tokens + earned);
    }
    state.refilledAt = now;
  }

  /** Sets the key's timer for its next token. */
  #schedule(state: KeyState): void {
    const delayInMs = Math.max(0, ((1 - state.tokens) * 1000) / state.rate);
    state.timer = this.#clock.setTimer(() => this.#drain(state), delayInMs);
  }

  #stopTimer(state: KeyState): void {
    if (state.timer === undefined) return;
    this.#clock.clearTimer(state.timer);
    state.timer = undefined;
  }

  /** Hands out the tokens earned since the last time, first come first served. */
  #drain(state: KeyState): void {
    state.timer = undefined;
    const now = this.#clock.monotonic();
    this.#refill(state, now);
    while (state.waiters.length > 0 && state.tokens >= 1) {
      state.tokens -= 1;
      state.sent.count(now);
      const waiter = state.waiters.shift()!;
      waiter.signal?.removeEventListener("abort", waiter.onAbort);
      waiter.resolve();
    }
    if (state.waiters.length > 0) this.#schedule(state);
    state.usedAt = now;
  }

  /** Forgets idle keys (no waiters, unused for `idleTimeoutInMs`), and the oldest past `maxKeys`. */
  #sweep(now: number): void {
    const { idleTimeoutInMs, maxKeys } = this.#settings;
    const full = this.#keys.size >= maxKeys;
    if (!full && now - this.#sweptAt < SWEEP_EVERY_IN_MS) return;
    this.#sweptAt = now;
    let excess = this.#keys.size + 1 - maxKeys;
    for (const [key, state] of this.#keys) {
      if (state.waiters.length > 0) continue;
      if (now - state.usedAt >= idleTimeoutInMs || excess > 0) {
        this.#keys.delete(key);
        excess -= 1;
      }
    }
  }
}

function checkScope(scope: ThrottleScope): void {
  if (
    typeof scope !== "object" ||
    scope === null ||
    typeof scope.account !== "string" ||
    (scope.partition !== undefined && typeof scope.partition !== "string")
  ) {
    throw new TypeError(
      "`scope` must be a ThrottleScope ({ account, partition }): build it with `throttleScopeOf(url)`.",
    );
  }
}
