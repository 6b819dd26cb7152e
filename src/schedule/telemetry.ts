/**
 * The scheduled jobs' telemetry: a span per run (`asc.schedule.run`, the job's own SDK calls nested
 * under it), the runs by outcome, how late each run started, and the ticks recorded as missed.
 *
 * Called after the state changes they describe (the claim and the record written, the events
 * emitted), and never in their way: every call goes through the fail-safe wrappers of
 * `../observability/` and answers nothing the schedule decides on.
 */
import { ATTR, SPAN } from "../observability/names.js";
import { loadOpenTelemetry, openTelemetryLoaded, telemetry } from "../observability/otel.js";
import { endScope, instrumentation, openScope, runInScope, type Scope } from "../observability/scope.js";

export { runInScope };

/** How a run of this instance ended, as `asc.outcome`. */
type RunOutcome = "succeeded" | "failed" | "lease-lost" | "stopped" | "superseded" | "unrecorded";

/** Loads the OpenTelemetry API once (the first run awaits it; later runs never do). */
export async function telemetryReady(): Promise<void> {
  if (!openTelemetryLoaded()) await loadOpenTelemetry();
}

/** Opens the span of one run (child of nothing: a schedule's runs start traces of their own). */
export function startRun(
  target: string,
  run: { readonly tick: string; readonly attempt: number; readonly lateByInMs: number; readonly fencingToken?: number },
): Scope | undefined {
  if (!openTelemetryLoaded()) return undefined;
  const scope = openScope(SPAN.scheduleRun, () => ({
    [ATTR.target]: target,
    [ATTR.scheduleTick]: run.tick,
    [ATTR.scheduleAttempt]: run.attempt,
    [ATTR.scheduleLate]: Math.max(0, run.lateByInMs) / 1000,
    ...(run.fencingToken === undefined ? {} : { [ATTR.fencingToken]: run.fencingToken }),
  }));
  if (scope)
    instrumentation(
      () => scope.telemetry.instruments?.scheduleLag.record(Math.max(0, run.lateByInMs) / 1000),
      undefined,
    );
  return scope;
}

/** Ends a run's span with its outcome (after the status and the events), and counts it. */
export function endRun(scope: Scope | undefined, outcome: RunOutcome, error?: unknown): void {
  if (!scope) return;
  instrumentation(() => {
    scope.telemetry.instruments?.scheduleRuns.add(1, { [ATTR.outcome]: outcome });
    endScope(scope, outcome, undefined, outcome === "succeeded" ? undefined : error);
  }, undefined);
}

/** Counts ticks recorded as missed. */
export function noteMissed(count: number): void {
  if (!openTelemetryLoaded() || count <= 0) return;
  instrumentation(() => telemetry()?.instruments?.scheduleMissed.add(count), undefined);
}
