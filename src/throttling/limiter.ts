/**
 * The adaptive rate limiter: a client-side token bucket per key (a partition, a queue, a blob, the
 * account; see `scope.ts`) whose rate is learned from the service's answers.
 *
 * - A key starts unlimited: until the service throttles it, requests go out at once and the key
 *   costs a few numbers (its measured send rate). That is the AWS SDKs' adaptive mode too ("the
 *   token bucket is enabled on the first throttling response").
 * - A throttling answer (`verdict.ts`) cuts the key's rate to β times the rate it was sending at
 *   (the lower of its limit and its measured send rate), once per congestion event: an answer to a
 *   request sent before the last cut, or within a tenth of the growth time after it, says nothing
 *   about the new rate and is not counted again (TCP's "one reduction per window"). Without that
 *   rule, the 64 answers in flight when a partition saturates would cut the rate to 0.7⁶⁴ of
 *   itself; and without the tenth, the requests sent just after a cut, which meet a partition still
 *   working off the excess sent before it, cut it again and again (measured: four cuts in 40 ms,
 *   from 92 to 31 requests per second, on a partition serving 100). After a cut the key saves up
 *   no burst: the new rate starts at once.
 * - Answers that are not throttling grow the rate back along the CUBIC curve (`cubic.ts`), never above
 *   twice the measured send rate (a key used at 10 requests per second does not learn that 10,000
 *   are fine).
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
   * second) grows back over this many requests rather than over `growthTimeInMs`, so that a probe
   * past its capacity, which costs a throttled request or two, comes once in this many (at most
   * ten growth times). With the default, a partition serving fewer than 25 requests a second is
   * probed less often than once a second.
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
  /** The rate at the last cut (CUBIC's W), and when it happened. */
  cutFrom = 0;
  cutAt = -Infinity;
  cuts = 0;
  /** Requests sent, and answers that were served (not throttled). */
  readonly sent: RateMeter;
  readonly served: RateMeter;
  /** K for this key since its last cut: the growth time, or longer for a slow key (`growthRequests`). */
  growthInSec = 1;
  usedAt: number;
  readonly waiters: Waiter[] = [];
  timer: unknown = undefined;

  constructor(now: number) {
    this.refilledAt = now;
    this.sent = new RateMeter(now);
    this.served = new RateMeter(now);
    this.usedAt = now;
  }
}

interface Settings {
  readonly decreaseFactor: number;
  readonly growthTimeInSec: number;
  readonly growthRequests: number;
  /** Throttles of requests sent within this long after a cut do not cut again (a tenth of the growth time). */
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
 * import { AdaptiveRateLimiter, throttleScopeOf } from "azure-storage-concurrency";
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
   * import { AdaptiveRateLimiter, throttleScopeOf } from "azure-storage-concurrency";
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
   * import { AdaptiveRateLimiter, throttleScopeOf } from "azure-storage-concurrency";
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
   * import { AdaptiveRateLimiter, throttleScopeOf } from "azure-storage-concurrency";
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
   * import { AdaptiveRateLimiter, throttleScopeOf } from "azure-storage-concurrency";
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
   * import { AdaptiveRateLimiter, throttleScopeOf } from "azure-storage-concurrency";
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
    state.sent.count(now);
    if (!state.limited) return;
    this.#refill(state, now);
    if (state.waiters.length === 0 && state.tokens >= 1) {
      state.tokens -= 1;
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
    // Sent at the old rate, or so soon after the cut that the partition was still working off the
    // excess sent before it: already cut for.
    if (state.limited && sentAt < state.cutAt + this.#settings.cutSpacingInMs) return;
    this.#refill(state, now);
    // The rate to cut from: what the key sent, no more than its limit, and no more than the
    // partition served it lately (which is what the partition can take: a burst sent at ten times
    // the capacity is cut from the capacity, not from the burst).
    const sent = state.sent.rate(now);
    const served = state.served.rate(now);
    let from = state.limited ? Math.min(state.rate, sent) : sent;
    if (served > 0) from = Math.min(from, served);
    from = Math.max(this.#settings.minRatePerSec, from);
    state.limited = true;
    state.cutFrom = from;
    state.growthInSec = Math.min(
      10 * this.#settings.growthTimeInSec,
      Math.max(this.#settings.growthTimeInSec, this.#settings.growthRequests / from),
    );
    state.cutAt = now;
    state.cuts += 1;
    state.tokens = 0; // no burst right after a cut: the new rate starts now
    this.#setRate(state, rateAfterCut(from, this.#curve(state)));
    noteRateCut(this.#settings.name, key.slice(0, key.indexOf(":")));
  }

  #grow(key: string, sentAt: number, now: number): void {
    const state = this.#keys.get(key);
    if (!state) return;
    state.served.count(now);
    if (!state.limited || sentAt < state.cutAt) return;
    const curve = rateSinceCut(state.cutFrom, (now - state.cutAt) / 1000, this.#curve(state));
    const cap = 2 * state.sent.rate(now);
    const next = Math.min(curve, Math.max(cap, state.rate));
    if (next > state.rate) {
      this.#refill(state, now);
      this.#setRate(state, next);
    }
  }

  #curve(state: KeyState): CubicCurve {
    return { decreaseFactor: this.#settings.decreaseFactor, growthTimeInSec: state.growthInSec };
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
