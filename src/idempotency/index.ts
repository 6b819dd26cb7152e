/**
 * `azure-storage-concurrency/idempotency`: exactly-once effects for work that may be delivered or
 * called more than once. Idempotency stores (an Azure Table, or memory for tests) keep a record per
 * key: claimed while the work runs, done with its result afterwards; `idempotent(fn)` wraps any
 * async function with one; the queue consumer (`/queue`) uses one per message.
 *
 * @packageDocumentation
 */
export {
  MAX_RESULT_JSON_LENGTH,
  type IdempotencyStore,
  type ClaimRequest,
  type ClaimOutcome,
  type IdempotencyClaim,
  type CompleteOptions,
  type CompleteEntry,
  type PurgeOptions,
  type PurgeResult,
  type IdempotencyStoreCallOptions,
} from "./store.js";
export {
  MemoryIdempotencyStore,
  type MemoryEffect,
  type MemoryIdempotencyStoreOptions,
  type MemoryIdempotencyRecord,
} from "./memory.js";
export { TableIdempotencyStore, type TableIdempotencyStoreOptions } from "./table.js";
export {
  idempotent,
  type IdempotentContext,
  type IdempotentCallOptions,
  type IdempotentFunction,
  type JsonRoundTrip,
  type JsonValueOf,
} from "./idempotent.js";
export type { IdempotentOptions } from "./idempotent-options.js";
export {
  IdempotencyClaimLostError,
  isIdempotencyClaimLostError,
  IdempotencyPayloadMismatchError,
  isIdempotencyPayloadMismatchError,
  IdempotencyInProgressError,
  isIdempotencyInProgressError,
  type IdempotencyClaimLossReason,
} from "./errors.js";
