/**
 * The semaphore's telemetry: the span `asc.semaphore.acquire` around each `acquire`/`tryAcquire`
 * call (looks made, slot and fencing token won, how long it waited) and the wait histogram. The
 * permit itself is a slot's lease lock, so its hold time, loss and renewal failures are the lock's
 * (`asc.lock.*`), and each try of a slot is an `asc.lock.acquire` span nested under this one.
 *
 * As everywhere in the library: every call into OpenTelemetry goes through the fail-safe wrappers, the library's own instrumentation code runs inside
 * `instrumentation()`, and the wrapped operation's result or error passes through unchanged, after
 * the operation has decided it.
 */
import { hostname } from "node:os";
import { codeOf, describeHolder, failureOutcome, outcomeAttributes } from "../observability/helpers.js";
import { ATTR, METRIC, SPAN } from "../observability/names.js";
import { defineInstruments, loadOpenTelemetry, openTelemetryLoaded, WAIT_SECONDS } from "../observability/otel.js";
import { resourceAttributes } from "../observability/resource.js";
import {
  currentScope,
  endScope,
  instrumentation,
  openScope,
  runInScope,
  secondsSince,
  type TracingContext,
} from "../observability/scope.js";

const instruments = defineInstruments((meter) => ({
  wait: meter.histogram(METRIC.semaphoreWait, {
    description: "Time spent acquiring a semaphore permit",
    unit: "s",
    boundaries: WAIT_SECONDS,
  }),
}));

/** What the span reads of the semaphore. */
interface SemaphoreLike {
  readonly container: { readonly containerName: string; readonly url: string };
  readonly name: string;
  readonly maxCount: number;
  readonly holderName: string | undefined;
}

/** What the span reads of a permit. */
interface PermitLike {
  readonly slot: number;
  readonly fencingToken: number | undefined;
}

/**
 * Wraps `BlobSemaphore.acquire`/`tryAcquire`: the span `asc.semaphore.acquire` (child of `parent`,
 * the caller's `tracingOptions.tracingContext`, when given) and the wait histogram.
 */
export async function traceSemaphoreAcquire<P extends PermitLike | undefined>(
  semaphore: SemaphoreLike,
  waits: boolean,
  parent: TracingContext | undefined,
  acquire: () => Promise<P>,
): Promise<P> {
  if (!openTelemetryLoaded()) await loadOpenTelemetry();
  const scope = openScope(
    SPAN.semaphoreAcquire,
    () => ({
      ...resourceAttributes({
        kind: "semaphore",
        container: semaphore.container.containerName,
        name: semaphore.name,
        url: semaphore.container.url,
      }),
      [ATTR.semaphoreMaxCount]: semaphore.maxCount,
      [ATTR.holder]: describeHolder({ name: semaphore.holderName, host: hostname(), pid: process.pid }),
      [ATTR.semaphoreWaits]: waits,
    }),
    undefined,
    parent,
  );
  if (!scope) return acquire();
  const end = (outcome: string, permit?: PermitLike, error?: unknown) =>
    instrumentation(() => {
      const waited = secondsSince(scope.startedAt);
      instruments(scope.telemetry)?.wait.record(waited, outcomeAttributes(outcome, error));
      endScope(
        scope,
        outcome,
        () => ({
          [ATTR.semaphoreWait]: waited,
          [ATTR.semaphoreLooks]: scope.count,
          ...(permit ? { [ATTR.semaphoreSlot]: permit.slot } : {}),
          ...(permit?.fencingToken === undefined ? {} : { [ATTR.fencingToken]: permit.fencingToken }),
        }),
        error,
      );
    }, undefined);
  let permit: P;
  try {
    permit = await runInScope(scope, acquire);
  } catch (error) {
    end(codeOf(error) === "SemaphoreTimeout" ? "timeout" : failureOutcome(error), undefined, error);
    throw error;
  }
  end(permit ? "acquired" : "busy", permit);
  return permit;
}

/** One look at the slots made for the call under way (counted on its span). */
export function noteSemaphoreLook(): void {
  const scope = currentScope();
  if (scope) scope.count += 1;
}
