/**
 * The schedule's status blob: which ticks are settled, which run is under way, and how the last one
 * ended. It is what decides, for every instance, whether a tick is done: never a local clock, nor a
 * value cached in memory.
 *
 * Every change is one of the transitions below, each a pure function of the stored status, written
 * by the lease holder with `If-Match` on the version it read (the optimistic engine:
 * `../optimistic/`). The lease keeps live instances from writing at the same time; the `If-Match`
 * refuses the write of an instance whose lease lapsed while its request was on the way (paused,
 * cut off), whatever the order in which such writes land:
 *
 * - claim: settles the missed ticks and records the run about to start (`running`), before the
 *   job starts. A run starts only once its claim is stored, so two instances can never both start a
 *   tick from the same stored version: the second claim, or a late done record, finds the version
 *   changed and is refused;
 * - record: the run ended (the job resolved or threw while its signal was not aborted): the tick is
 *   settled (`lastTick`), only if the claim stored is still this run's;
 * - create: the first instance creates the status; ticks at or before its creation never run.
 *
 * Transitions recognise their own earlier write by the run id it carries, so a write whose answer
 * was lost is tried again, or found applied, without doing anything twice.
 */
import { hostname } from "node:os";
import { planTicks, type CatchUp, type TickPlan } from "./catch-up.js";
import type { Timing } from "./timing.js";

/** Who ran (or runs) a tick, as recorded in the status. */
export interface ScheduleHolder {
  /** The host name. */
  readonly host: string;
  /** The process id. */
  readonly pid: number;
  /** The schedule's `holderName`, if one was given. */
  readonly name?: string;
}

/** A run as the status records it: claimed (`running`), or ended (`lastRun`). */
export interface ScheduleRunRecord {
  /** The tick's due time, ISO 8601 UTC. */
  readonly tick: string;
  /** A random id of this run (each claim has its own). */
  readonly runId: string;
  /** 1 for the tick's first run, more when it took over a run that did not end. */
  readonly attempt: number;
  /** The lease's fencing token during the run. */
  readonly fencingToken: number | null;
  /** Who runs it. */
  readonly holder: ScheduleHolder;
  /** When the run was claimed, by the holder's clock. */
  readonly startedAt: string;
  /** When it ended, by the holder's clock (ended runs only). */
  readonly endedAt?: string;
  /** How it ended (ended runs only). */
  readonly outcome?: "succeeded" | "failed";
  /** What the job threw, redacted of secrets (failed runs only). */
  readonly error?: string;
}

/**
 * The content of a schedule's status blob (`<name>/status.json`), version 1.
 *
 * @example
 * ```ts
 * import { schedule } from "azure-storage-concurrency/schedule";
 *
 * const nightly = schedule(container, "nightly-report", { cron: "0 2 * * *" }, async () => undefined);
 * const status = await nightly.readStatus();
 * console.log(`last settled tick ${status?.lastTick}, next due ${status?.nextDue}, running: ${status?.running?.tick}`);
 * ```
 */
export interface ScheduleStatusRecord {
  /** The format's version: 1. */
  readonly version: 1;
  /** The timing of the instance that wrote last (`every 200 ms`, `cron '0 2 * * *' in UTC`). */
  readonly schedule: string;
  /** When the status was created: ticks at or before it never run. */
  readonly createdAt: string;
  /** The latest settled tick (ran, failed or missed): it and every tick before it never run again. */
  readonly lastTick: string | null;
  /** How the latest settled tick was settled. */
  readonly lastOutcome: "created" | "succeeded" | "failed" | "missed";
  /** The latest run that ended, if any. */
  readonly lastRun: ScheduleRunRecord | null;
  /**
   * The run claimed and not ended yet, if any. It may be a run whose instance died: the next holder
   * of the lease takes its tick over (or skips it, as `catchUp` says).
   */
  readonly running: ScheduleRunRecord | null;
  /** The next tick after `lastTick`, as the writer's timing computes it. */
  readonly nextDue: string | null;
  /**
   * Ticks skipped by catch-up since the status was created (each catch-up counts at most 1000 of
   * them beyond those it runs: a long outage of a fast schedule is not stepped through tick by tick).
   */
  readonly missedTicks: number;
  /** When the status was last written, by the writer's clock. */
  readonly updatedAt: string;
}

/** Who this instance is, as it records itself. */
export function holderOf(holderName: string | undefined): ScheduleHolder {
  return holderName === undefined
    ? { host: hostname(), pid: process.pid }
    : { host: hostname(), pid: process.pid, name: holderName };
}

const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());

/** The instant a status field holds. */
export function instantOf(value: string): number {
  return Date.parse(value);
}

/** The instant after which ticks are due: the last settled tick, or the creation. */
export function settledThrough(status: ScheduleStatusRecord): number {
  return instantOf(status.lastTick ?? status.createdAt);
}

/** A new status, created at `nowMs`. */
export function createdStatus(timing: Timing, nowMs: number): ScheduleStatusRecord {
  return {
    version: 1,
    schedule: timing.description,
    createdAt: iso(nowMs)!,
    lastTick: null,
    lastOutcome: "created",
    lastRun: null,
    running: null,
    nextDue: iso(timing.next(nowMs)),
    missedTicks: 0,
    updatedAt: iso(nowMs)!,
  };
}

