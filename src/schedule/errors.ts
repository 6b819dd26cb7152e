/**
 * The scheduled jobs' typed errors. Each extends `StorageConcurrencyError` (so it has `code`,
 * `statusCode`, `serviceCode` and `cause`) and comes with a guard that checks the brand and name.
 */
import { isStorageConcurrencyError, StorageConcurrencyError } from "../errors.js";

/**
 * The schedule is stopping and the run's grace period is over: the `reason` of the job's signal
 * then. The run is not recorded; the tick is taken over by another instance (at once: the lease is
 * released when the job has returned).
 *
 * @example
 * ```ts
 * import { isScheduleStoppedError, schedule } from "azure-storage-concurrency/schedule";
 *
 * declare function exportOrders(signal: AbortSignal): Promise<void>;
 *
 * schedule(container, "exports", { everyInMs: 60_000 }, async ({ abortSignal }) => {
 *   try {
 *     await exportOrders(abortSignal);
 *   } catch (error) {
 *     if (isScheduleStoppedError(abortSignal.reason)) console.log("stopping: another instance takes this tick over");
 *     throw error;
 *   }
 * });
 * ```
 */
export class ScheduleStoppedError extends StorageConcurrencyError {
  constructor(message = "The schedule is stopping: the run's grace period is over.") {
    super(message, { code: "ScheduleStopped" });
    this.name = "ScheduleStoppedError";
  }
}

/**
 * True when `error` is a {@link ScheduleStoppedError}.
 *
 * @example
 * ```ts
 * import { isScheduleStoppedError } from "azure-storage-concurrency/schedule";
 *
 * declare const signal: AbortSignal;
 * if (isScheduleStoppedError(signal.reason)) console.log("the schedule is stopping");
 * ```
 */
export function isScheduleStoppedError(error: unknown): error is ScheduleStoppedError {
  return isStorageConcurrencyError(error) && error.name === "ScheduleStoppedError";
}

/**
 * The schedule's status blob holds something the schedule cannot read (not JSON, or not a status
 * of version 1). Nothing is written over it: look at it, and delete it to start the schedule afresh
 * (ticks at or before its new creation are then not run).
 *
 * @example
 * ```ts
 * import { isScheduleStatusError, schedule } from "azure-storage-concurrency/schedule";
 *
 * const nightly = schedule(container, "nightly", { cron: "0 2 * * *" }, async () => undefined);
 * await nightly.start().catch((error: unknown) => {
 *   if (isScheduleStatusError(error)) console.error(`fix or delete ${error.blobName}: ${error.message}`);
 *   throw error;
 * });
 * ```
 */
export class ScheduleStatusError extends StorageConcurrencyError {
  /** The status blob's name. */
  readonly blobName: string;

  constructor(message: string, options: { readonly blobName: string; readonly cause?: unknown }) {
    super(message, { code: "ScheduleStatusInvalid", cause: options.cause });
    this.name = "ScheduleStatusError";
    this.blobName = options.blobName;
  }
}

/**
 * True when `error` is a {@link ScheduleStatusError}.
 *
 * @example
 * ```ts
 * import { isScheduleStatusError } from "azure-storage-concurrency/schedule";
 *
 * declare const error: unknown;
 * if (isScheduleStatusError(error)) console.error(`the status blob ${error.blobName} is unreadable`);
 * ```
 */
export function isScheduleStatusError(error: unknown): error is ScheduleStatusError {
  return isStorageConcurrencyError(error) && error.name === "ScheduleStatusError";
}
