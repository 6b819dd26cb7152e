/**
 * `azure-storage-concurrency/tables`: the table-design toolkit: key encoding, queries by key range, entity group
 * transactions (batched, or atomic with their outcome read back), and multi-index tables.
 *
 * @packageDocumentation
 */
export {
  TableKeyError,
  isTableKeyError,
  TableActionError,
  isTableActionError,
  TransactionRefusedError,
  isTransactionRefusedError,
  TableTransactionError,
  isTableTransactionError,
  MultiIndexConflictError,
  isMultiIndexConflictError,
  type TableKeyName,
  type TableKeyRule,
  type TableActionRule,
  type TransactionRefusalReason,
  type MultiIndexConflictReason,
} from "./errors.js";
export {
  padNumber,
  parsePaddedNumber,
  invertedTimestampKey,
  parseInvertedTimestampKey,
  compositeKey,
  parseCompositeKey,
  bucketOf,
  bucketedKey,
  bucketPrefixes,
  type CompositeKeyOptions,
  type BucketedKeyOptions,
} from "./keys.js";
export { tableKeyProblem, validateTableKey, MAX_TABLE_KEY_LENGTH, type TableAction } from "./validation.js";
export { TRANSACTION_LIMITS } from "./payload.js";
export { planTransactions, type PlanTransactionsOptions, type PlannedTransaction, type TableLocation } from "./plan.js";
export type { TransactionClient } from "./transaction.js";
export { writeBatch, type WriteBatchOptions, type WriteBatchResult, type TransactionOutcome } from "./batch.js";
export { writeAtomic, type WriteAtomicOptions, type WriteAtomicResult } from "./atomic.js";
export { WRITE_ID_PROPERTY } from "./write-id.js";
export {
  multiIndexTable,
  type MultiIndexTable,
  type MultiIndexOptions,
  type MultiIndexSnapshot,
  type MultiIndexRecord,
  type MultiIndexCallOptions,
  type MultiIndexModifyOptions,
  type MultiIndexListEntry,
  type MultiIndexClient,
} from "./multi-index.js";
export { classifyQuery, type QueryShape, type QueryKind, type KeyConstraint, type KeyBound } from "./query-shape.js";
export {
  odataString,
  prefixUpperBound,
  keyFilter,
  queryEntityPages,
  queryEntities,
  type KeyFilterOptions,
  type QueryEntitiesOptions,
  type QueryEntitiesResult,
  type EntityPage,
  type QueryClient,
} from "./query.js";
export type { OperationTracingOptions, TracingContext } from "../observability/scope.js";
