/**
 * `throttlingPolicy()`: the limiter and the budget as an Azure SDK pipeline policy, for the
 * application's own clients. Added per retry (`additionalPolicies: [{ policy, position: "perRetry" }]`),
 * it sits after the SDK's retry policy, so it sees every try, the SDK's own retries included:
 *
 * 1. a retry (the same request object coming through again: both the core retry policy and the
 *    storage one resend the request they were given) is paid for from the budget, or fails at once
 *    with a {@link RetryBudgetExhaustedError} (the SDKs' retry policies rethrow an error that is not
 *    a `RestError` without retrying it);
 * 2. the try waits for a token of its partition and account ({@link throttleScopeOf} on the
 *    request's URL and text body), abortably with the request's own signal;
 * 3. the answer (status, `x-ms-error-code` or the body's code, the body's message) teaches the
 *    limiter, and a first try that was served earns the budget its credit.
 *
 * The policy is typed structurally (no import of `@azure/core-rest-pipeline`, which the library
 * does not depend on) and fits `PipelinePolicy` of every SDK built on it.
 */
import { checkNumber } from "../internal/validate.js";
import type { RetryBudget } from "./budget.js";
import type { AdaptiveRateLimiter, RateLimiterPermit } from "./limiter.js";
import { throttleScopeOf, type StorageService } from "./scope.js";
import { codeInBody, messageInBody, verdictOfAnswer, type ThrottleVerdict } from "./verdict.js";

/** What the policy reads of a pipeline request (a subset of `PipelineRequest`). */
export interface ThrottledRequest {
  /** The request's URL. */
  readonly url: string;
  /** Its method. */
  readonly method: string;
  /** Its headers (the policy reads `DataServiceVersion`, which only Table requests carry). */
  readonly headers: {
    /** The value of header `name`, if the request has it. */
    get(name: string): string | undefined;
  };
  /** Its body: read when it is text (an insert's or a `$batch`'s PartitionKey). */
  readonly body?: unknown;
  /** Cancels the request, and the policy's wait for a token. */
  readonly abortSignal?:
    | AbortSignal
    | {
        /** Whether the request was cancelled. */
        readonly aborted: boolean;
      }
    | undefined;
}

/** What the policy reads of a pipeline response (a subset of `PipelineResponse`). */
export interface ThrottledResponse {
  /** The HTTP status. */
  readonly status: number;
  /** The response headers (`x-ms-error-code`). */
  readonly headers: {
    /** The value of header `name`, if the response has it. */
    get(name: string): string | undefined;
  };
  /** The body as text, when the SDK read it (error answers): the code and message of a Table error are there only. */
  readonly bodyAsText?: string | null;
}

/** An Azure SDK pipeline policy (`PipelinePolicy` of `@azure/core-rest-pipeline`). */
export interface ThrottlingPipelinePolicy {
  /** The policy's name in the pipeline: `"ascThrottlingPolicy"`. */
  readonly name: string;
  /** Sends one try of the request through the limiter and the budget. */
  sendRequest<Req extends ThrottledRequest, Res extends ThrottledResponse>(
    request: Req,
    next: (request: Req) => Promise<Res>,
  ): Promise<Res>;
}

/** Options for {@link throttlingPolicy}: give a limiter, a budget, or both. */
export interface ThrottlingPolicyOptions {
  /** Each try waits for a token of its partition and account, and its answer teaches the limiter. */
  readonly rateLimiter?: AdaptiveRateLimiter;
  /** Each retry of the SDK's is paid for from it; a first try that was served credits it. */
  readonly budget?: RetryBudget;
  /**
   * The client's service, for path-style URLs on other ports than Azurite's defaults (a proxy, a
   * custom emulator); an Azure host name says it itself. See {@link ThrottleScopeOptions.service}.
   */
  readonly service?: StorageService;
}

/** The policy's name: one per pipeline. */
const POLICY_NAME = "ascThrottlingPolicy";

interface Tries {
  count: number;
  /** The last failed try's answer, for the budget's error. */
  lastFailure: unknown;
}

