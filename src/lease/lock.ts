/**
 * The lease lock engine: acquire (at once, or waiting), fencing tokens and holder records, a scoped
 * helper, inspection and breaking, over any {@link Leasable}.
 *
 * Acquiring is safe against lost responses: one `acquire()` call proposes one lease id for all its
 * attempts, and the service grants an acquire whose proposed id already holds the lease. So when an
 * attempt's outcome is unknown (a network failure after the SDK's own retries), the next attempt
 * goes straight to the service again instead of reading a lease state that may be its own; and a
 * call that gives up after such an attempt releases that id, leaving no orphaned lease behind.
 *
 * Every attempt first reads the lease state and the lock's record (one HEAD) and only tries to
 * acquire when the lease looks free, so waiters do not flood the service with 409s; waiting repeats
 * that at jittered intervals. The read costs nothing extra: its ETag lets the new record be written
 * without reading it again after the acquire (see `#recordAcquisition`).
 */
import { classifyError, wrapStorageError } from "../retry/classify.js";
import { isStorageConcurrencyError, serviceCodeOf, statusOf } from "../errors.js";
import { logger } from "../internal/logger.js";
import { sleep, uniform } from "../internal/sleep.js";
import { checkNumber, checkOptionalSignal } from "../internal/validate.js";
import { LeaseTargetNotFoundError, LockTimeoutError } from "./errors.js";
import { isLeaseGone, newLeaseId, startHandle, type LockHandle } from "./handle.js";
import { buildLockMetadata, readLockRecord, type LockHolder } from "./holder.js";
import {
  INFINITE_LEASE_SECONDS,
  type Leasable,
  type LeasableProperties,
  type LeaseDurationType,
  type LeaseState,
} from "./leasable.js";
import { resolveLeaseLockOptions, type LeaseLockOptions, type ResolvedLeaseLockOptions } from "./options.js";

/** Options for {@link LeaseLock.tryAcquire}. */
export interface TryAcquireOptions {
  /** Cancels the attempt. */
  readonly abortSignal?: AbortSignal;
}

/** Options for {@link LeaseLock.acquire} and {@link LeaseLock.withLock}. */
export interface AcquireOptions {
  /**
   * How long to wait for the lock before failing with a `LockTimeoutError` (or, when the leasable
   * was waiting out a conflict that is not another holder, such as an SMB client holding a file,
   * with that conflict's error).
   * @default Infinity
   */
  readonly timeoutInMs?: number;
  /** Cancels the wait; the promise rejects with the signal's reason. */
  readonly abortSignal?: AbortSignal;
}

/** Options for {@link LeaseLock.break}. */
export interface BreakLockOptions {
  /**
   * Seconds (0-60) the lease stays locked before it is broken; 0 breaks it at once. A holder that
   * renews (or checks) more often than this notices the break and stops before it completes.
   * @default 0
   */
  readonly breakPeriodInSeconds?: number;
  /** Cancels the request. */
  readonly abortSignal?: AbortSignal;
}

/** What {@link LeaseLock.inspect} reads. */
export interface LockInfo {
  /** What is leased. */
  readonly description: string;
  /** Whether the lock blob (or container) exists yet. */
  readonly exists: boolean;
  /** The lease state. */
  readonly state: LeaseState;
  /** Whether someone holds the lease now (state `leased` or `breaking`). */
  readonly held: boolean;
  /** For a held lease, fixed or infinite. */
  readonly durationType: LeaseDurationType | undefined;
  /** The latest acquisition's fencing token (0 before the first). */
  readonly fencingToken: number;
  /** The holder recorded by the latest acquisition (the current holder when `held`). */
  readonly holder: LockHolder | undefined;
}

/**
 * A lock over a {@link Leasable}: a value to keep and share; each `acquire` gives a
 * {@link LockHandle} whose lease is renewed in the background until released.
 *
 * @example
 * ```ts
 * import { BlobServiceClient } from "@azure/storage-blob";
 * import { blobLock } from "azure-storage-concurrency";
 *
 * const container = BlobServiceClient.fromConnectionString(process.env.AZURE_STORAGE_CONNECTION_STRING!)
 *   .getContainerClient("locks");
 * const lock = blobLock(container, "nightly-report", { durationInSeconds: 15 });
 * declare function buildReport(options: { abortSignal: AbortSignal }): Promise<void>; // your own work
 *
 * await lock.withLock(async (handle) => {
 *   await buildReport({ abortSignal: handle.signal });
 * }, { timeoutInMs: 30_000 });
 * ```
 */
export class LeaseLock {
  /** The leasable this lock takes leases on. */
  readonly leasable: Leasable;
  /** The options, with defaults filled in. */
  readonly options: ResolvedLeaseLockOptions;

