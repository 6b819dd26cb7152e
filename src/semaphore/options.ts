/**
 * The semaphore's options: `maxCount`, checked here, and the lease options of its slots, which the
 * lease engine checks (`LeaseLockOptions`: each slot is a `LeaseLock` with these options). Every
 * check throws before any request, with a `TypeError`/`RangeError` naming the option.
 */
import { checkNumber } from "../internal/validate.js";
import type { LeaseLockOptions } from "../lease/index.js";
import type { OperationTracingOptions } from "../observability/scope.js";

/**
 * The most permits a semaphore may have. Its waiters read every slot in one listing request (the
 * service answers up to 5,000 blobs a page), with room left for slots above a lowered `maxCount`.
 */
export const MAX_SEMAPHORE_COUNT = 1_000;

/** Options for {@link blobSemaphore}: `maxCount`, and the lease options each slot is taken with. */
export interface BlobSemaphoreOptions extends LeaseLockOptions {
  /**
   * How many permits there are: at most this many holders at once, across every process that uses
   * the semaphore with this `maxCount` (1 to 1,000). Permits are the slots `0 .. maxCount - 1`.
   * Lowering it between deployments is safe: slots at or above the new count are no longer taken
   * by the new deployment, and their holders keep them until they release them (or their lease
   * expires); see docs/semaphore.md.
   */
  readonly maxCount: number;
  /**
   * While waiting in `acquire`, the average time between two looks at the slots. One look is one
   * listing request for the whole process, whatever its number of waiters and the number of
   * slots, made by the waiter that has waited longest (see `./waiting-room.ts`).
   * @default 500
   */
  readonly pollIntervalInMs?: number;
}

/** Options for {@link BlobSemaphore.tryAcquire} and {@link BlobSemaphore.inspect}. */
export interface TryAcquirePermitOptions {
  /** Cancels the call. */
  readonly abortSignal?: AbortSignal;
  /**
   * As the Azure SDK's operations take them: `tracingContext` is the parent of the call's span
   * (`asc.semaphore.acquire`; `inspect` makes none), and so of the SDK's spans under it.
   * Default: the active context.
   */
  readonly tracingOptions?: OperationTracingOptions;
}

/** Options for {@link BlobSemaphore.acquire} and {@link BlobSemaphore.withPermit}. */
export interface AcquirePermitOptions {
  /**
   * How long to wait for a permit before failing with a `SemaphoreTimeoutError` (whose `cause` is
   * the latest transient failure met while waiting, if any). The promise settles within this plus
   * three times the semaphore's `requestTimeoutInMs` (the attempt in flight winds down, then a lease
   * id it may have won is given back).
   * @default Infinity
   */
  readonly timeoutInMs?: number;
  /** Cancels the wait; the promise rejects with the signal's reason. */
  readonly abortSignal?: AbortSignal;
  /**
   * As the Azure SDK's operations take them: `tracingContext` is the parent of the wait's span
   * (`asc.semaphore.acquire`), and so of the SDK's spans under it. Default: the active context.
   */
  readonly tracingOptions?: OperationTracingOptions;
}

/** Checks the semaphore's own options (the lease engine checks the rest); returns `maxCount`. */
export function checkSemaphoreOptions(options: unknown): number {
  if (typeof options !== "object" || options === null) {
    throw new TypeError("`options` must be an object with at least `maxCount` (how many permits there are).");
  }
  const { maxCount } = options as { maxCount?: unknown };
  if (maxCount === undefined) {
    throw new TypeError("`maxCount` is required: how many holders may have a permit at once (1 to 1000).");
  }
  return checkNumber("maxCount", maxCount, { min: 1, max: MAX_SEMAPHORE_COUNT, integer: true });
}