/**
 * An Azure SDK pipeline policy that sends every try through `rateLimiter` and pays every retry from
 * `budget` (see the module documentation). Add it to a client per retry.
 *
 * @example
 * ```ts
 * import { TableClient } from "@azure/data-tables";
 * import { AdaptiveRateLimiter, RetryBudget, throttlingPolicy } from "azure-storage-concurrency/throttling";
 *
 * // One limiter and one budget per account, shared by all its clients.
 * const rateLimiter = new AdaptiveRateLimiter();
 * const budget = new RetryBudget();
 * const table = TableClient.fromConnectionString(connectionString, "orders", {
 *   additionalPolicies: [{ policy: throttlingPolicy({ rateLimiter, budget }), position: "perRetry" }],
 * });
 * ```
 */
export function throttlingPolicy(options: ThrottlingPolicyOptions): ThrottlingPipelinePolicy {
  if (typeof options !== "object" || options === null)
    throw new TypeError("`options` must be an object: { rateLimiter, budget }.");
  const { rateLimiter, budget, service } = options;
  if (rateLimiter === undefined && budget === undefined)
    throw new TypeError("`throttlingPolicy` needs a `rateLimiter`, a `budget`, or both.");
  if (rateLimiter !== undefined && typeof rateLimiter.acquire !== "function")
    throw new TypeError("`rateLimiter` must be an AdaptiveRateLimiter.");
  if (budget !== undefined && typeof budget.trySpend !== "function")
    throw new TypeError("`budget` must be a RetryBudget.");
  if (service !== undefined && !["blob", "queue", "table", "file"].includes(service))
    throw new RangeError(`\`service\` must be "blob", "queue", "table" or "file", got ${JSON.stringify(service)}.`);
  const tries = new WeakMap<object, Tries>();

  return {
    name: POLICY_NAME,
    async sendRequest<Req extends ThrottledRequest, Res extends ThrottledResponse>(
      request: Req,
      next: (request: Req) => Promise<Res>,
    ): Promise<Res> {
      const seen = tries.get(request) ?? { count: 0, lastFailure: undefined };
      tries.set(request, seen);
      seen.count += 1;
      if (seen.count > 1 && budget && !budget.trySpend()) {
        throw budget.exhausted(seen.lastFailure, `send ${request.method} ${pathOf(request.url)}`);
      }
      let permit: RateLimiterPermit | undefined;
      if (rateLimiter) {
        const body = typeof request.body === "string" ? request.body : undefined;
        const isTable = request.headers.get("dataserviceversion") !== undefined;
        const scope = throttleScopeOf(request.url, { service: service ?? (isTable ? "table" : undefined), body });
        const signal = request.abortSignal as AbortSignal | undefined;
        permit = await rateLimiter.acquire(scope, signal ? { abortSignal: signal } : {});
      }
      let response: Res;
      try {
        response = await next(request);
      } catch (error) {
        if (permit) rateLimiter!.record(permit, error);
        seen.lastFailure = error;
        throw error;
      }
      const verdict = verdictOf(response);
      if (permit) rateLimiter!.recordVerdict(permit, verdict);
      if (response.status >= 400) seen.lastFailure = failureOf(response);
      else if (seen.count === 1 && verdict === "served") budget?.credit();
      return response;
    },
  };
}

function verdictOf(response: ThrottledResponse): ThrottleVerdict {
  if (response.status < 400) return "served";
  const body = response.bodyAsText;
  return verdictOfAnswer({
    statusCode: response.status,
    serviceCode: response.headers.get("x-ms-error-code") ?? codeInBody(body),
    message: messageInBody(body),
  });
}

/** A failed answer as the library's error readers see an SDK error (status and code). */
function failureOf(response: ThrottledResponse): unknown {
  const code = response.headers.get("x-ms-error-code") ?? codeInBody(response.bodyAsText);
  return {
    name: "RestError",
    statusCode: checkNumber("status", response.status, { min: 100, max: 599 }),
    code,
    message: messageInBody(response.bodyAsText) ?? "",
  };
}

function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return "the request";
  }
}
