/**
 * The scheduled jobs' telemetry: a span per run (`asc.schedule.run`, the job's own SDK calls nested
 * under it), the runs by outcome, how late each run started, and the ticks recorded as missed.
 *
 * Called after the state changes they describe (the claim and the record written, the events
 * emitted), and never in their way: every call goes through the fail-safe wrappers of
 * `../observability/` and answers nothing the schedule decides on.
 */
import { outcomeAttributes, telemetryIfLoaded } from "../observability/helpers.js";
import { ATTR, METRIC, SPAN } from "../observability/names.js";
import { defineInstruments, loadOpenTelemetry, openTelemetryLoaded, WAIT_SECONDS } from "../observability/otel.js";
import { resourceAttributes, type StorageResource } from "../observability/resource.js";
import { endScope, instrumentation, openScope, runInScope, type Scope } from "../observability/scope.js";

const instruments = defineInstruments((meter) => ({
  runs: meter.counter(METRIC.scheduleRuns, {
    description: "Scheduled runs by this instance, by outcome",
    unit: "{run}",
  }),
  lag: meter.histogram(METRIC.scheduleLag, {
    description: "How late after its due time a scheduled run started",
    unit: "s",
    boundaries: WAIT_SECONDS,
  }),
  missed: meter.counter(METRIC.scheduleMissed, { description: "Ticks recorded as missed by catch-up", unit: "{tick}" }),
}));

export { runInScope };

/** How a run of this instance ended, as `asc.outcome`. */
type RunOutcome = "succeeded" | "failed" | "lease-lost" | "stopped" | "superseded" | "unrecorded";

/** Loads the OpenTelemetry API once (the first run awaits it; later runs never do). */
export async function telemetryReady(): Promise<void> {
  if (!openTelemetryLoaded()) await loadOpenTelemetry();
}

/** Opens the span of one run (child of nothing: a schedule's runs start traces of their own). */
export function startRun(
  resource: StorageResource,
  run: { readonly tick: string; readonly attempt: number; readonly lateByInMs: number; readonly fencingToken?: number },
): Scope | undefined {
  if (!openTelemetryLoaded()) return undefined;
  const scope = openScope(SPAN.scheduleRun, () => ({
    ...resourceAttributes(resource),
    [ATTR.scheduleTick]: run.tick,
    [ATTR.scheduleAttempt]: run.attempt,
    [ATTR.scheduleLate]: Math.max(0, run.lateByInMs) / 1000,
    ...(run.fencingToken === undefined ? {} : { [ATTR.fencingToken]: run.fencingToken }),
  }));
  if (scope)
    instrumentation(() => instruments(scope.telemetry)?.lag.record(Math.max(0, run.lateByInMs) / 1000), undefined);
  return scope;
}

/** Ends a run's span with its outcome (after the status and the events), and counts it. */
export function endRun(scope: Scope | undefined, outcome: RunOutcome, error?: unknown): void {
  if (!scope) return;
  instrumentation(() => {
    const failed = outcome !== "succeeded" && error !== undefined;
    instruments(scope.telemetry)?.runs.add(1, outcomeAttributes(outcome, failed ? error : undefined));
    endScope(scope, outcome, undefined, outcome === "succeeded" ? undefined : error);
  }, undefined);
}

/** Counts ticks recorded as missed. */
export function noteMissed(count: number): void {
  if (!openTelemetryLoaded() || count <= 0) return;
  instrumentation(() => instruments(telemetryIfLoaded())?.missed.add(count), undefined);
}
