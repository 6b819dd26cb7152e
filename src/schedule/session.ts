/**
 * What an instance does while it holds the schedule's lease: claim the due tick in the status blob,
 * run the job, record its end, and go on with the next tick if one is due already (catching up),
 * then release the lease. The waiting for the lease is the schedule's (`./schedule.ts`).
 *
 * The order is what makes a tick run once:
 * 1. the claim is written (`If-Match`) before the job starts, and decided only while the lease's
 *    signal is not aborted: a claim decided on a version read while the lease held can only land
 *    on that version, before anyone else could take the lease;
 * 2. the job's signal aborts before the lease can lapse at the service (the lock's expiry guard),
 *    and when the schedule stops after its grace period;
 * 3. the end is recorded only for a job that ended with its signal not aborted, and only if the
 *    stored claim is still this run's; a run not recorded is taken over by the next holder.
 */
import { randomUUID } from "node:crypto";
import { describeError } from "../internal/describe-error.js";
import { logger } from "../internal/logger.js";
import { checkedOnRead } from "../lease/internal.js";
import type { LockHandle } from "../lease/index.js";
import type { ResolvedScheduleOptions } from "./options.js";
import { type AbandonReason, type ScheduledTick, type ScheduleEventHub } from "./events.js";
import {
  claimTransition,
  createdStatus,
  instantOf,
  recordTransition,
  type ClaimDecision,
  type ScheduleHolder,
  type ScheduleRunRecord,
} from "./status.js";
import type { StatusCell } from "./status-cell.js";
import { endRun, noteMissed, runInScope, startRun } from "./telemetry.js";
import { tickId, type Timing } from "./timing.js";
import type { StorageResource } from "../observability/resource.js";

/** What the job is given. */
export interface ScheduledRunContext {
  /** The tick being run: its id (`<name>@<due time>`, the idempotency key for its effects) and due time. */
  readonly tick: ScheduledTick;
  /**
   * Aborts when the run must stop: the lease was lost (its `reason` is a `LeaseLostError`; the
   * signal aborts before the lease can lapse at the service, so no other instance runs the tick
   * before then), or the schedule is stopping and the grace period is over (`ScheduleStoppedError`).
   * Pass it to everything the job awaits, and check it before each external effect. Reading
   * `aborted` checks the lease's expiry guard first, so it is up to date even after the event loop
   * was blocked or the machine suspended.
   */
  readonly abortSignal: AbortSignal;
  /** 1 for the tick's first run; more when this run takes over a run of the tick that did not end. */
  readonly attempt: number;
  /** The lease's fencing token for this run: higher for every later holder. Stamp it on fenced writes. */
  readonly fencingToken: number | undefined;
  /** How late after its due time this run started, by this instance's clock. */
  readonly lateByInMs: number;
  /** The schedule's name. */
  readonly scheduleName: string;
}

/** The job a schedule runs once per tick. Resolve when done; throw to record the tick as failed. */
export type ScheduledJob = (context: ScheduledRunContext) => Promise<void> | void;

/** A job running now, and how to stop it. */
export interface RunningJob {
  readonly tick: ScheduledTick;
  /** Aborts the job's signal with a `ScheduleStoppedError`. */
  readonly stop: AbortController;
}

/** What a held session needs of its schedule. */
interface SessionContext {
  readonly name: string;
  /** The schedule in words, for messages. */
  readonly target: string;
  /** The schedule, for its runs' spans. */
  readonly resource: StorageResource;
  readonly timing: Timing;
  readonly options: ResolvedScheduleOptions;
  readonly cell: StatusCell;
  readonly job: ScheduledJob;
  readonly events: ScheduleEventHub;
  readonly holder: ScheduleHolder;
  /** This instance's wall clock, in milliseconds since the epoch. */
  readonly now: () => number;
  /** Aborted once the schedule is stopping: no new tick is claimed. */
  readonly stopping: AbortSignal;
  /** Told which job runs (`undefined`: none), so that `stop()` can abort it after the grace period. */
  readonly track: (job: RunningJob | undefined) => void;
}

/** How a job ended. */
type Ended =
  | {
      readonly recordable: true;
      readonly outcome: "succeeded" | "failed";
      readonly error: unknown;
      readonly durationInMs: number;
    }
  | { readonly recordable: false; readonly reason: AbandonReason; readonly error: unknown };

/**
 * Runs the due ticks while `handle` holds the lease, then releases it. Resolves with the last tick
 * this instance knows to be settled (or the status's creation), for its next wait.
 */