  constructor(leasable: Leasable, options: LeaseLockOptions = {}) {
    if (typeof leasable !== "object" || leasable === null || typeof leasable.acquire !== "function") {
      throw new TypeError("`leasable` must be a Leasable (for example blobLeasable(container, name)).");
    }
    this.leasable = leasable;
    this.options = resolveLeaseLockOptions(leasable, options);
  }

  /**
   * Takes the lock if it is free: resolves with a handle, or `undefined` when someone holds it.
   *
   * @example
   * ```ts
   * declare function work(signal: AbortSignal): Promise<void>; // your own work
   *
   * const held = await lock.tryAcquire();
   * if (!held) console.log("someone else is on it");
   * else {
   *   try { await work(held.signal); } finally { await held.release(); }
   * }
   * ```
   */
  async tryAcquire(options: TryAcquireOptions = {}): Promise<LockHandle | undefined> {
    checkOptionalSignal("abortSignal", options.abortSignal);
    const leaseId = newLeaseId();
    const known = await this.leasable
      .getProperties({ abortSignal: options.abortSignal })
      .catch((error: unknown) =>
        Promise.reject(wrapStorageError(error, `read the lease state of ${this.leasable.description}`)),
      );
    if (isHeld(known)) return undefined;
    try {
      try {
        return await this.#attempt(leaseId, options.abortSignal, known);
      } catch (error) {
        // The answer was lost: asking again with the same proposed id settles it (granted, or 409).
        if (!isUncertain(error) || options.abortSignal?.aborted) throw error;
        return await this.#attempt(leaseId, options.abortSignal);
      }
    } catch (error) {
      await this.#forget(leaseId); // the service may have granted it before the failure
      throw wrapStorageError(error, `take the lock on ${this.leasable.description}`);
    }
  }

