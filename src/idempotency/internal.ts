/**
 * The door of the library's other features into `idempotency/`: its public entry point, and what
 * the queue consumer needs beyond it (the store calls, the claim guard). Never an entry point of the
 * package; the layering test (tests/unit/project/layering.test.ts) lets a feature import another
 * only through its `index.ts` or its `internal.ts`.
 */
export * from "./index.js";
export { ClaimGuard, claimGivenUp, safetyMarginInMs } from "./claim-guard.js";
export { checkRetention } from "./purge.js";
export { serializeResult } from "./store.js";
export { StoreCalls } from "./store-calls.js";
export { idempotentDelivery } from "./idempotent.js";
export {
  IdempotencyKeys,
  headerPairs,
  type IdempotencyKeyOptions,
  type IdempotencyOfRequest,
  type KeyedRequest,
} from "./http-keys.js";
export type { CapturedHttpResponse } from "./http-response.js";