export async function runSession(ctx: SessionContext, handle: LockHandle): Promise<number | undefined> {
  let settled: number | undefined;
  try {
    while (!ctx.stopping.aborted && handle.status === "held") {
      const nowMs = ctx.now();
      const me = { runId: randomUUID(), fencingToken: handle.fencingToken, holder: ctx.holder };
      const decision = await ctx.cell.apply<ClaimDecision | { kind: "lost" }>(
        `claim a tick of ${ctx.target}`,
        undefined,
        (current) => {
          // Decided only while the lease holds: see the module's description.
          if (handle.abortSignal.aborted) return { next: undefined, decision: { kind: "lost" } };
          if (current === undefined) {
            const created = createdStatus(ctx.timing, nowMs);
            return { next: created, decision: { kind: "nothing", nextDue: ctx.timing.next(nowMs), settled: nowMs } };
          }
          return claimTransition(current, ctx.timing, ctx.options, me, nowMs);
        },
      );
      if (decision.kind === "lost") break;
      if (decision.kind === "nothing") {
        settled = decision.settled;
        break;
      }
      const { plan } = decision;
      if (plan.missed > 0 && plan.missedThrough !== undefined) {
        settled = plan.missedThrough;
        ctx.events.emit("missed", { count: plan.missed, through: tickOf(ctx.name, plan.missedThrough) });
        logger.warning(
          `${ctx.target}: ${plan.missed} tick(s) recorded as missed, through ${tickId(ctx.name, plan.missedThrough)}`,
        );
        noteMissed(plan.missed);
      }
      if (decision.kind === "skipped") {
        if (plan.nextDue === undefined || plan.nextDue > ctx.now()) break;
        continue;
      }
      const recorded = await runAndRecord(ctx, handle, decision.claim);
      if (recorded === undefined) break;
      settled = recorded;
      const next = ctx.timing.next(recorded);
      if (next === undefined || next > ctx.now()) break; // else catch up under the same lease
    }
  } finally {
    await handle.release().catch((error: unknown) => {
      logger.warning(`${ctx.target}: releasing the lease failed (${describeError(error)}); it expires by itself`);
      ctx.events.emit("error", { error, operation: `release the lease of ${ctx.target}` });
    });
  }
  return settled;
}

/** Runs the claimed tick and records its end; resolves with the tick when recorded, else `undefined`. */
async function runAndRecord(
  ctx: SessionContext,
  handle: LockHandle,
  claim: ScheduleRunRecord,
): Promise<number | undefined> {
  const dueMs = instantOf(claim.tick);
  const tick = tickOf(ctx.name, dueMs);
  const lateByInMs = ctx.now() - dueMs;
  ctx.events.emit("run", { tick, attempt: claim.attempt, lateByInMs });
  logger.info(`${ctx.target}: running ${tick.id} (attempt ${claim.attempt}, ${Math.round(lateByInMs)} ms late)`);
  const scope = startRun(ctx.resource, {
    tick: claim.tick,
    attempt: claim.attempt,
    lateByInMs,
    ...(handle.fencingToken === undefined ? {} : { fencingToken: handle.fencingToken }),
  });
  const ended = await runJob(ctx, handle, tick, claim.attempt, lateByInMs, scope);
  const abandon = (reason: AbandonReason, error: unknown) => {
    ctx.events.emit("abandoned", { tick, attempt: claim.attempt, reason, error });
    logger.warning(`${ctx.target}: the run of ${tick.id} was not recorded (${reason}): another instance takes it over`);
    endRun(scope, reason, error);
    return undefined;
  };
  if (!ended.recordable) return abandon(ended.reason, ended.error);
  let recorded;
  try {
    recorded = await ctx.cell.apply(`record the run of ${tick.id}`, undefined, (current) =>
      current === undefined
        ? { next: undefined, decision: "superseded" as const }
        : recordTransition(current, ctx.timing, claim, {
            outcome: ended.outcome,
            atMs: ctx.now(),
            ...(ended.outcome === "failed" ? { error: describeError(ended.error) } : {}),
          }),
    );
  } catch (error) {
    // The schedule reports the error and waits before it tries again (the tick is then taken over).
    abandon("unrecorded", error);
    throw error;
  }
  if (recorded === "superseded") return abandon("superseded", undefined);
  const { durationInMs } = ended;
  if (ended.outcome === "succeeded") {
    ctx.events.emit("succeeded", { tick, attempt: claim.attempt, durationInMs });
    logger.info(`${ctx.target}: ${tick.id} succeeded in ${Math.round(durationInMs)} ms`);
  } else {
    ctx.events.emit("failed", { tick, attempt: claim.attempt, durationInMs, error: ended.error });
    logger.warning(`${ctx.target}: ${tick.id} failed (${describeError(ended.error)}); recorded, it does not run again`);
  }
  endRun(scope, ended.outcome, ended.error);
  return dueMs;
}

/** Runs the job with a signal that aborts on the lease's loss or the end of the stop's grace period. */
async function runJob(
  ctx: SessionContext,
  handle: LockHandle,
  tick: ScheduledTick,
  attempt: number,
  lateByInMs: number,
  scope: Parameters<typeof runInScope>[0],
): Promise<Ended> {
  const stop = new AbortController();
  // Reading it asks the lease's expiry guard first (`handle.status` does), as the lock's own signal does.
  const abortSignal = checkedOnRead(AbortSignal.any([handle.abortSignal, stop.signal]), () => void handle.status);
  ctx.track({ tick, stop });
  const started = performance.now();
  let threw = false;
  let error: unknown;
  try {
    await runInScope(scope, () =>
      ctx.job({
        tick,
        abortSignal,
        attempt,
        fencingToken: handle.fencingToken,
        lateByInMs,
        scheduleName: ctx.name,
      }),
    );
  } catch (thrown) {
    threw = true;
    error = thrown;
  } finally {
    ctx.track(undefined);
  }
  if (abortSignal.aborted) {
    const lost = handle.abortSignal.aborted;
    return {
      recordable: false,
      reason: lost ? "lease-lost" : "stopped",
      error: lost ? handle.abortSignal.reason : stop.signal.reason,
    };
  }
  return {
    recordable: true,
    outcome: threw ? "failed" : "succeeded",
    error,
    durationInMs: performance.now() - started,
  };
}

function tickOf(name: string, dueMs: number): ScheduledTick {
  return { id: tickId(name, dueMs), dueAt: new Date(dueMs) };
}
