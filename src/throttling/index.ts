/**
 * Throttling: slow down a busy partition instead of hammering it (exported from the package's main
 * entry point).
 *
 * - {@link AdaptiveRateLimiter}: a client-side send rate per partition, queue, blob and account,
 *   learned from the service's answers (CUBIC: cut on 503 ServerBusy / 500 OperationTimedOut, grow
 *   back on success); requests wait for a token before they are sent.
 * - {@link RetryBudget}: retries spend tokens that first-try successes earn back; when it is empty,
 *   a failed request is not retried ({@link RetryBudgetExhaustedError}).
 * - {@link throttlingPolicy}: both, as a pipeline policy for the application's own SDK clients.
 * - {@link throttleScopeOf}: what the service throttles a request by (its account and partition).
 *
 * The throttling model to measure them against is in the testing kit
 * (`createFaultProxy({ target, throttling })`).
 * See docs/throttling.md.
 *
 * @packageDocumentation
 */
export {
  AdaptiveRateLimiter,
  type AdaptiveRateLimiterOptions,
  type RateLimiterWaitOptions,
  type RateLimiterPermit,
  type RateLimiterKeyState,
} from "./limiter.js";
export { RetryBudget, type RetryBudgetOptions } from "./budget.js";
export {
  throttlingPolicy,
  type ThrottlingPolicyOptions,
  type ThrottlingPipelinePolicy,
  type ThrottledRequest,
  type ThrottledResponse,
} from "./policy.js";
export {
  throttleScopeOf,
  partitionKeyInBody,
  type ThrottleScope,
  type ThrottleScopeOptions,
  type StorageService,
} from "./scope.js";
export { verdictOfAnswer, type ThrottleVerdict, type AnswerInfo } from "./verdict.js";
export { runThrottled } from "./run.js";
export { RetryBudgetExhaustedError, isRetryBudgetExhaustedError } from "../errors.js";
export type { LimiterClock } from "./limiter.js";
