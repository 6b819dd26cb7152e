/**
 * The optimistic updates' telemetry (docs/observability.md): the span `asc.optimistic.update`
 * around each `optimisticUpdate` call, from its call to its outcome, with an event per conflict;
 * the histograms of rounds and conflicts per update, and the count of writes whose outcome no read
 * could settle.
 *
 * As everywhere in the library: every call into OpenTelemetry goes through the fail-safe wrappers
 * of `../observability/`, the library's own instrumentation code runs inside `instrumentation()`,
 * and the update's result or error passes through unchanged, after the update has decided it.
 */
import { codeOf, failureOutcome } from "../observability/helpers.js";
import { ATTR, EVENT, EVENT_ATTR, METRIC, SPAN } from "../observability/names.js";
import { defineInstruments, SMALL_COUNTS } from "../observability/otel.js";
import { resourceOf } from "../observability/resource.js";
import { endScope, instrumentation, openScope, type Scope, type TracingContext } from "../observability/scope.js";

const instruments = defineInstruments((meter) => ({
  attempts: meter.histogram(METRIC.updateAttempts, {
    description: "Read-modify-write rounds per optimistic update",
    unit: "{attempt}",
    boundaries: SMALL_COUNTS,
  }),
  conflicts: meter.histogram(METRIC.updateConflicts, {
    description: "Conflicts met per optimistic update",
    unit: "{conflict}",
    boundaries: SMALL_COUNTS,
  }),
  unknownOutcomes: meter.counter(METRIC.unknownOutcomes, {
    description: "Optimistic writes whose outcome could not be settled",
    unit: "{write}",
  }),
}));

/** What an update's outcome carries (the engine's `OptimisticUpdateResult`). */
interface UpdateResult {
  readonly written: boolean;
  readonly attempts: number;
  readonly coalesced: number;
  readonly recoveredLostResponse: boolean;
}

/**
 * Opens the span of one `optimisticUpdate` call (once the API is loaded), child of `parent` (the
 * caller's `tracingOptions.tracingContext`) or of the active span; `undefined` when off.
 */
export function startUpdate(cell: { readonly description: string }, parent?: TracingContext): Scope | undefined {
  return openScope(SPAN.optimisticUpdate, () => resourceOf(cell), undefined, parent);
}

/** A conflict in a round: counted on (and told to) the span of every update sharing the round. */
export function noteConflict(
  participants: readonly { readonly settings: { readonly observation?: Scope | undefined } }[],
  attempt: number,
  delayInMs: number,
): void {
  instrumentation(() => {
    for (const { settings } of participants) {
      const scope = settings.observation;
      if (!scope) continue;
      scope.count += 1;
      scope.span?.addEvent(EVENT.conflict, () => ({ [ATTR.attempts]: attempt, [EVENT_ATTR.delay]: delayInMs / 1000 }));
    }
  }, undefined);
}

/** Ends the update's span and records its metrics when `outcome` settles; the promise itself when off. */
export function finishUpdate<R extends UpdateResult>(scope: Scope | undefined, outcome: Promise<R>): Promise<R> {
  if (!scope) return outcome;
  const made = instruments(scope.telemetry);
  return outcome.then(
    (result) => {
      instrumentation(() => {
        made?.attempts.record(result.attempts);
        made?.conflicts.record(scope.count);
        endScope(scope, result.written ? "written" : "skipped", () => ({
          [ATTR.attempts]: result.attempts,
          [ATTR.conflicts]: scope.count,
          [ATTR.coalesced]: result.coalesced,
          [ATTR.recoveredLostResponse]: result.recoveredLostResponse,
        }));
      }, undefined);
      return result;
    },
    (error: unknown) => {
      instrumentation(() => {
        const code = codeOf(error);
        const outcome =
          code === "OptimisticOutcomeUnknown"
            ? "unknown"
            : code === "OptimisticConflict"
              ? "conflict"
              : failureOutcome(error);
        if (outcome === "unknown") made?.unknownOutcomes.add(1);
        made?.conflicts.record(scope.count);
        endScope(scope, outcome, () => ({ [ATTR.conflicts]: scope.count }), error);
      }, undefined);
      throw error;
    },
  );
}
