/**
 * The lease locks' typed errors. Each extends `StorageConcurrencyError` (so it has `code`,
 * `statusCode`, `serviceCode` and `cause`) and comes with a guard that checks the brand and name.
 */
import { isStorageConcurrencyError, StorageConcurrencyError } from "../errors.js";

/** Why a held lock was lost. */
export type LeaseLossReason =
  /** The service refused a renewal (409/412): the lease was broken, or another client holds it. */
  | "renewal-rejected"
  /**
   * No renewal succeeded in time: the local expiry guard gave the lock up before the service could
   * let the lease expire and hand it to someone else.
   */
  | "expiry-guard"
  /** An adapter found out by other means (for example a lease-state check) that the lease is gone. */
  | "lease-gone";

/**
 * A held lock was lost. It is the `reason` of the handle's `signal` when that aborts, and what
 * `withLock` throws when the lock was lost while the callback ran.
 *
 * @example
 * ```ts
 * import { isLeaseLostError } from "azure-storage-concurrency/lease";
 *
 * handle.abortSignal.addEventListener("abort", () => {
 *   if (isLeaseLostError(handle.abortSignal.reason)) console.warn(`lost: ${handle.abortSignal.reason.reason}`);
 * });
 * ```
 */
export class LeaseLostError extends StorageConcurrencyError {
  /** Why the lock was lost. */
  readonly reason: LeaseLossReason;
  /** The lease id that no longer holds the lock. */
  readonly leaseId: string;

  constructor(
    message: string,
    options: { reason: LeaseLossReason; leaseId: string; statusCode?: number; serviceCode?: string; cause?: unknown },
  ) {
    super(message, { code: "LeaseLost", ...options });
    this.name = "LeaseLostError";
    this.reason = options.reason;
    this.leaseId = options.leaseId;
  }
}

/**
 * True when `error` is a {@link LeaseLostError}.
 *
 * @deprecated Use `isStorageConcurrencyError(error, "LeaseLost")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isLeaseLostError(error: unknown): error is LeaseLostError {
  return isStorageConcurrencyError(error) && error.name === "LeaseLostError";
}

/**
 * `acquire` gave up waiting: the lock stayed held by someone else for the whole `timeoutInMs`, or the
 * looks at it kept failing transiently; `cause` is the latest transient failure met while waiting
 * (503, a reset, a request cut off by its time limit), if there was one.
 *
 * @example
 * ```ts
 * import { isLockTimeoutError } from "azure-storage-concurrency/lease";
 *
 * try {
 *   await lock.acquire({ timeoutInMs: 5_000 });
 * } catch (error) {
 *   if (isLockTimeoutError(error)) console.log(`still held by ${error.holder?.host ?? "someone"}`);
 *   else throw error;
 * }
 * ```
 */
export class LockTimeoutError extends StorageConcurrencyError {
  /** How long `acquire` waited. */
  readonly timeoutInMs: number;
  /** Who held the lock when the wait ended, when the lock records it. */
  readonly holder:
    | {
        /** The holder's host name. */
        readonly host?: string;
        /** The holder's process id. */
        readonly pid?: number;
        /** The name the holder gave (`holderName`), if any. */
        readonly name?: string;
      }
    | undefined;

  constructor(message: string, options: { timeoutInMs: number; holder?: LockTimeoutError["holder"]; cause?: unknown }) {
    super(message, { code: "LockTimeout", cause: options.cause });
    this.name = "LockTimeoutError";
    this.timeoutInMs = options.timeoutInMs;
    this.holder = options.holder;
  }
}

/**
 * True when `error` is a {@link LockTimeoutError}.
 *
 * @deprecated Use `isStorageConcurrencyError(error, "LockTimeout")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isLockTimeoutError(error: unknown): error is LockTimeoutError {
  return isStorageConcurrencyError(error) && error.name === "LockTimeoutError";
}

/**
 * The thing to lease does not exist (a missing container, or a missing lock blob with
 * `createIfMissing: false`), and the lock may not create it.
 *
 * @example
 * ```ts
 * import { isLeaseTargetNotFoundError } from "azure-storage-concurrency/lease";
 *
 * const handle = await lock.tryAcquire().catch((error: unknown) => {
 *   if (isLeaseTargetNotFoundError(error)) console.error("create the container first");
 *   throw error;
 * });
 * ```
 */
export class LeaseTargetNotFoundError extends StorageConcurrencyError {
  constructor(message: string, options: { statusCode?: number; serviceCode?: string; cause?: unknown } = {}) {
    super(message, { code: "LeaseTargetNotFound", ...options });
    this.name = "LeaseTargetNotFoundError";
  }
}

