/**
 * Backoff strategies: how long to wait before each retry. Each is an immutable value with a name,
 * so it can be passed around, logged and compared in benchmarks.
 */
import { uniform } from "../internal/sleep.js";
import { checkNumber, checkOptionalFunction } from "../internal/validate.js";

/** How long to wait before a retry. */
export interface BackoffStrategy {
  /** A short name for logs and benchmark reports (`"exponential"`, `"full-jitter"`, …). */
  readonly name: string;
  /**
   * The delay before retry number `retry` (1 for the first retry).
   * @param previousDelayInMs - the delay chosen before the previous retry (0 before the first);
   * only decorrelated jitter uses it.
   */
  delayInMs(retry: number, previousDelayInMs: number): number;
}

/** Shared option: the random source (a function giving numbers in `[0, 1)`), for reproducible tests. */
export interface RandomSourceOptions {
  /**
   * The random source, giving numbers in `[0, 1)`.
   * @default Math.random
   */
  readonly random?: () => number;
}

/** Options for {@link exponentialBackoff}: the source documents' formula and its names. */
export interface ExponentialBackoffOptions extends RandomSourceOptions {
  /**
   * `z`, the default backoff: each retry waits `Rand(0.8z, 1.2z) * (2^x - 1)` on top of the minimum.
   * @default 30000
   */
  readonly deltaInMs?: number;
  /**
   * `zmin`, the minimum backoff, added to every delay.
   * @default 3000
   */
  readonly minInMs?: number;
  /**
   * `zmax`, the maximum backoff.
   * @default 90000
   */
  readonly maxInMs?: number;
}

/**
 * The exponential backoff of the source documents ("Designing a Scalable Partitioning Strategy for
 * Azure Table Storage"): for retry `x`,
 * `y = Rand(0.8z, 1.2z) * (2^x - 1)` and the delay is `Min(zmin + y, zmax)`.
 *
 * The defaults are the document's (z = 30 s, zmin = 3 s, zmax = 90 s): right for background work
 * riding out a partition being rebalanced. For requests a person waits on, use
 * {@link backoffPresets}`.interactive`; for racing writers, `backoffPresets.contention`.
 *
 * @example
 * ```ts
 * import { exponentialBackoff } from "azure-storage-concurrency/retry";
 *
 * const backoff = exponentialBackoff({ deltaInMs: 200, minInMs: 50, maxInMs: 2_000 });
 * backoff.delayInMs(1, 0); // between 210 and 290 ms
 * ```
 */
export function exponentialBackoff(options: ExponentialBackoffOptions = {}): BackoffStrategy {
  const deltaInMs = checkNumber("deltaInMs", options.deltaInMs ?? 30_000, { min: 0 });
  const minInMs = checkNumber("minInMs", options.minInMs ?? 3_000, { min: 0 });
  const maxInMs = checkNumber("maxInMs", options.maxInMs ?? 90_000, { min: minInMs });
  const random = randomSource(options);
  return Object.freeze({
    name: "exponential",
    delayInMs(retry: number): number {
      const y = uniform(0.8 * deltaInMs, 1.2 * deltaInMs, random) * (2 ** retry - 1);
      return Math.min(minInMs + y, maxInMs);
    },
  });
}

/** Options for {@link fullJitterBackoff} and {@link decorrelatedJitterBackoff}. */
export interface JitterBackoffOptions extends RandomSourceOptions {
  /**
   * The base delay.
   * @default 100
   */
  readonly baseInMs?: number;
  /**
   * The largest delay.
   * @default 10000
   */
  readonly maxInMs?: number;
}

/**
 * "Full jitter": a uniformly random delay between 0 and `min(max, base * 2^(retry-1))`. Spreads
 * contending clients the most; the usual choice when many writers race for one resource.
 *
 * @example
 * ```ts
 * import { fullJitterBackoff, retry } from "azure-storage-concurrency/retry";
 *
 * const backoff = fullJitterBackoff({ baseInMs: 10, maxInMs: 1_000 });
 * backoff.delayInMs(3, 0); // anywhere from 0 to 40 ms
 * await retry(({ abortSignal }) => blob.getProperties({ abortSignal }), { backoff, maxRetries: 5 });
 * ```
 */
export function fullJitterBackoff(options: JitterBackoffOptions = {}): BackoffStrategy {
  const { baseInMs, maxInMs, random } = jitterOptions(options);
  return Object.freeze({
    name: "full-jitter",
    delayInMs(retry: number): number {
      return uniform(0, Math.min(maxInMs, baseInMs * 2 ** (retry - 1)), random);
    },
  });
}

