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
export { networkHint, statusHint } from "./internal/hints.js";
import type { StorageConcurrencyError, StorageRequestError } from "./errors.js";
import type { ClaimCheckPayloadMissingError, ClaimCheckSendError } from "./claim-check/index.js";
import type { OutboxPayloadTooLargeError } from "./outbox/index.js";
import type { ScheduleStatusError, ScheduleStoppedError } from "./schedule/index.js";
import type { SemaphoreTimeoutError } from "./semaphore/index.js";
import type { RetryBudgetExhaustedError } from "./errors.js";
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
  /** Carried by `StorageRequestError`, from the package root. */
  StorageRequestFailed: StorageRequestError;
  /** Carried by `StorageRequestError`, from the package root. */
  RequestTimedOut: StorageRequestError;
  /** Carried by `StorageRequestError`: the SDK refused to send the request (a set-up error), so nothing was applied. */
  RequestNotSent: StorageRequestError;
  // /optimistic
  /** Carried by `OptimisticConflictError`, from `azure-storage-concurrency/optimistic`. */
  OptimisticConflict: OptimisticConflictError;
  /** Carried by `OptimisticOutcomeUnknownError`, from `azure-storage-concurrency/optimistic`. */
  OptimisticOutcomeUnknown: OptimisticOutcomeUnknownError;
  /** A container's metadata changed since it was read (a 412 of the metadata cell's own check). */
  ConditionNotMet: StorageConcurrencyError;
  /** Carried by `CellContentError`, from `azure-storage-concurrency/optimistic`. */
  InvalidJson: CellContentError;
  /** Carried by `CellContentError`, from `azure-storage-concurrency/optimistic`. */
  InvalidText: CellContentError;
  /** Carried by `TableEntityTooLargeError`, from `azure-storage-concurrency/optimistic`. */
  EntityTooLarge: TableEntityTooLargeError;
  /** Carried by `TableEntityTooLargeError`, from `azure-storage-concurrency/optimistic`. */
  PropertyValueTooLarge: TableEntityTooLargeError;
  /** Carried by `TableEntityTooLargeError`, from `azure-storage-concurrency/optimistic`. */
  TooManyProperties: TableEntityTooLargeError;
  // /lease
  /** Carried by `LeaseLostError`, from `azure-storage-concurrency/lease`. */
  LeaseLost: LeaseLostError;
  /** Carried by `LockTimeoutError`, from `azure-storage-concurrency/lease`. */
  LockTimeout: LockTimeoutError;
  /** Carried by `LeaseTargetNotFoundError`, from `azure-storage-concurrency/lease`. */
  LeaseTargetNotFound: LeaseTargetNotFoundError;
  /** Carried by `LockNotHeldError`, from `azure-storage-concurrency/lease`. */
  LockNotHeld: LockNotHeldError;
  /** Carried by `FencedWriteRejectedError`, from `azure-storage-concurrency/lease`. */
  FencedWriteRejected: FencedWriteRejectedError;
  /** Carried by `FencedWriteOutcomeUnknownError`, from `azure-storage-concurrency/lease`. */
  FencedWriteOutcomeUnknown: FencedWriteOutcomeUnknownError;
  // /tables
  /** Carried by `TableKeyError`, from `azure-storage-concurrency/tables`. */
  InvalidTableKey: TableKeyError;
  /** Carried by `TableActionError`, from `azure-storage-concurrency/tables`. */
  InvalidTableAction: TableActionError;
  /** Carried by `TransactionRefusedError`, from `azure-storage-concurrency/tables`. */
  TransactionRefused: TransactionRefusedError;
  /** Carried by `TableTransactionError`, from `azure-storage-concurrency/tables`. */
  TransactionFailed: TableTransactionError;
  /** Carried by `MultiIndexConflictError`, from `azure-storage-concurrency/tables`. */
  MultiIndexConflict: MultiIndexConflictError;
  // /queue
  /** Carried by `MessageDecodeError`, from `azure-storage-concurrency/queue`. */
  MessageDecodeFailed: MessageDecodeError;
  /** Carried by `MessageOwnershipLostError`, from `azure-storage-concurrency/queue`. */
  MessageOwnershipLost: MessageOwnershipLostError;
  /** Carried by `MessageOwnershipLostError`, from `azure-storage-concurrency/queue`. */
  ClaimOwnershipLost: MessageOwnershipLostError;
  /** Carried by `ConsumerStoppedError`, from `azure-storage-concurrency/queue`. */
  ConsumerStopped: ConsumerStoppedError;
  /** Carried by `HandlerTimeoutError`, from `azure-storage-concurrency/queue`. */
  HandlerTimedOut: HandlerTimeoutError;
  /** Carried by `ConsumerResourceError`, from `azure-storage-concurrency/queue`. */
  ConsumerResourceFailed: ConsumerResourceError;
  /** Carried by `EffectsRefusedError`, from `azure-storage-concurrency/queue`. */
  EffectsRefused: EffectsRefusedError;
  // /idempotency
  /** Carried by `IdempotencyPayloadMismatchError`, from `azure-storage-concurrency/idempotency`. */
  IdempotencyPayloadMismatch: IdempotencyPayloadMismatchError;
  /** Carried by `IdempotencyInProgressError`, from `azure-storage-concurrency/idempotency`. */
  IdempotencyInProgress: IdempotencyInProgressError;
  /** Carried by `IdempotencyClaimLostError`, from `azure-storage-concurrency/idempotency`. */
  IdempotencyClaimLost: IdempotencyClaimLostError;
  // /files
  /** Carried by `SmbConflictError`, from `azure-storage-concurrency/files`. */
  SmbFileLocked: SmbConflictError;
  /** Carried by `SmbConflictError`, from `azure-storage-concurrency/files`. */
  SmbDeletePending: SmbConflictError;
  /** Carried by `FileLeaseConflictError`, from `azure-storage-concurrency/files`. */
  FileLeaseNotHeld: FileLeaseConflictError;
  /** Carried by `FileLeaseConflictError`, from `azure-storage-concurrency/files`. */
  FileLeasedByAnother: FileLeaseConflictError;
  /** Carried by `FileWriteNotConfirmedError`, from `azure-storage-concurrency/files`. */
  FileWriteNotConfirmed: FileWriteNotConfirmedError;
  /** Carried by `FileContentError`, from `azure-storage-concurrency/files`. */
  FileContentNotDecodable: FileContentError;
  // /semaphore
  /** Carried by `SemaphoreTimeoutError`, from `azure-storage-concurrency/semaphore`. */
  SemaphoreTimeout: SemaphoreTimeoutError;
  // /schedule
  /** Carried by `ScheduleStoppedError`, from `azure-storage-concurrency/schedule`. */
  ScheduleStopped: ScheduleStoppedError;
  /** Carried by `ScheduleStatusError`, from `azure-storage-concurrency/schedule`. */
  ScheduleStatusInvalid: ScheduleStatusError;
  // /claim-check
  /** Carried by `ClaimCheckPayloadMissingError`, from `azure-storage-concurrency/claim-check`. */
  ClaimCheckPayloadMissing: ClaimCheckPayloadMissingError;
  /** Carried by `StorageRequestError`: a claim-check payload arrived cut short (transient). */
  ClaimCheckPayloadIncomplete: StorageRequestError;
  /** Carried by `ClaimCheckSendError`, from `azure-storage-concurrency/claim-check`. */
  ClaimCheckSendFailed: ClaimCheckSendError;
  // /outbox
  /** Carried by `OutboxPayloadTooLargeError`, from `azure-storage-concurrency/outbox`. */
  OutboxPayloadTooLarge: OutboxPayloadTooLargeError;
  // /throttling
  /** Carried by `RetryBudgetExhaustedError`, from `azure-storage-concurrency/throttling`. */
  RetryBudgetExhausted: RetryBudgetExhaustedError;
}

/** A `code` of the library's errors (`"LeaseLost"`, `"OptimisticConflict"`, …). */
export type StorageConcurrencyErrorCode = keyof StorageConcurrencyErrorByCode;

/** The error that carries `C`, with its `code` narrowed to `C`. */
export type StorageConcurrencyErrorOf<C extends StorageConcurrencyErrorCode> = StorageConcurrencyErrorByCode[C] & {
  /** The code the guard was given. */
  readonly code: C;
};