  /**
   * Takes the lock, waiting for it as long as `timeoutInMs` allows (forever by default).
   *
   * @example
   * ```ts
   * await using handle = await lock.acquire({ timeoutInMs: 10_000 });
   * console.log(`holding it with fencing token ${handle.fencingToken}`);
   * ```
   */
  async acquire(options: AcquireOptions = {}): Promise<LockHandle> {
    checkOptionalSignal("abortSignal", options.abortSignal);
    const timeoutInMs = checkNumber("timeoutInMs", options.timeoutInMs ?? Infinity, { min: 0, allowInfinity: true });
    const leaseId = newLeaseId();
    const controller = new AbortController();
    const onAbort = () => controller.abort(options.abortSignal!.reason);
    options.abortSignal?.addEventListener("abort", onAbort, { once: true });
    if (options.abortSignal?.aborted) onAbort();
    let lastHolder: LockHolder | undefined;
    const timer =
      timeoutInMs === Infinity
        ? undefined
        : setTimeout(
            () =>
              controller.abort(
                new LockTimeoutError(
                  `Could not take the lock on ${this.leasable.description} within ${timeoutInMs} ms` +
                    `${lastHolder ? `: held by ${describeHolder(lastHolder)}` : ""}.`,
                  { timeoutInMs, holder: lastHolder },
                ),
              ),
            timeoutInMs,
          );
    const signal = controller.signal;
    let uncertain = false;
    try {
      for (let first = true; ; first = false) {
        let known: LeasableProperties | undefined;
        if (!first) await sleep(this.#pollDelay(), signal);
        if (!uncertain) {
          const properties = await this.leasable.getProperties({ abortSignal: signal }).catch((error: unknown) => {
            if (classifyError(error).transient) return "unknown" as const;
            throw error;
          });
          if (properties === "unknown") continue;
          if (isHeld(properties)) {
            lastHolder = readLockRecord(properties!.metadata).holder;
            continue;
          }
          known = properties;
        }
        try {
          const handle = await this.#attempt(leaseId, signal, known);
          if (handle) return handle;
          uncertain = false;
        } catch (error) {
          if (!isUncertain(error) || signal.aborted) throw error;
          uncertain = true;
          logger.warning(`acquiring the lock on ${this.leasable.description} failed transiently; trying again`);
        }
      }
    } catch (error) {
      // An acquire in flight when the wait was cancelled (or one whose answer was lost) may have
      // been granted: give that lease id back so that nothing is left held until it expires.
      await this.#forget(leaseId);
      // When the time ran out while the leasable was waiting out a conflict it names (an SMB client
      // holding a file: fileLock), its error says more than the timeout.
      const named = !options.abortSignal?.aborted && isStorageConcurrencyError(error) && error !== signal.reason;
      throw signal.aborted && !named
        ? signal.reason
        : wrapStorageError(error, `take the lock on ${this.leasable.description}`);
    } finally {
      clearTimeout(timer);
      options.abortSignal?.removeEventListener("abort", onAbort);
    }
  }

  /**
   * Runs `callback` under the lock and always releases it. Rejects with the callback's error, or,
   * if the lock was lost while the callback ran, with the `LeaseLostError` (even when the callback
   * finished: what it did was not protected to the end).
   *
   * @example
   * ```ts
   * declare function recalculate(options: { abortSignal: AbortSignal }): Promise<number>; // your own work
   *
   * const total = await lock.withLock(async (handle) => {
   *   return await recalculate({ abortSignal: handle.signal });
   * }, { timeoutInMs: 60_000 });
   * ```
   */
  async withLock<T>(callback: (handle: LockHandle) => Promise<T> | T, options: AcquireOptions = {}): Promise<T> {
    if (typeof callback !== "function") throw new TypeError("`callback` must be a function.");
    const handle = await this.acquire(options);
    let result: T;
    try {
      result = await callback(handle);
    } catch (error) {
      await handle.release().catch(() => undefined);
      throw error;
    }
    const lost = handle.status === "lost" ? (handle.signal.reason as unknown) : undefined;
    await handle.release();
    if (lost !== undefined) throw lost;
    return result;
  }

  /**
   * Reads the lock's state, latest holder and fencing token (one HEAD request).
   *
   * @example
   * ```ts
   * const info = await lock.inspect();
   * if (info.held) console.log(`held by ${info.holder?.host}, token ${info.fencingToken}`);
   * ```
   */
  async inspect(options: TryAcquireOptions = {}): Promise<LockInfo> {
    const properties = await this.leasable
      .getProperties({ abortSignal: options.abortSignal })
      .catch((error: unknown) =>
        Promise.reject(wrapStorageError(error, `read the lease state of ${this.leasable.description}`)),
      );
    const record = readLockRecord(properties?.metadata ?? {});
    const state = properties?.state ?? "available";
    return {
      description: this.leasable.description,
      exists: properties !== undefined,
      state,
      held: state === "leased" || state === "breaking",
      durationType: properties?.durationType,
      fencingToken: record.fencingToken,
      holder: record.holder,
    };
  }

  /**
   * Breaks the lease, whoever holds it: for an operator freeing a stuck lock. Resolves with the
   * seconds until it is broken.
   *
   * @example
   * ```ts
   * await lock.break({ breakPeriodInSeconds: 0 }); // free it now
   * ```
   */
  async break(options: BreakLockOptions = {}): Promise<number> {
    const breakPeriodInSeconds = checkNumber("breakPeriodInSeconds", options.breakPeriodInSeconds ?? 0, {
      min: 0,
      max: 60,
      integer: true,
    });
    logger.info(`breaking the lease on ${this.leasable.description} (break period ${breakPeriodInSeconds} s)`);
    return this.leasable
      .breakLease(breakPeriodInSeconds, { abortSignal: options.abortSignal })
      .catch((error: unknown) =>
        Promise.reject(wrapStorageError(error, `break the lease on ${this.leasable.description}`)),
      );
  }

  /**
   * One acquire attempt; `undefined` when someone else holds the lease. `known` is what a look at
   * the lease state just before found (it saves reading the lock's record again).
   */
  async #attempt(
    leaseId: string,
    abortSignal: AbortSignal | undefined,
    known?: LeasableProperties,
  ): Promise<LockHandle | undefined> {
    const sentAt = performance.now();
    const acquiredAt = new Date();
    const granted = await this.#acquireOrCreate(leaseId, abortSignal);
    if (!granted) return undefined;
    let record: { fencingToken: number; lockMetadata: Record<string, string> } | undefined;
    try {
      record = await this.#recordAcquisition(leaseId, acquiredAt, abortSignal, known);
    } catch (error) {
      // The lease is ours but its record could not be written: give it back rather than hold it unfenced.
      await this.#forget(leaseId);
      if (isLeaseGone(error)) return undefined; // broken in between: someone else has it
      throw error;
    }
    const fencingToken = record?.fencingToken;
    logger.info(
      `acquired the lock on ${this.leasable.description}${fencingToken === undefined ? "" : ` (fencing token ${fencingToken})`}`,
    );
    return startHandle({
      leasable: this.leasable,
      options: this.options,
      leaseId,
      sentAt,
      acquiredAt,
      fencingToken,
      lockMetadata: record?.lockMetadata ?? {},
    });
  }

