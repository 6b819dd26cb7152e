/**
 * The one line each of the library's send sites uses: the call through the limiter when the caller
 * gave one, the call alone otherwise.
 */
import type { AdaptiveRateLimiter } from "./limiter.js";
import type { ThrottleScope } from "./scope.js";

/**
 * Runs `call` through `rateLimiter` under the scope `scopeOf()` names, or runs it alone when
 * `rateLimiter` is `undefined` (then `scopeOf` is not called): for code that takes an optional
 * limiter, as the library's own send sites do.
 *
 * @example
 * ```ts
 * import { runThrottled, throttleScopeOf, type AdaptiveRateLimiter } from "azure-storage-concurrency/throttling";
 *
 * async function receive(abortSignal: AbortSignal, rateLimiter?: AdaptiveRateLimiter) {
 *   return runThrottled(rateLimiter, () => throttleScopeOf(queueClient.url), () => queueClient.receiveMessages({ abortSignal }), abortSignal);
 * }
 * ```
 */
export function runThrottled<T>(
  rateLimiter: AdaptiveRateLimiter | undefined,
  scopeOf: () => ThrottleScope,
  call: () => Promise<T>,
  abortSignal?: AbortSignal,
): Promise<T> {
  if (rateLimiter === undefined) return call();
  return rateLimiter.run(scopeOf(), call, abortSignal ? { abortSignal } : {});
}
