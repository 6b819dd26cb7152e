/**
 * `retry()`: run an operation again on transient failures, waiting as a backoff strategy says, on
 * top of p-retry. One classifier ({@link classifyError}) decides what is worth retrying.
 *
 * Layering with the SDKs: each SDK client already retries a failed request in its pipeline. Retry
 * in exactly one place: either keep the SDK's retries (the default) and let the library's loops
 * handle only concurrency outcomes, or give the client {@link SDK_SINGLE_ATTEMPT} and retry here.
 * Both together multiply: 4 SDK tries x 4 attempts = 16 requests for one failing operation.
 */
import pRetry from "p-retry";
import { logger } from "../internal/logger.js";
import { sleep } from "../internal/sleep.js";
import { checkNumber, checkOptionalFunction, checkOptionalSignal } from "../internal/validate.js";
import { backoffPresets, type BackoffStrategy } from "./backoff.js";
import { classifyError, wrapStorageError, type ErrorClassification } from "./classify.js";
import type { AdaptiveRateLimiter, RetryBudget, ThrottleScope } from "../throttling/index.js";

/** What {@link RetryOptions.onRetry} is told before each retry. */
export interface RetryEvent {
  /** The failure that is being retried. */
  readonly error: unknown;
  /** Its classification. */
  readonly classification: ErrorClassification;
  /** The attempt that failed (1 for the first). */
  readonly attempt: number;
  /** How long the policy waits before the next attempt. */
  readonly delayInMs: number;
}

/** What the operation run by {@link retry} is given. */
export interface RetryAttemptContext {
  /** This attempt's number, 1 for the first. */
  readonly attempt: number;
  /**
   * The caller's `abortSignal` (one that never aborts when the caller gave none): pass it to the SDK
   * call so that cancelling stops the request too.
   */
  readonly abortSignal: AbortSignal;
}

/** Options for {@link retry} and {@link retryPolicy}. */
export interface RetryOptions {
  /**
   * How long to wait before each retry.
   * @default backoffPresets.interactive
   */
  readonly backoff?: BackoffStrategy;
  /**
   * How many times to retry after the first attempt (0 means one attempt only).
   * @default 3
   */
  readonly maxRetries?: number;
  /**
   * An overall time limit, from the first attempt: no retry starts whose wait would end past it.
   * @default Infinity
   */
  readonly deadlineInMs?: number;
  /**
   * Which failures to retry.
   * @default (classification) => classification.transient
   */
  readonly shouldRetry?: (classification: ErrorClassification, error: unknown) => boolean;
  /**
   * Wait at least as long as the service asked (`x-ms-retry-after-ms`, `retry-after-ms`, `Retry-After`).
   * @default true
   */
  readonly honorRetryAfter?: boolean;
  /** Called before each retry, e.g. to log it. */
  readonly onRetry?: (event: RetryEvent) => void;
  /**
   * A retry budget shared by the operations of one client or account: each retry is paid for from
   * it, a first-try success credits it, and when it cannot pay, the failure is not retried and
   * the call rejects with a {@link RetryBudgetExhaustedError} saying why.
   * @default undefined (no budget: `maxRetries` alone limits the retries)
   */
  readonly budget?: RetryBudget;
  /**
   * Sends every attempt through this limiter, under `throttleScope`: the attempt waits for a token
   * of its partition (once the service has throttled it) and the answer teaches the limiter.
   * @default undefined (attempts go out at once)
   */
  readonly rateLimiter?: AdaptiveRateLimiter;
  /** What the attempts are throttled by (`throttleScopeOf(url)`); needed with `rateLimiter`. */
  readonly throttleScope?: ThrottleScope;
}

/** Per-call options for {@link RetryPolicy.execute}. */
export interface ExecuteOptions {
  /** Cancels the operation: waiting stops at once and the promise rejects with the signal's reason. */
  readonly abortSignal?: AbortSignal;
  /**
   * What the operation does, phrased to follow "Could not", for the error message when it gives up.
   * @default "complete the storage operation"
   */
  readonly operationName?: string;
}

/** The options of {@link RetryOptions} without a default value. */
export type OptionalRetryOption = "onRetry" | "budget" | "rateLimiter" | "throttleScope";

