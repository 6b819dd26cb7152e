/**
 * `azure-storage-concurrency/errors`: the error base, what the library reads out of the SDKs'
 * errors, and the safe way to put any thrown value into words.
 *
 * @packageDocumentation
 */
export {
  StorageConcurrencyError,
  StorageRequestError,
  isStorageConcurrencyError,
  isStorageRequestError,
  readRestError,
  statusOf,
  serviceCodeOf,
  redactSecrets,
  NETWORK_CODES,
  type StorageConcurrencyErrorOptions,
  type RestErrorInfo,
} from "./errors.js";
export { describeError } from "./internal/describe-error.js";
import type { StorageConcurrencyError, StorageRequestError } from "./errors.js";
import type {
  FileContentError,
  FileLeaseConflictError,
  FileWriteNotConfirmedError,
  SmbConflictError,
} from "./files/index.js";
import type {
  IdempotencyClaimLostError,
  IdempotencyInProgressError,
  IdempotencyPayloadMismatchError,
} from "./idempotency/index.js";
import type {
  FencedWriteOutcomeUnknownError,
  FencedWriteRejectedError,
  LeaseLostError,
  LeaseTargetNotFoundError,
  LockNotHeldError,
  LockTimeoutError,
} from "./lease/index.js";
import type {
  CellContentError,
  OptimisticConflictError,
  OptimisticOutcomeUnknownError,
  TableEntityTooLargeError,
} from "./optimistic/index.js";
import type {
  ConsumerResourceError,
  ConsumerStoppedError,
  EffectsRefusedError,
  HandlerTimeoutError,
  MessageDecodeError,
  MessageOwnershipLostError,
} from "./queue/index.js";
import type {
  MultiIndexConflictError,
  TableActionError,
  TableKeyError,
  TableTransactionError,
  TransactionRefusedError,
} from "./tables/index.js";

/**
 * Every `code` the library's errors carry, with the class that carries it: what
 * `isStorageConcurrencyError(error, code)` narrows to. The classes stay for `instanceof` and for
 * `cause` chains; the code is the stable thing to switch on (type imports only: reading this map
 * loads no feature).
 */
export interface StorageConcurrencyErrorByCode {
  // A storage request failed and the library passes the failure on (any feature).
  StorageRequestFailed: StorageRequestError;
  RequestTimedOut: StorageRequestError;
  // /optimistic
  OptimisticConflict: OptimisticConflictError;
  OptimisticOutcomeUnknown: OptimisticOutcomeUnknownError;
  /** A container's metadata changed since it was read (a 412 of the metadata cell's own check). */
  ConditionNotMet: StorageConcurrencyError;
  InvalidJson: CellContentError;
  InvalidText: CellContentError;
  EntityTooLarge: TableEntityTooLargeError;
  PropertyValueTooLarge: TableEntityTooLargeError;
  TooManyProperties: TableEntityTooLargeError;
  // /lease
  LeaseLost: LeaseLostError;
  LockTimeout: LockTimeoutError;
  LeaseTargetNotFound: LeaseTargetNotFoundError;
  LockNotHeld: LockNotHeldError;
  FencedWriteRejected: FencedWriteRejectedError;
  FencedWriteOutcomeUnknown: FencedWriteOutcomeUnknownError;
  // /tables
  InvalidTableKey: TableKeyError;
  InvalidTableAction: TableActionError;
  TransactionRefused: TransactionRefusedError;
  TransactionFailed: TableTransactionError;
  MultiIndexConflict: MultiIndexConflictError;
  // /queue
  MessageDecodeFailed: MessageDecodeError;
  MessageOwnershipLost: MessageOwnershipLostError;
  ClaimOwnershipLost: MessageOwnershipLostError;
  ConsumerStopped: ConsumerStoppedError;
  HandlerTimedOut: HandlerTimeoutError;
  ConsumerResourceFailed: ConsumerResourceError;
  EffectsRefused: EffectsRefusedError;
  // /idempotency
  IdempotencyPayloadMismatch: IdempotencyPayloadMismatchError;
  IdempotencyInProgress: IdempotencyInProgressError;
  IdempotencyClaimLost: IdempotencyClaimLostError;
  // /files
  SmbFileLocked: SmbConflictError;
  SmbDeletePending: SmbConflictError;
  FileLeaseNotHeld: FileLeaseConflictError;
  FileLeasedByAnother: FileLeaseConflictError;
  FileWriteNotConfirmed: FileWriteNotConfirmedError;
  FileContentNotDecodable: FileContentError;
}

/** A `code` of the library's errors (`"LeaseLost"`, `"OptimisticConflict"`, …). */
export type StorageConcurrencyErrorCode = keyof StorageConcurrencyErrorByCode;

/** The error that carries `C`, with its `code` narrowed to `C`. */
export type StorageConcurrencyErrorOf<C extends StorageConcurrencyErrorCode> = StorageConcurrencyErrorByCode[C] & {
  readonly code: C;
};
