/**
 * The semaphore's typed error: `acquire` gave up waiting for a permit. It extends
 * `StorageConcurrencyError` (so it has `code`, `statusCode`, `serviceCode` and `cause`) and comes with
 * a guard that checks the brand and the name, as the lease errors do (`../lease/errors.ts`). A lost
 * permit is the lease engine's own `LeaseLostError` (the permit is a lease on one slot blob).
 */
import { isStorageConcurrencyError, StorageConcurrencyError } from "../errors.js";
import type { LockHolder } from "../lease/index.js";

/**
 * `acquire` gave up waiting for a permit: every one of the `maxCount` slots stayed held for the whole
 * `timeoutInMs`, or the looks at them kept failing transiently; `cause` is the latest transient
 * failure met while waiting (503, a reset, a request cut off by its time limit), if there was one.
 *
 * @example
 * ```ts
 * import { isSemaphoreTimeoutError } from "azure-storage-concurrency/semaphore";
 *
 * try {
 *   await using held = await semaphore.acquire({ timeoutInMs: 5_000 });
 *   console.log(`exporting on slot ${held.slot}`);
 * } catch (error) {
 *   if (isSemaphoreTimeoutError(error)) console.log(`all ${error.maxCount} permits stayed taken`);
 *   else throw error;
 * }
 * ```
 */
export class SemaphoreTimeoutError extends StorageConcurrencyError {
  /** How long `acquire` waited. */
  readonly timeoutInMs: number;
  /** The semaphore's `maxCount`: how many permits there are. */
  readonly maxCount: number;
  /** The holders seen at the last look at the slots (those that recorded one). */
  readonly holders: readonly LockHolder[];

  constructor(
    message: string,
    options: { timeoutInMs: number; maxCount: number; holders?: readonly LockHolder[]; cause?: unknown },
  ) {
    super(message, { code: "SemaphoreTimeout", cause: options.cause });
    this.name = "SemaphoreTimeoutError";
    this.timeoutInMs = options.timeoutInMs;
    this.maxCount = options.maxCount;
    this.holders = options.holders ?? [];
  }
}

/**
 * True when `error` is a {@link SemaphoreTimeoutError}.
 *
 * @example
 * ```ts
 * import { isSemaphoreTimeoutError } from "azure-storage-concurrency/semaphore";
 *
 * const maybe = await semaphore.acquire({ timeoutInMs: 1_000 }).catch((error: unknown) => {
 *   if (isSemaphoreTimeoutError(error)) return undefined; // busy: try again on the next run
 *   throw error;
 * });
 * ```
 */
export function isSemaphoreTimeoutError(error: unknown): error is SemaphoreTimeoutError {
  return isStorageConcurrencyError(error) && error.name === "SemaphoreTimeoutError";
}
