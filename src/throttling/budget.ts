/**
 * The retry budget: retries spend tokens that first-try successes earn back, so that an overloaded
 * service gets fewer retries, not more. Shared by the operations of one client or account.
 *
 * Anchors: the AWS SDKs' standard retry mode (a retry quota of 500, each retry costs 5, a success
 * without retry earns 1 back) and MongoDB's client backpressure (each retry of an overload error
 * costs a token, each success earns 0.1). Per-request backoff alone cannot do this: each request
 * backs off on its own, so a fleet of them keeps a busy partition saturated while its retries pile
 * up. With a budget, once retries outrun successes (the service refuses more than about one
 * request in `1 / successCredit`) the budget empties and further retries fail at once with a
 * {@link RetryBudgetExhaustedError}, which says why, instead of joining the storm; successes refill
 * it, and retries resume.
 *
 * The budget only counts; it never waits. {@link retry} spends from it before each retry (`budget`
 * option) and credits it after a first-try success; {@link throttlingPolicy} does the same for the
 * SDK pipeline's own retries.
 */
import { RetryBudgetExhaustedError, statusOf, serviceCodeOf } from "../errors.js";
import { checkNumber } from "../internal/validate.js";
import { noteBudget } from "./telemetry.js";

/** Options for {@link RetryBudget}. */
export interface RetryBudgetOptions {
  /**
   * The most tokens the budget holds (and starts with): how many retries a burst of failures may
   * take before the budget refuses.
   * @default 100
   */
  readonly maxTokens?: number;
  /**
   * What one retry costs.
   * @default 1
   */
  readonly retryCost?: number;
  /**
   * What one first-try success earns back. With the defaults, retries are sustained while fewer
   * than about one request in ten fails.
   * @default 0.1
   */
  readonly successCredit?: number;
  /**
   * A name for the budget in metrics (`asc.retry_budget.name`) and error messages.
   * @default "default"
   */
  readonly name?: string;
}

/**
 * A retry budget shared by the operations of one client or account (see the module documentation).
 * Its figures are exported as OpenTelemetry metrics: `asc.retry_budget.tokens`,
 * `asc.retry_budget.retries` (by outcome: `allowed`, `refused`).
 *
 * @example
 * ```ts
 * import { RetryBudget, isRetryBudgetExhaustedError } from "azure-storage-concurrency/throttling";
 * import { retry } from "azure-storage-concurrency/retry";
 *
 * const budget = new RetryBudget({ name: "orders-account" }); // one per account, shared by every call
 * try {
 *   await retry(({ abortSignal }) => table.upsertEntity({ partitionKey: "p", rowKey: "r", n: 1 }, "Merge", { abortSignal }), {
 *     budget,
 *     maxRetries: 5,
 *   });
 * } catch (error) {
 *   if (isRetryBudgetExhaustedError(error)) console.error("the service is overloaded: not retried", error.message);
 *   throw error;
 * }
 * ```
 */
export class RetryBudget {
  /** The settings, defaults filled in. */
  readonly options: Readonly<Required<RetryBudgetOptions>>;
  #tokens: number;

  constructor(options: RetryBudgetOptions = {}) {
    if (typeof options !== "object" || options === null) throw new TypeError("`options` must be an object.");
    const maxTokens = checkNumber("maxTokens", options.maxTokens ?? 100, { min: 0 });
    const retryCost = checkNumber("retryCost", options.retryCost ?? 1, { min: 0 });
    const successCredit = checkNumber("successCredit", options.successCredit ?? 0.1, { min: 0 });
    if (retryCost > maxTokens)
      throw new RangeError(
        `\`retryCost\` (${retryCost}) must be at most \`maxTokens\` (${maxTokens}), or no retry could ever be paid for.`,
      );
    const name = options.name ?? "default";
    if (typeof name !== "string" || name.length === 0)
      throw new TypeError("`name` must be a non-empty string, the budget's name in metrics and messages.");
    this.options = Object.freeze({ maxTokens, retryCost, successCredit, name });
    this.#tokens = maxTokens;
    noteBudget(this, name, maxTokens);
  }