/**
 * True when `error` is a {@link LeaseTargetNotFoundError}.
 *
 * @deprecated Use `isStorageConcurrencyError(error, "LeaseTargetNotFound")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isLeaseTargetNotFoundError(error: unknown): error is LeaseTargetNotFoundError {
  return isStorageConcurrencyError(error) && error.name === "LeaseTargetNotFoundError";
}

/**
 * A write guarded by a lock was refused before any request: the lock is not held (lost or
 * released), or it has less time left than the write asked for.
 *
 * @example
 * ```ts
 * import { isLockNotHeldError, type GuardedTable } from "azure-storage-concurrency/lease";
 *
 * declare const guarded: GuardedTable; // from tableLock(…).acquire()
 * await guarded.updateEntity({ partitionKey: "orders", rowKey: "42", status: "shipped" }).catch((error: unknown) => {
 *   if (isLockNotHeldError(error)) return; // someone else is in charge now
 *   throw error;
 * });
 * ```
 */
export class LockNotHeldError extends StorageConcurrencyError {
  /** How much time the lock had left (0 when lost or released). */
  readonly timeLeftInMs: number;

  constructor(message: string, options: { timeLeftInMs: number; cause?: unknown }) {
    super(message, { code: "LockNotHeld", cause: options.cause });
    this.name = "LockNotHeldError";
    this.timeLeftInMs = options.timeLeftInMs;
  }
}

/**
 * True when `error` is a {@link LockNotHeldError}.
 *
 * @deprecated Use `isStorageConcurrencyError(error, "LockNotHeld")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isLockNotHeldError(error: unknown): error is LockNotHeldError {
  return isStorageConcurrencyError(error) && error.name === "LockNotHeldError";
}

/**
 * A fenced write was refused: the data was already written under a later acquisition of the lock
 * (a higher fencing token), so this writer is a stale holder and must not overwrite it.
 *
 * @example
 * ```ts
 * import { isFencedWriteRejectedError, type GuardedTable } from "azure-storage-concurrency/lease";
 *
 * declare const guarded: GuardedTable; // from tableLock(…).acquire()
 * await guarded.updateEntity({ partitionKey: "orders", rowKey: "42", status: "shipped" }).catch((error: unknown) => {
 *   if (isFencedWriteRejectedError(error)) console.warn(`stale: token ${error.fencingToken} < ${error.currentToken}`);
 *   throw error;
 * });
 * ```
 */
export class FencedWriteRejectedError extends StorageConcurrencyError {
  /** The writer's fencing token. */
  readonly fencingToken: number;
  /** The token the data already carries. */
  readonly currentToken: number;
  /**
   * `false` when the write was refused before it could apply. `true` when an earlier attempt of it
   * got no answer: it may have been applied before the later holder wrote over it.
   */
  readonly mayHaveBeenApplied: boolean;

  constructor(
    message: string,
    options: { fencingToken: number; currentToken: number; mayHaveBeenApplied?: boolean; cause?: unknown },
  ) {
    super(message, { code: "FencedWriteRejected", cause: options.cause });
    this.name = "FencedWriteRejectedError";
    this.fencingToken = options.fencingToken;
    this.currentToken = options.currentToken;
    this.mayHaveBeenApplied = options.mayHaveBeenApplied ?? false;
  }
}

/**
 * True when `error` is a {@link FencedWriteRejectedError}.
 *
 * @deprecated Use `isStorageConcurrencyError(error, "FencedWriteRejected")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isFencedWriteRejectedError(error: unknown): error is FencedWriteRejectedError {
  return isStorageConcurrencyError(error) && error.name === "FencedWriteRejectedError";
}

/**
 * A fenced write got no answer, and reading the entity back could not tell whether it was applied:
 * the read failed too, or the write may still reach the service (the entity is as the write found
 * it, and the write was stopped, for example because the lock was lost). Read the entity before
 * doing the work again; its `lockWriteId` property (see `GuardedTableOptions.writeIdProperty`) is
 * `writeId` if it was applied.
 *
 * @example
 * ```ts
 * import { isFencedWriteOutcomeUnknownError, type GuardedTable } from "azure-storage-concurrency/lease";
 *
 * declare const guarded: GuardedTable; // from tableLock(…).acquire()
 * await guarded.upsertEntity({ partitionKey: "orders", rowKey: "42", status: "shipped" }).catch((error: unknown) => {
 *   if (isFencedWriteOutcomeUnknownError(error)) console.warn(`write ${error.writeId}: outcome unknown`);
 *   throw error;
 * });
 * ```
 */
export class FencedWriteOutcomeUnknownError extends StorageConcurrencyError {
  /** The id the write stamped on the entity: find it there to know that the write was applied. */
  readonly writeId: string;

  constructor(message: string, options: { writeId: string; cause?: unknown }) {
    super(message, { code: "FencedWriteOutcomeUnknown", cause: options.cause });
    this.name = "FencedWriteOutcomeUnknownError";
    this.writeId = options.writeId;
  }
}

/**
 * True when `error` is a {@link FencedWriteOutcomeUnknownError}.
 *
 * @deprecated Use `isStorageConcurrencyError(error, "FencedWriteOutcomeUnknown")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isFencedWriteOutcomeUnknownError(error: unknown): error is FencedWriteOutcomeUnknownError {
  return isStorageConcurrencyError(error) && error.name === "FencedWriteOutcomeUnknownError";
}