/** What a claim transition decided. */
export type ClaimDecision =
  /** Nothing is due (and nothing was written): `nextDue` is when to look again; ticks through `settled` are settled. */
  | { readonly kind: "nothing"; readonly nextDue: number | undefined; readonly settled: number }
  /** Ticks were settled as missed and none runs (catchUp `"none"`). */
  | { readonly kind: "skipped"; readonly plan: TickPlan }
  /** The run is claimed: start the job. */
  | { readonly kind: "run"; readonly plan: TickPlan; readonly claim: ScheduleRunRecord };

/** Who claims, and with what. */
interface Claimant {
  readonly runId: string;
  readonly fencingToken: number | undefined;
  readonly holder: ScheduleHolder;
}

/**
 * The claim transition: from the stored status (under the lease), settle missed ticks and claim the
 * tick to run. Answers the status to write (`undefined`: write nothing) and the decision. A status
 * that already holds this claimant's claim (its earlier write landed) is kept as it is.
 */
export function claimTransition(
  current: ScheduleStatusRecord,
  timing: Timing,
  catchUp: CatchUp,
  me: Claimant,
  nowMs: number,
): { next: ScheduleStatusRecord | undefined; decision: ClaimDecision } {
  if (current.running?.runId === me.runId) {
    const plan = { run: instantOf(current.running.tick), missedThrough: undefined, missed: 0, nextDue: undefined };
    return { next: undefined, decision: { kind: "run", plan, claim: current.running } };
  }
  const plan = planTicks(timing, settledThrough(current), nowMs, catchUp);
  if (plan.run === undefined && plan.missed === 0) {
    return { next: undefined, decision: { kind: "nothing", nextDue: plan.nextDue, settled: settledThrough(current) } };
  }
  // A claim left by a run that did not end (its instance died, or lost the lease): this instance
  // holds the lease now, so that run is over. Its tick is taken over (attempt + 1), or skipped.
  const left = current.running;
  const claim: ScheduleRunRecord | undefined =
    plan.run === undefined
      ? undefined
      : {
          tick: iso(plan.run)!,
          runId: me.runId,
          attempt: left && instantOf(left.tick) === plan.run ? left.attempt + 1 : 1,
          fencingToken: me.fencingToken ?? null,
          holder: me.holder,
          startedAt: iso(nowMs)!,
        };
  const next: ScheduleStatusRecord = {
    ...current,
    schedule: timing.description,
    ...(plan.missedThrough === undefined ? {} : { lastTick: iso(plan.missedThrough), lastOutcome: "missed" as const }),
    running: claim ?? null,
    nextDue: iso(plan.run ?? plan.nextDue),
    missedTicks: current.missedTicks + plan.missed,
    updatedAt: iso(nowMs)!,
  };
  return { next, decision: claim ? { kind: "run", plan, claim } : { kind: "skipped", plan } };
}

/** What a record transition found. */
type RecordDecision =
  /** The run's end is (now, or already) recorded: its tick is settled. */
  | "recorded"
  /** The stored claim is no longer this run's (another instance took the tick over): nothing recorded. */
  | "superseded";

/**
 * The record transition: settle the claimed tick with the run's outcome, if the stored claim is still
 * this run's. Answers the status to write (`undefined`: write nothing) and the decision.
 */
export function recordTransition(
  current: ScheduleStatusRecord,
  timing: Timing,
  claim: ScheduleRunRecord,
  ended: { readonly outcome: "succeeded" | "failed"; readonly error?: string; readonly atMs: number },
): { next: ScheduleStatusRecord | undefined; decision: RecordDecision } {
  if (current.lastRun?.runId === claim.runId) return { next: undefined, decision: "recorded" };
  if (current.running?.runId !== claim.runId) return { next: undefined, decision: "superseded" };
  const lastRun: ScheduleRunRecord = {
    ...claim,
    endedAt: iso(ended.atMs)!,
    outcome: ended.outcome,
    ...(ended.error === undefined ? {} : { error: ended.error }),
  };
  return {
    next: {
      ...current,
      schedule: timing.description,
      lastTick: claim.tick,
      lastOutcome: ended.outcome,
      lastRun,
      running: null,
      nextDue: iso(timing.next(instantOf(claim.tick))),
      updatedAt: iso(ended.atMs)!,
    },
    decision: "recorded",
  };
}

/**
 * Checks that a stored status has the fields a transition reads; answers why not (`undefined`: fine).
 * A status that fails is never written over: an operator must look at it.
 */
export function statusProblem(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "it is not a JSON object";
  const v = value as Record<string, unknown>;
  if (v["version"] !== 1) return `its \`version\` is ${JSON.stringify(v["version"])}, not 1`;
  const instant = (key: string, nullable: boolean) =>
    (nullable && v[key] === null) || (typeof v[key] === "string" && !Number.isNaN(Date.parse(v[key])));
  if (!instant("createdAt", false)) return "its `createdAt` is not a date";
  if (!instant("lastTick", true)) return "its `lastTick` is neither a date nor null";
  if (typeof v["missedTicks"] !== "number") return "its `missedTicks` is not a number";
  for (const key of ["running", "lastRun"]) {
    const run = v[key] as Record<string, unknown> | null | undefined;
    if (run === null) continue;
    if (typeof run !== "object" || run === undefined) return `its \`${key}\` is neither a run nor null`;
    if (typeof run["runId"] !== "string" || typeof run["tick"] !== "string" || Number.isNaN(Date.parse(run["tick"])))
      return `its \`${key}\` has no \`runId\` or no \`tick\` date`;
    if (typeof run["attempt"] !== "number") return `its \`${key}\` has no \`attempt\``;
  }
  return undefined;
}