  /** The tokens left. */
  get tokens(): number {
    return this.#tokens;
  }

  /**
   * Pays for one retry of a request that failed with `failure`: answers `true` and spends
   * `retryCost`, or answers `false` (spending nothing) when the budget cannot pay.
   *
   * @example
   * ```ts
   * import { RetryBudget } from "azure-storage-concurrency/throttling";
   *
   * const budget = new RetryBudget({ maxTokens: 2 });
   * budget.trySpend(); // true
   * budget.trySpend(); // true
   * budget.trySpend(); // false: the next retry must not be made
   * ```
   */
  trySpend(): boolean {
    const { retryCost, name } = this.options;
    if (this.#tokens < retryCost) {
      noteBudget(this, name, this.#tokens, "refused");
      return false;
    }
    this.#tokens -= retryCost;
    noteBudget(this, name, this.#tokens, "allowed");
    return true;
  }

  /**
   * Pays for one retry of a request that failed with `failure`, or throws the
   * {@link RetryBudgetExhaustedError} that says why it is not retried.
   *
   * @param operation - what the request did, phrased to follow "Could not" (`"write entity 'p/r'"`).
   *
   * @example
   * ```ts
   * import { RetryBudget } from "azure-storage-concurrency/throttling";
   *
   * const budget = new RetryBudget();
   * for (let attempt = 1; ; attempt++) {
   *   try {
   *     await queueClient.sendMessage("hello");
   *     if (attempt === 1) budget.credit();
   *     break;
   *   } catch (error) {
   *     if (attempt === 4) throw error;
   *     budget.spend(error, "send a message"); // throws RetryBudgetExhaustedError when empty
   *   }
   * }
   * ```
   */
  spend(failure: unknown, operation = "complete the storage operation"): void {
    if (this.trySpend()) return;
    throw this.exhausted(failure, operation);
  }

  /**
   * Credits one first-try success: `successCredit` tokens, up to `maxTokens`.
   *
   * @example
   * ```ts
   * import { RetryBudget } from "azure-storage-concurrency/throttling";
   *
   * const budget = new RetryBudget({ maxTokens: 10, successCredit: 0.5 });
   * budget.trySpend(); // 9 left
   * budget.credit(); // 9.5
   * ```
   */
  credit(): void {
    const { maxTokens, successCredit, name } = this.options;
    const before = this.#tokens;
    this.#tokens = Math.min(maxTokens, before + successCredit);
    if (this.#tokens !== before) noteBudget(this, name, this.#tokens);
  }

  /**
   * The error for a request that failed with `failure` and is not retried because the budget is
   * empty.
   *
   * @example
   * ```ts
   * import { RetryBudget } from "azure-storage-concurrency/throttling";
   *
   * const budget = new RetryBudget({ maxTokens: 0, retryCost: 0 });
   * const error = budget.exhausted(new Error("503"), "read blob 'a'");
   * console.log(error.code); // "RetryBudgetExhausted"
   * ```
   */
  exhausted(failure: unknown, operation: string): RetryBudgetExhaustedError {
    const statusCode = statusOf(failure);
    const serviceCode = serviceCodeOf(failure);
    const answer = statusCode === undefined ? "no answer" : `${statusCode}${serviceCode ? ` ${serviceCode}` : ""}`;
    const { name, successCredit, retryCost } = this.options;
    return new RetryBudgetExhaustedError(
      `Could not ${operation}: the service answered ${answer}, and the retry budget '${name}' is empty ` +
        `(${round(this.#tokens)} tokens left, a retry costs ${retryCost}): retries have outrun successes, so the ` +
        `service is overloaded and another retry would add to it. Not retried: try again later, slow the sends ` +
        `down (an AdaptiveRateLimiter does, per partition), or give the budget more room ` +
        `(maxTokens, successCredit ${successCredit}).`,
      { budget: name, tokens: this.#tokens, statusCode, serviceCode, cause: failure },
    );
  }
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
