/**
 * Which tick to run next, and which to give up, from the last settled tick (read from the status
 * blob under the lease) and this instance's clock. Pure: the unit tests run it on a fake clock.
 *
 * The due ticks are those after the last settled tick and at or before now. The latest of them is
 * the current tick; the earlier ones were missed (every instance was down, or a run lasted past
 * them: a schedule never overlaps itself). `catchUp` decides what happens to them:
 *
 * - `"latest"` (default): the current tick runs, however late; the missed ones are skipped. Azure
 *   Functions' timer trigger with `UseMonitor` does the same: one past-due run, then the schedule.
 * - `"all"`: every due tick runs, oldest first, one after the other; when more than
 *   `maxCatchUpTicks` are due, only the latest `maxCatchUpTicks` run and the older ones are skipped.
 * - `"none"`: a tick runs only if it starts at most `missedAfterInMs` after its due time (Quartz's
 *   misfire threshold); a tick later than that is skipped, and the schedule waits for the next.
 *
 * Skipped ticks are settled (recorded in the status as missed) in the same write that claims the
 * tick to run, so no instance runs them later.
 */

/** What happens to ticks that were due while no instance could run them. */
export type CatchUpPolicy = "latest" | "all" | "none";

/** The catch-up settings of a schedule, checked. */
export interface CatchUp {
  /** What happens to missed ticks. */
  readonly catchUp: CatchUpPolicy;
  /** With `"all"`: how many due ticks run at most. */
  readonly maxCatchUpTicks: number;
  /** With `"none"`: how late after its due time a tick may still start, in milliseconds. */
  readonly missedAfterInMs: number;
}

/** The tick arithmetic the plan needs (a `Timing`). */
interface Ticks {
  next(afterMs: number): number | undefined;
  previous(beforeMs: number): number | undefined;
  count(fromMs: number, toMs: number, cap: number): number;
}

/** The decision: a tick to run (or none), and the ticks to settle as missed before it. */
export interface TickPlan {
  /** The tick to run now, if any. */
  readonly run: number | undefined;
  /** The latest tick settled as missed by this plan (all ticks up to it are settled), if any. */
  readonly missedThrough: number | undefined;
  /** How many ticks this plan settles as missed (counted up to {@link MAX_COUNTED_MISSES}). */
  readonly missed: number;
  /** When nothing is due: the next tick's due time (`undefined` if the schedule never ticks again). */
  readonly nextDue: number | undefined;
}

/**
 * Missed ticks are counted up to this many per plan, beyond the ones caught up: a cron schedule's
 * ticks are stepped one by one (croner takes about 0.1 ms a step), and a long outage of a fast
 * schedule must not make the claim slow.
 */
export const MAX_COUNTED_MISSES = 1_000;

/**
 * Plans what to do at `nowMs`, with every tick at or before `settledThroughMs` already settled.
 *
 * @param settledThroughMs - the last settled tick (or the status's creation time, before the first).
 */
export function planTicks(ticks: Ticks, settledThroughMs: number, nowMs: number, policy: CatchUp): TickPlan {
  const first = ticks.next(settledThroughMs);
  if (first === undefined || first > nowMs)
    return { run: undefined, missedThrough: undefined, missed: 0, nextDue: first };
  const latest = ticks.previous(nowMs + 1)!; // at or before now, and at least `first`
  const due = ticks.count(first, latest, MAX_COUNTED_MISSES + policy.maxCatchUpTicks);
  if (policy.catchUp === "all") {
    if (due <= policy.maxCatchUpTicks) return { run: first, missedThrough: undefined, missed: 0, nextDue: first };
    // Run the latest `maxCatchUpTicks`: step back from the latest to the oldest of them.
    let run = latest;
    for (let i = 1; i < policy.maxCatchUpTicks; i++) run = ticks.previous(run)!;
    return { run, missedThrough: ticks.previous(run), missed: due - policy.maxCatchUpTicks, nextDue: run };
  }
  const missedBefore = due > 1 ? ticks.previous(latest) : undefined;
  if (policy.catchUp === "none" && nowMs - latest > policy.missedAfterInMs) {
    return { run: undefined, missedThrough: latest, missed: due, nextDue: ticks.next(latest) };
  }
  return { run: latest, missedThrough: missedBefore, missed: due - 1, nextDue: latest };
}