/**
 * "Decorrelated jitter": each delay is random between the base and three times the previous delay,
 * capped at the maximum. Grows like exponential backoff but never synchronises clients.
 *
 * @example
 * ```ts
 * import { decorrelatedJitterBackoff } from "azure-storage-concurrency/retry";
 *
 * const backoff = decorrelatedJitterBackoff({ baseInMs: 100, maxInMs: 5_000 });
 * const first = backoff.delayInMs(1, 0); // 100 ms (nothing before it to grow from)
 * const second = backoff.delayInMs(2, 300); // 100 to 900 ms: up to three times the previous delay
 * ```
 */
export function decorrelatedJitterBackoff(options: JitterBackoffOptions = {}): BackoffStrategy {
  const { baseInMs, maxInMs, random } = jitterOptions(options);
  return Object.freeze({
    name: "decorrelated-jitter",
    delayInMs(_retry: number, previousDelayInMs: number): number {
      return Math.min(maxInMs, uniform(baseInMs, Math.max(baseInMs, previousDelayInMs * 3), random));
    },
  });
}

/** Options for {@link fixedBackoff}. */
export interface FixedBackoffOptions {
  /**
   * The delay before every retry.
   * @default 1000
   */
  readonly delayInMs?: number;
}

/**
 * The same delay before every retry. Simple, but clients that failed together retry together: the
 * source documents advise against it for highly scalable tables.
 *
 * @example
 * ```ts
 * import { fixedBackoff, retryPolicy } from "azure-storage-concurrency/retry";
 *
 * const policy = retryPolicy({ backoff: fixedBackoff({ delayInMs: 2_000 }), maxRetries: 3 });
 * await policy.execute(({ abortSignal }) => table.getEntity("p", "r", { abortSignal }));
 * ```
 */
export function fixedBackoff(options: FixedBackoffOptions = {}): BackoffStrategy {
  const delayInMs = checkNumber("delayInMs", options.delayInMs ?? 1_000, { min: 0 });
  return Object.freeze({ name: "fixed", delayInMs: () => delayInMs });
}

/**
 * No waiting at all: retry at once. This is the naive loop, kept for comparison in benchmarks and
 * for operations that cannot collide (to not retry at all, set `maxRetries: 0` instead).
 *
 * @example
 * ```ts
 * import { noBackoff, retry } from "azure-storage-concurrency/retry";
 *
 * // The naive loop, for comparison: retries transient failures at once.
 * await retry(({ abortSignal }) => blob.getProperties({ abortSignal }), { backoff: noBackoff(), maxRetries: 3 });
 * ```
 */
export function noBackoff(): BackoffStrategy {
  return Object.freeze({ name: "none", delayInMs: () => 0 });
}

/**
 * Ready-made strategies.
 * - `background`: the source documents' defaults (z = 30 s, zmin = 3 s, zmax = 90 s), for batch
 *   and background work that must ride out a partition moving between servers.
 * - `interactive`: the same formula scaled for a person waiting (z = 200 ms, zmin = 50 ms,
 *   zmax = 2 s): about 0.25 s, 0.65 s, 1.45 s, 2 s.
 * - `contention`: for writers racing on one resource (optimistic-concurrency conflicts): full
 *   jitter from 10 ms up to 1 s.
 */
export const backoffPresets: {
  /** {@link exponentialBackoff} with the source documents' defaults: z = 30 s, zmin = 3 s, zmax = 90 s. */
  readonly background: BackoffStrategy;
  /** {@link exponentialBackoff} with z = 200 ms, zmin = 50 ms, zmax = 2 s. */
  readonly interactive: BackoffStrategy;
  /** {@link fullJitterBackoff} from 10 ms (`baseInMs`) up to 1 s (`maxInMs`). */
  readonly contention: BackoffStrategy;
} = Object.freeze({
  background: exponentialBackoff(),
  interactive: exponentialBackoff({ deltaInMs: 200, minInMs: 50, maxInMs: 2_000 }),
  contention: fullJitterBackoff({ baseInMs: 10, maxInMs: 1_000 }),
});

function jitterOptions(options: JitterBackoffOptions) {
  const baseInMs = checkNumber("baseInMs", options.baseInMs ?? 100, { min: 0 });
  const maxInMs = checkNumber("maxInMs", options.maxInMs ?? 10_000, { min: baseInMs });
  return { baseInMs, maxInMs, random: randomSource(options) };
}

function randomSource(options: RandomSourceOptions): () => number {
  checkOptionalFunction("random", options.random);
  return options.random ?? Math.random;
}
