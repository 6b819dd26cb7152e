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
 * The first attempt sends the acquire at once: a free lock costs no read, and a lock this process
 * took before costs none at all (its own latest record's ETag makes the record write conditional;
 * see `./lock-requests.ts`, which makes the requests). Once refused, each later attempt first reads
 * the lease state and the lock's record (one HEAD) and only tries to acquire when the lease looks
 * free; waiting repeats that at jittered intervals. The read costs nothing extra: its ETag lets the
 * new record be written without reading it again after the acquire.
 *
 * Every request has a client-side time limit (`requestTimeoutInMs`, see `../internal/time-limit.ts`);
 * one without an answer by then counts as a lost answer. Waiting never fails silently: a failure
 * that waiting cannot cure (403, a missing container, ...) ends it at once, transient ones are
 * logged and kept as the timeout's `cause`, and a service that answers nothing at all ends it after
 * `unreachableTimeoutInMs` (`./wait-failures.ts`).
 */
import { classifyError, wrapStorageError } from "../retry/index.js";
import { isStorageConcurrencyError } from "../errors.js";
import { checkTracingOptions, type OperationTracingOptions } from "../observability/scope.js";
import { noteLockAttempt, noteLockBusy, traceAcquire } from "./telemetry.js";
import { logger } from "../internal/logger.js";
import { sleep, uniform } from "../internal/sleep.js";
import { checkNumber, checkOptionalSignal } from "../internal/validate.js";
import { LockTimeoutError } from "./errors.js";
import { newLeaseId, type LockHandle } from "./handle.js";
import { readLockRecord, type LockHolder } from "./holder.js";
import { type Leasable, type LeasableProperties, type LeaseDurationType, type LeaseState } from "./leasable.js";
import { LockRequests } from "./lock-requests.js";
import { resolveLeaseLockOptions, type LeaseLockOptions, type ResolvedLeaseLockOptions } from "./options.js";
import { describeFailure, WaitFailures } from "./wait-failures.js";
import { openWaitingRoom, waitingRoom } from "./waiting-room.js";
import { describeError } from "../internal/describe-error.js";

/** Options for {@link LeaseLock.tryAcquire}. */
export interface TryAcquireOptions {
  /** Cancels the attempt. */
  readonly abortSignal?: AbortSignal;
  /**
   * As the Azure SDK's operations take them: `tracingContext` is the parent of the attempt's span
   * (`asc.lock.acquire`), and so of the SDK's spans under it. Default: the active context.
   */
  readonly tracingOptions?: OperationTracingOptions;
}