  async #acquireOrCreate(leaseId: string, abortSignal: AbortSignal | undefined): Promise<boolean> {
    const seconds =
      this.options.durationInSeconds === Infinity ? INFINITE_LEASE_SECONDS : this.options.durationInSeconds;
    for (let created = false; ; created = true) {
      try {
        await this.leasable.acquire(seconds, leaseId, { abortSignal });
        return true;
      } catch (error) {
        const status = statusOf(error);
        // "Held by someone else" is the lease's own 409 (LeaseAlreadyPresent, ...): not an SMB client
        // holding a file (409 SharingViolation) nor an error the leasable raised about one.
        if (status === 409 && classifyError(error).kind === "client") return false;
        if (status !== 404) throw error;
        if (created || !this.options.createIfMissing || !this.leasable.createIfMissing) {
          throw new LeaseTargetNotFoundError(
            `Cannot lock ${this.leasable.description}: it does not exist` +
              (this.leasable.createIfMissing
                ? created
                  ? " (it was deleted right after being created)."
                  : "; create it, or leave `createIfMissing` at its default (true)."
                : "; create it first."),
            { statusCode: status, serviceCode: serviceCodeOf(error), cause: error },
          );
        }
        await this.leasable.createIfMissing({ abortSignal });
      }
    }
  }

  /**
   * Writes the holder record and the next fencing token under the new lease.
   *
   * The token must be one more than the latest recorded, so the record read must be the latest:
   * - with `known` (read just before the acquire) and a leasable whose metadata writes can be
   *   conditional, the write is made `If-Match` the ETag read then. Leasing does not change the
   *   ETag, so it only fails (412 ConditionNotMet) if someone wrote in between;
   * - otherwise, or after such a 412, the record is read after the acquire: from then on no earlier
   *   holder can write, so that read is the latest.
   * The unconditional write sets an absolute value, so the SDK re-sending it after a lost response
   * changes nothing. A conditional write whose response was lost is re-sent, fails with 412 (its
   * ETag moved), and the read that follows skips one token number: tokens stay unique and
   * increasing, which is all fencing needs.
   */
  async #recordAcquisition(
    leaseId: string,
    acquiredAt: Date,
    abortSignal: AbortSignal | undefined,
    known: LeasableProperties | undefined,
  ): Promise<{ fencingToken: number; lockMetadata: Record<string, string> } | undefined> {
    if (!this.leasable.setMetadata) return undefined;
    const next = (existing: Readonly<Record<string, string>>) => {
      const fencingToken = readLockRecord(existing).fencingToken + 1;
      const { all, own } = buildLockMetadata(existing, {
        fencingToken,
        name: this.options.holderName,
        acquiredAt,
        durationInSeconds: this.options.durationInSeconds,
        renewIntervalInMs: this.options.renewIntervalInMs,
      });
      return { fencingToken, all, lockMetadata: own };
    };
    if (known?.etag !== undefined && this.leasable.conditionalMetadataWrites) {
      const record = next(known.metadata);
      try {
        await this.leasable.setMetadata(record.all, leaseId, { abortSignal, ifMatch: known.etag });
        return record;
      } catch (error) {
        if (statusOf(error) !== 412 || serviceCodeOf(error) !== "ConditionNotMet") throw error;
      }
    }
    const properties = await this.leasable.getProperties({ abortSignal });
    const record = next(properties?.metadata ?? {});
    await this.leasable.setMetadata(record.all, leaseId, { abortSignal });
    return record;
  }

  /** Best-effort release of a lease id this call may hold without knowing it (bounded: 5 s). */
  async #forget(leaseId: string): Promise<void> {
    await this.leasable.release(leaseId, { abortSignal: AbortSignal.timeout(5_000) }).catch(() => undefined);
  }

  #pollDelay(): number {
    return uniform(0.5, 1.5) * this.options.pollIntervalInMs;
  }
}

function isHeld(properties: LeasableProperties | undefined): boolean {
  return properties?.state === "leased" || properties?.state === "breaking";
}

/** An acquire attempt whose outcome is unknown: the service may have granted it. */
function isUncertain(error: unknown): boolean {
  const { kind } = classifyError(error);
  return kind === "network" || kind === "timeout" || kind === "server" || kind === "throttled";
}

/**
 * A holder as one phrase for messages: `'name' on host (pid 123)`.
 *
 * @example
 * ```ts
 * import { describeHolder } from "azure-storage-concurrency";
 *
 * const info = await lock.inspect();
 * if (info.held && info.holder) console.log(`held by ${describeHolder(info.holder)}`);
 * ```
 */
export function describeHolder(holder: LockHolder): string {
  return `${holder.name ? `'${holder.name}' on ` : ""}${holder.host} (pid ${holder.pid})`;
}
