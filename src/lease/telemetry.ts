/**
 * The locks' telemetry (docs/observability.md): the span `asc.lock.acquire` around each
 * `acquire`/`tryAcquire` call (wait, looks at the lock, fencing token, the holder seen while
 * waiting), short spans at the moment a lock is lost, a renewal fails or a leader changes, and the
 * metrics of waits, holds, losses, handoffs, renewal failures and leadership changes.
 *
 * Called after the state changes they describe (the signal aborted, the lock given back), and never
 * in their way: every call into OpenTelemetry goes through the fail-safe wrappers of
 * `../observability/`, the library's own instrumentation code runs inside `instrumentation()`, and
 * the acquisition's result or error passes through unchanged.
 */
import { hostname } from "node:os";
import {
  codeOf,
  describeHolder,
  failureOutcome,
  outcomeAttributes,
  telemetryIfLoaded,
  traced,
} from "../observability/helpers.js";
import { ATTR, EVENT, METRIC, SPAN } from "../observability/names.js";
import { defineInstruments, loadOpenTelemetry, openTelemetryLoaded, WAIT_SECONDS } from "../observability/otel.js";
import { resourceOf } from "../observability/resource.js";
import {
  currentScope,
  errorType,
  instrumentation,
  momentSpan,
  openScope,
  secondsSince,
  type TracingContext,
} from "../observability/scope.js";

const instruments = defineInstruments((meter) => ({
  wait: meter.histogram(METRIC.lockWait, {
    description: "Time spent acquiring a lock",
    unit: "s",
    boundaries: WAIT_SECONDS,
  }),
  hold: meter.histogram(METRIC.lockHold, {
    description: "Time a lock was held, until released or lost",
    unit: "s",
    boundaries: WAIT_SECONDS,
  }),
  losses: meter.counter(METRIC.lockLosses, { description: "Locks lost while held", unit: "{loss}" }),
  handoffs: meter.counter(METRIC.lockHandoffs, {
    description: "Locks taken over after waiting for another holder",
    unit: "{handoff}",
  }),
  renewalFailures: meter.counter(METRIC.renewalFailures, {
    description: "Background lock renewals that failed",
    unit: "{renewal}",
  }),
  leaderChanges: meter.counter(METRIC.leaderChanges, {
    description: "Times this process became or stopped being leader",
    unit: "{change}",
  }),
}));

/** A lock's holder as its record tells it (`LockHolder`). */
interface Holder {
  readonly name?: string | undefined;
  readonly host: string;
  readonly pid: number;
}

/** What the acquisition span reads of the lock and of its handle. */
interface LockLike {
  readonly leasable: { readonly description: string };
  readonly options: { readonly holderName: string | undefined };
}

/**
 * Wraps `LeaseLock.acquire`/`tryAcquire`: the span `asc.lock.acquire` (child of `parent`, the
 * caller's `tracingOptions.tracingContext`, when given), the wait duration and the handoffs.
 */
export async function traceAcquire<H extends { readonly fencingToken: number | undefined } | undefined>(
  lock: LockLike,
  waits: boolean,
  parent: TracingContext | undefined,
  acquire: () => Promise<H>,
): Promise<H> {
  if (!openTelemetryLoaded()) await loadOpenTelemetry();
  const scope = openScope(
    SPAN.lockAcquire,
    () => ({
      ...resourceOf(lock.leasable),
      [ATTR.holder]: describeHolder({ name: lock.options.holderName, host: hostname(), pid: process.pid }),
      [ATTR.lockWaits]: waits,
    }),
    undefined,
    parent,
  );
  if (!scope) return acquire();
  const made = instruments(scope.telemetry);
  return traced(
    scope,
    acquire,
    (handle) => {
      const outcome = handle ? "acquired" : "busy";
      made?.wait.record(secondsSince(scope.startedAt), outcomeAttributes(outcome));
      if (handle && scope.detail !== undefined) made?.handoffs.add(1);
      return {
        outcome,
        attributes: () => ({
          [ATTR.lockWait]: secondsSince(scope.startedAt),
          [ATTR.lockAttempts]: scope.count,
          ...(handle?.fencingToken === undefined ? {} : { [ATTR.fencingToken]: handle.fencingToken }),
          ...(scope.detail === undefined ? {} : { [ATTR.previousHolder]: scope.detail }),
        }),
      };
    },
    (error) => {
      const outcome = codeOf(error) === "LockTimeout" ? "timeout" : failureOutcome(error);
      made?.wait.record(secondsSince(scope.startedAt), outcomeAttributes(outcome, error));
    },
  );
}

/** One acquisition request of the lock under way (counted on its span). */
export function noteLockAttempt(): void {
  const scope = currentScope();
  if (scope) scope.count += 1;
}

/** The lock was seen held by someone else while acquiring: an event when the holder changes. */
export function noteLockBusy(holder: Holder | undefined): void {
  const scope = currentScope();
  if (!scope || holder === undefined) return;
  instrumentation(() => {
    const described = describeHolder(holder);
    if (described === scope.detail) return;
    scope.detail = described;
    scope.span?.addEvent(EVENT.lockBusy, () => ({ [ATTR.previousHolder]: described }));
  }, undefined);
}

/** A held lock ended: released (`lost` undefined) or lost. Records the hold time, and a loss. */
export function noteLockEnded(
  leasable: { readonly description: string },
  acquiredAt: Date,
  lost?: { reason: string; error: unknown },
): void {
  const on = telemetryIfLoaded();
  if (!on) return;
  instrumentation(() => {
    const made = instruments(on);
    const heldFor = Math.max(0, (Date.now() - acquiredAt.getTime()) / 1000);
    made?.hold.record(heldFor, { [ATTR.outcome]: lost ? "lost" : "released" });
    if (!lost) return;
    made?.losses.add(1, { [ATTR.lossReason]: lost.reason });
    momentSpan(
      SPAN.lockLost,
      () => ({ ...resourceOf(leasable), [ATTR.lossReason]: lost.reason, [ATTR.heldFor]: heldFor }),
      lost.error,
    );
  }, undefined);
}

/** A background renewal failed (and will be tried again, or the lock is lost: see {@link noteLockEnded}). */
export function noteRenewalFailed(leasable: { readonly description: string }, error: unknown): void {
  const on = telemetryIfLoaded();
  if (!on) return;
  instrumentation(() => {
    instruments(on)?.renewalFailures.add(1, { [ATTR.errorType]: errorType(error) });
    momentSpan(SPAN.lockRenewalFailed, () => resourceOf(leasable), error);
  }, undefined);
}

/** This process became leader, or stepped down. */
export function noteLeaderChange(
  leasable: { readonly description: string },
  identity: string,
  transition: "elected" | "stepped-down",
): void {
  const on = telemetryIfLoaded();
  if (!on) return;
  instrumentation(() => {
    instruments(on)?.leaderChanges.add(1, { [ATTR.leaderTransition]: transition });
    momentSpan(SPAN.leaderChange, () => ({
      ...resourceOf(leasable),
      [ATTR.leaderIdentity]: identity,
      [ATTR.leaderTransition]: transition,
    }));
  }, undefined);
}