/** A retry policy: an immutable value that runs operations with the same retry settings. */
export interface RetryPolicy {
  /** The settings, with defaults filled in. */
  readonly options: Readonly<Required<Omit<RetryOptions, OptionalRetryOption>>> &
    Pick<RetryOptions, OptionalRetryOption>;
  /**
   * Runs `operation`, retrying transient failures. When it gives up, a storage failure is thrown as
   * a {@link index!StorageRequestError} (with `attempts`); anything else the operation rejected with (an
   * `Error` of yours, or a value that is not an `Error` at all) is thrown as it was.
   */
  execute<T>(operation: (context: RetryAttemptContext) => Promise<T>, options?: ExecuteOptions): Promise<T>;
}

/**
 * Makes a {@link RetryPolicy} to share between calls.
 *
 * @example
 * ```ts
 * import { retryPolicy, exponentialBackoff } from "azure-storage-concurrency/retry";
 *
 * const policy = retryPolicy({ backoff: exponentialBackoff(), maxRetries: 5 });
 * const props = await policy.execute(({ abortSignal }) => blob.getProperties({ abortSignal }));
 * ```
 */
export function retryPolicy(options: RetryOptions = {}): RetryPolicy {
  const settled = {
    backoff: options.backoff ?? backoffPresets.interactive,
    maxRetries: checkNumber("maxRetries", options.maxRetries ?? 3, { min: 0, integer: true, allowInfinity: true }),
    deadlineInMs: checkNumber("deadlineInMs", options.deadlineInMs ?? Infinity, { min: 0, allowInfinity: true }),
    shouldRetry: options.shouldRetry ?? ((classification: ErrorClassification) => classification.transient),
    honorRetryAfter: options.honorRetryAfter ?? true,
    onRetry: options.onRetry,
    budget: options.budget,
    rateLimiter: options.rateLimiter,
    throttleScope: options.throttleScope,
  };
  if (typeof settled.backoff?.delayInMs !== "function") {
    throw new TypeError("`backoff` must be a BackoffStrategy, such as `exponentialBackoff()`.");
  }
  checkOptionalFunction("shouldRetry", options.shouldRetry);
  checkOptionalFunction("onRetry", options.onRetry);
  checkThrottling(options);
  const policyOptions = Object.freeze(settled);
  return Object.freeze({
    options: policyOptions,
    execute: <T>(operation: (context: RetryAttemptContext) => Promise<T>, executeOptions: ExecuteOptions = {}) =>
      execute(policyOptions, operation, executeOptions),
  });
}

/**
 * Runs `operation`, retrying transient failures (see {@link classifyError}) with backoff.
 *
 * @example
 * ```ts
 * import { retry, SDK_SINGLE_ATTEMPT } from "azure-storage-concurrency/retry";
 * import { BlobServiceClient } from "@azure/storage-blob";
 *
 * // The SDK makes one attempt per call; retry() is the one place that retries.
 * const blobs = BlobServiceClient.fromConnectionString(connectionString, {
 *   retryOptions: SDK_SINGLE_ATTEMPT.storage,
 * });
 * const properties = await retry(
 *   ({ abortSignal }) => blobs.getContainerClient("data").getProperties({ abortSignal }),
 *   { maxRetries: 5, deadlineInMs: 10_000, operationName: "read container 'data'" },
 * );
 * ```
 */
export function retry<T>(
  operation: (context: RetryAttemptContext) => Promise<T>,
  options: RetryOptions & ExecuteOptions = {},
): Promise<T> {
  return retryPolicy(options).execute(operation, options);
}

