/**
 * `azure-storage-concurrency/lease`: lease-based locks that renew themselves and say when they are lost, over blobs,
 * containers, files and shares; blob-lease locks that guard Azure Tables; leader election.
 *
 * @packageDocumentation
 */
export {
  type Leasable,
  type LeasableProperties,
  type LeasableRequestOptions,
  type LeasableRenewOptions,
  type LeasableMetadataWriteOptions,
  type LeaseState,
  type LeaseDurationType,
  INFINITE_LEASE_SECONDS,
} from "./leasable.js";
export { blobLeasable, blobLock } from "./blob.js";
export { containerLeasable, containerLock } from "./container.js";
export { fileLeasable, fileLock, type FileLeasableOptions, type FileLockOptions } from "./file.js";
export { shareLeasable, shareLock, type ShareLeasableOptions, type ShareLockOptions } from "./share.js";
export {
  LeaseLock,
  describeHolder,
  type AcquireOptions,
  type TryAcquireOptions,
  type BreakLockOptions,
  type LockInfo,
} from "./lock.js";
export { type LockHandle, type LockStatus, type AssertHeldOptions } from "./handle.js";
export {
  type LeaseLockOptions,
  type ResolvedLeaseLockOptions,
  MIN_LEASE_SECONDS,
  MAX_LEASE_SECONDS,
} from "./options.js";
export { LOCK_METADATA, readLockRecord, type LockHolder, type LockRecord } from "./holder.js";
export {
  LeaseLostError,
  isLeaseLostError,
  LockTimeoutError,
  isLockTimeoutError,
  LeaseTargetNotFoundError,
  isLeaseTargetNotFoundError,
  LockNotHeldError,
  isLockNotHeldError,
  FencedWriteRejectedError,
  isFencedWriteRejectedError,
  FencedWriteOutcomeUnknownError,
  isFencedWriteOutcomeUnknownError,
  type LeaseLossReason,
} from "./errors.js";
export { startLeaderElection, type LeaderElection, type LeaderElectionOptions } from "./election.js";
export { tableLock, TableLock, type TableLockOptions } from "./table-lock.js";
export {
  guardTable,
  type TableLockScope,
  type GuardedTable,
  type GuardedTableOptions,
  type GuardedEntity,
  type FencedWriteOptions,
} from "./guarded-table.js";
// Listing a container's locks (what `lock list` prints), from the listing alone.
export { listLocks, type ListLocksOptions, type ListPageRunner, type LockRow } from "./lock-listing.js";
export type { OperationTracingOptions, TracingContext } from "../observability/scope.js";
