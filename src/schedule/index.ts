/**
 * Scheduled jobs that run once per tick across a fleet: `schedule(container, name, timing, job)`.
 * Exported from the package's root for now; meant to become the sub-path entry
 * `azure-storage-concurrency/schedule` with the restructure of issue 22 (not in package.json yet).
 */
export { schedule, Schedule, type ScheduleState, type ScheduleStopResult } from "./schedule.js";
export type { ScheduleTiming } from "./timing.js";
export type { CatchUpPolicy } from "./catch-up.js";
export type { ScheduleOptions, ScheduleStopOptions, ResolvedScheduleOptions } from "./options.js";
export type { ScheduledJob, ScheduledRunContext } from "./session.js";
export type { ScheduledTick, ScheduleEvents, AbandonReason } from "./events.js";
export type { ScheduleStatusRecord, ScheduleRunRecord, ScheduleHolder } from "./status.js";
export { ScheduleStoppedError, isScheduleStoppedError, ScheduleStatusError, isScheduleStatusError } from "./errors.js";