async function execute<T>(
  options: RetryPolicy["options"],
  operation: (context: RetryAttemptContext) => Promise<T>,
  { abortSignal, operationName = "complete the storage operation" }: ExecuteOptions,
): Promise<T> {
  checkOptionalSignal("abortSignal", abortSignal);
  const attemptSignal = abortSignal ?? new AbortController().signal;
  const start = performance.now();
  let attempts = 0;
  let previousDelayInMs = 0;
  let budgetRefused = false;
  const { budget, rateLimiter, throttleScope } = options;
  try {
    return await pRetry(
      async (attempt) => {
        attempts = attempt;
        let result: T;
        try {
          const send = () => operation({ attempt, abortSignal: attemptSignal });
          result = await (rateLimiter && throttleScope
            ? rateLimiter.run(throttleScope, send, { abortSignal })
            : send());
        } catch (error) {
          throw new AttemptFailure(error);
        }
        if (attempt === 1) budget?.credit();
        return result;
      },
      {
        retries: options.maxRetries,
        minTimeout: 0, // the wait happens in shouldRetry, chosen by the backoff strategy
        ...(abortSignal ? { signal: abortSignal } : {}),
        shouldRetry: async ({ error: boxed, attemptNumber }) => {
          const error = unbox(boxed);
          const classification = classifyError(error);
          if (!options.shouldRetry(classification, error)) return false;
          let delayInMs = options.backoff.delayInMs(attemptNumber, previousDelayInMs);
          if (options.honorRetryAfter && classification.retryAfterInMs !== undefined) {
            delayInMs = Math.max(delayInMs, classification.retryAfterInMs);
          }
          if (performance.now() - start + delayInMs >= options.deadlineInMs) return false;
          if (budget && !budget.trySpend()) {
            budgetRefused = true;
            return false;
          }
          previousDelayInMs = delayInMs;
          logger.verbose(
            `retrying "${operationName}" after attempt ${attemptNumber} failed (${describeFailure(classification)}); waiting ${Math.round(delayInMs)} ms`,
          );
          options.onRetry?.({ error, classification, attempt: attemptNumber, delayInMs });
          await sleep(delayInMs, abortSignal);
          return true;
        },
      },
    );
  } catch (boxed) {
    const error = unbox(boxed);
    if (budgetRefused) {
      logger.warning(`did not retry "${operationName}" after attempt ${attempts}: the retry budget is empty`);
      throw budget!.exhausted(error, operationName);
    }
    const classification = classifyError(error);
    // A failure the policy would retry, but the retry budget or the deadline ran out.
    let retriable = false;
    try {
      retriable =
        options.maxRetries > 0 && classification.kind !== "cancelled" && options.shouldRetry(classification, error);
    } catch {
      // the caller's predicate threw (that error is what the caller gets): nothing to log
    }
    if (retriable) {
      logger.warning(
        `gave up on "${operationName}" after ${attempts} attempt${attempts === 1 ? "" : "s"} (${describeFailure(classification)})`,
      );
    }
    throw wrapStorageError(error, operationName, attempts);
  }
}

/** Checks the throttling options by what they must do (two copies of the package agree). */
function checkThrottling({ budget, rateLimiter, throttleScope }: RetryOptions): void {
  if (budget !== undefined && (typeof budget?.trySpend !== "function" || typeof budget.exhausted !== "function"))
    throw new TypeError("`budget` must be a RetryBudget.");
  if (rateLimiter !== undefined && typeof rateLimiter?.run !== "function")
    throw new TypeError("`rateLimiter` must be an AdaptiveRateLimiter.");
  if (rateLimiter !== undefined && throttleScope === undefined)
    throw new TypeError(
      "`rateLimiter` needs `throttleScope`, what the attempts are throttled by: `throttleScopeOf(client.url)`.",
    );
}

/**
 * An attempt's rejection, carried through p-retry as it was. Unboxed, p-retry would turn a value
 * that is not an `Error` into a TypeError of its own ("Non-error was thrown") and never retry a
 * TypeError, whatever the classifier and `shouldRetry` say; boxed, p-retry sees a plain `Error`
 * every time, and what is retried is decided here alone, on the value the operation rejected with.
 */
class AttemptFailure extends Error {
  constructor(readonly thrown: unknown) {
    super("an attempt of retry()'s operation failed");
  }
}

/** What the operation rejected with, when p-retry hands back one of its failures; anything else as it is. */
function unbox(error: unknown): unknown {
  return error instanceof AttemptFailure ? error.thrown : error;
}

/** `throttled 503 ServerBusy`, `network ECONNRESET`: a failure in a few words, for log lines. */
function describeFailure({ kind, statusCode, serviceCode }: ErrorClassification): string {
  return [kind, statusCode, serviceCode].filter((part) => part !== undefined).join(" ");
}

/**
 * `retryOptions` for SDK clients that make exactly one attempt per call, so that {@link retry} is
 * the one place that retries:
 * - `storage` for `@azure/storage-blob`, `@azure/storage-queue` and `@azure/storage-file-share`
 *   clients (`StoragePipelineOptions.retryOptions`);
 * - `tables` for `@azure/data-tables` clients (`retryOptions` of the client options).
 */
export const SDK_SINGLE_ATTEMPT: {
  /** `retryOptions` for the blob, queue and file share clients. */
  readonly storage: {
    /** Tries per request, the first one included: one, so no retry. */
    readonly maxTries: 1;
  };
  /** `retryOptions` for `TableClient` and `TableServiceClient`. */
  readonly tables: {
    /** Retries after the first try: none. */
    readonly maxRetries: 0;
  };
} = Object.freeze({ storage: Object.freeze({ maxTries: 1 }), tables: Object.freeze({ maxRetries: 0 }) });