/** Options for {@link LeaseLock.acquire} and {@link LeaseLock.withLock}. */
export interface AcquireOptions {
  /**
   * How long to wait for the lock before failing with a `LockTimeoutError` (whose `cause` is the
   * latest transient failure met while waiting, if any), or, when the leasable was waiting out a
   * conflict that is not another holder, such as an SMB client holding a file, with that conflict's
   * error. The promise settles within this plus three times the lock's `requestTimeoutInMs` (the
   * attempt in flight winds down, then a lease id it may have won is given back).
   * @default Infinity
   */
  readonly timeoutInMs?: number;
  /** Cancels the wait; the promise rejects with the signal's reason. */
  readonly abortSignal?: AbortSignal;
  /**
   * As the Azure SDK's operations take them: `tracingContext` is the parent of the acquisition's
   * span (`asc.lock.acquire`), and so of the SDK's spans under it. Default: the active context.
   */
  readonly tracingOptions?: OperationTracingOptions;
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
 * import { blobLock } from "azure-storage-concurrency/lease";
 *
 * const container = BlobServiceClient.fromConnectionString(process.env.AZURE_STORAGE_CONNECTION_STRING!)
 *   .getContainerClient("locks");
 * const lock = blobLock(container, "nightly-report", { durationInSeconds: 15 });
 * declare function buildReport(options: { abortSignal: AbortSignal }): Promise<void>; // your own work
 *
 * await lock.withLock(async (handle) => {
 *   await buildReport({ abortSignal: handle.abortSignal });
 * }, { timeoutInMs: 30_000 });
 * ```
 */
export class LeaseLock {
  /** The leasable this lock takes leases on. */
  readonly leasable: Leasable;
  /** The options, with defaults filled in. */
  readonly options: ResolvedLeaseLockOptions;

  readonly #requests: LockRequests;
  /** Identifies the leased resource among this process's locks, for its waiting room. */
  readonly #roomKey: unknown;

  constructor(leasable: Leasable, options: LeaseLockOptions = {}) {
    if (typeof leasable !== "object" || leasable === null || typeof leasable.acquire !== "function") {
      throw new TypeError("`leasable` must be a Leasable (for example blobLeasable(container, name)).");
    }
    this.leasable = leasable;
    this.options = resolveLeaseLockOptions(leasable, options);
    this.#roomKey = leasable.key ?? Symbol(leasable.description);
    this.#requests = new LockRequests(leasable, this.options, (open) =>
      open ? openWaitingRoom(this.#roomKey) : waitingRoom(this.#roomKey),
    );
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
   *   try { await work(held.abortSignal); } finally { await held.release(); }
   * }
   * ```
   */
  async tryAcquire(options: TryAcquireOptions = {}): Promise<LockHandle | undefined> {
    return traceAcquire(this, false, checkTracingOptions(options.tracingOptions), () => this.#tryAcquire(options));
  }

  async #tryAcquire(options: TryAcquireOptions): Promise<LockHandle | undefined> {
    checkOptionalSignal("abortSignal", options.abortSignal);
    const leaseId = newLeaseId();
    const acquisitionId = newLeaseId();
    noteLockAttempt();
    try {
      try {
        return await this.#requests.attempt(leaseId, acquisitionId, options.abortSignal);
      } catch (error) {
        // The answer was lost: asking again with the same proposed id settles it (granted, or 409).
        if (!isUncertain(error) || options.abortSignal?.aborted) throw error;
        return await this.#requests.attempt(leaseId, acquisitionId, options.abortSignal);
      }
    } catch (error) {
      await this.#requests.forget(leaseId); // the service may have granted it before the failure
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
    return traceAcquire(this, true, checkTracingOptions(options.tracingOptions), () => this.#acquire(options));
  }

  async #acquire(options: AcquireOptions): Promise<LockHandle> {
    checkOptionalSignal("abortSignal", options.abortSignal);
    const timeoutInMs = checkNumber("timeoutInMs", options.timeoutInMs ?? Infinity, { min: 0, allowInfinity: true });
    const leaseId = newLeaseId();
    const acquisitionId = newLeaseId();
    const controller = new AbortController();
    const onAbort = () => controller.abort(options.abortSignal!.reason);
    options.abortSignal?.addEventListener("abort", onAbort, { once: true });
    if (options.abortSignal?.aborted) onAbort();
    let lastHolder: LockHolder | undefined;
    let timedOut = false;
    const failures = new WaitFailures(this.leasable.description, this.options.unreachableTimeoutInMs);
    const timer =
      timeoutInMs === Infinity
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            // A LockTimeoutError as the reason: a leasable waiting out a conflict of its own (fileLock's
            // SMB clients) reads it to end with its own error; the one thrown is built in the catch.
            controller.abort(this.#timeoutError(timeoutInMs, lastHolder, failures));
          }, timeoutInMs);
    const signal = controller.signal;
    let uncertain = false;
    // Tried at once when nobody of this process waits for the lock or holds it; see ./waiting-room.ts.
    const room = waitingRoom(this.#roomKey);
    const tryFirst = room.looksFree;
    const waiter = room.enter();
    let acquired = false;
    let handedOff = false;
    try {
      for (let first = true; ; first = false) {
        let known: LeasableProperties | undefined;
        if (uncertain) await sleep(this.#pollDelay(), signal);
        else if (!first || !tryFirst) handedOff = await room.nextLook(waiter, this.options.pollIntervalInMs, signal);
        noteLockAttempt();
        // The first attempt goes straight to the acquire (a free lock costs no read); once refused,
        // the waiter looks before it leaps: one HEAD per look, and an acquire only when it looks free.
        // A waiter woken by a release in this process sends its acquire at once, like a first try.
        if (!(first && tryFirst) && !uncertain && !handedOff) {
          let properties: LeasableProperties | undefined;
          try {
            properties = await this.#requests.readState(signal);
          } catch (error) {
            if (signal.aborted || !classifyError(error).transient) throw error;
            failures.transient("reading the lease state", error);
            continue;
          }
          failures.answered();
          if (isHeld(properties)) {
            lastHolder = readLockRecord(properties!.metadata).holder;
            noteLockBusy(lastHolder);
            continue;
          }
          known = properties;
        }
        try {
          const handle = await this.#requests.attempt(leaseId, acquisitionId, signal, known);
          if (handle) {
            acquired = true;
            return handle;
          }
          failures.answered();
          uncertain = false;
        } catch (error) {
          if (!isUncertain(error) || signal.aborted) throw error;
          uncertain = true;
          failures.transient("acquiring", error);
        }
      }
    } catch (error) {
      // An acquire in flight when the wait was cancelled (or one whose answer was lost) may have
      // been granted: give that lease id back so that nothing is left held until it expires.
      await this.#requests.forget(leaseId);
      // When the time ran out while the leasable was waiting out a conflict it names (an SMB client
      // holding a file: fileLock), its error says more than the timeout.
      const named = !options.abortSignal?.aborted && isStorageConcurrencyError(error) && error !== signal.reason;
      if (timedOut && !named) throw this.#timeoutError(timeoutInMs, lastHolder, failures);
      throw signal.aborted && !named
        ? signal.reason
        : wrapStorageError(error, `take the lock on ${this.leasable.description}`);
    } finally {
      room.leave(waiter, acquired, handedOff);
      clearTimeout(timer);
      options.abortSignal?.removeEventListener("abort", onAbort);
    }
  }

  #timeoutError(timeoutInMs: number, holder: LockHolder | undefined, failures: WaitFailures): LockTimeoutError {
    const why =
      failures.inARow > 0
        ? `: the last ${failures.inARow === 1 ? "look" : `${failures.inARow} looks`} failed (${describeFailure(failures.last)})`
        : holder
          ? `: held by ${describeHolder(holder)}`
          : "";
    return new LockTimeoutError(
      `Could not take the lock on ${this.leasable.description} within ${timeoutInMs} ms${why}.`,
      {
        timeoutInMs,
        holder,
        cause: failures.last,
      },
    );
  }

  /**
   * Runs `callback` under the lock and always releases it. Rejects with the callback's error, or,
   * if the lock was lost while the callback ran, with the `LeaseLostError` (even when the callback
   * finished: what it did was not protected to the end). Once the callback has settled, it settles
   * within twice the lock's `requestTimeoutInMs` (the release: see {@link LockHandle.release}). A
   * release that fails after the callback succeeded does not reject (the work is done): it is
   * logged as a warning, and the lease expires by itself.
   *
   * @example
   * ```ts
   * declare function recalculate(options: { abortSignal: AbortSignal }): Promise<number>; // your own work
   *
   * const total = await lock.withLock(async (handle) => {
   *   return await recalculate({ abortSignal: handle.abortSignal });
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
    const lost = handle.status === "lost" ? (handle.abortSignal.reason as unknown) : undefined;
    try {
      await handle.release();
    } catch (error) {
      // The callback's work is done: rejecting now would tell the caller it failed (and invite it to
      // do the work again). The lease was given up on this side and expires at the service by itself.
      if (lost === undefined) {
        const { durationInSeconds } = this.options;
        logger.warning(
          `${this.leasable.description}: the work under the lock succeeded, but releasing the lease failed ` +
            `(${describeError(error)}); ` +
            (durationInSeconds === Infinity
              ? "an infinite lease stays until it is broken (azure-storage-concurrency lock break)"
              : `it expires by itself within ${durationInSeconds} s`),
        );
      }
    }
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
    checkOptionalSignal("abortSignal", options.abortSignal);
    const properties = await this.#requests
      .readState(options.abortSignal)
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
    checkOptionalSignal("abortSignal", options.abortSignal);
    logger.info(`breaking the lease on ${this.leasable.description} (break period ${breakPeriodInSeconds} s)`);
    const operation = `break the lease on ${this.leasable.description}`;
    return this.#requests
      .call(operation, options.abortSignal, (abortSignal) =>
        this.leasable.breakLease(breakPeriodInSeconds, { abortSignal }),
      )
      .catch((error: unknown) => Promise.reject(wrapStorageError(error, operation)));
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
 * import { describeHolder } from "azure-storage-concurrency/lease";
 *
 * const info = await lock.inspect();
 * if (info.held && info.holder) console.log(`held by ${describeHolder(info.holder)}`);
 * ```
 */
export function describeHolder(holder: LockHolder): string {
  return `${holder.name ? `'${holder.name}' on ` : ""}${holder.host} (pid ${holder.pid})`;
}
