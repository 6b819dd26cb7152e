/**
 * The semaphore's telemetry: the span `asc.semaphore.acquire` around each `acquire`/`tryAcquire`
 * call (looks made, slot and fencing token won, how long it waited) and the wait histogram. The
 * permit itself is a slot's lease lock, so its hold time, loss and renewal failures are the lock's
 * (`asc.lock.*`), and each try of a slot is an `asc.lock.acquire` span nested under this one.
 *
 * As everywhere in the library (`../observability/instrument.ts`): every call into OpenTelemetry
 * goes through the fail-safe wrappers, the library's own instrumentation code runs inside
 * `instrumentation()`, and the wrapped operation's result or error passes through unchanged, after
 * the operation has decided it.
 */
import { hostname } from "node:os";
import { stringProperty } from "../internal/describe-error.js";
import { ATTR, SPAN } from "../observability/names.js";
import { loadOpenTelemetry, openTelemetryLoaded } from "../observability/otel.js";
import {
  currentScope,
  endScope,
  instrumentation,
  openScope,
  runInScope,
  secondsSince,
} from "../observability/scope.js";

/** What the span reads of the semaphore. */
interface SemaphoreLike {
  readonly description: string;
  readonly maxCount: number;
  readonly holderName: string | undefined;
}

/** What the span reads of a permit. */
interface PermitLike {
  readonly slot: number;
  readonly fencingToken: number | undefined;
}

/** Wraps `BlobSemaphore.acquire`/`tryAcquire`: the span `asc.semaphore.acquire` and the wait histogram. */
export async function traceSemaphoreAcquire<P extends PermitLike | undefined>(
  semaphore: SemaphoreLike,
  waits: boolean,
  acquire: () => Promise<P>,
): Promise<P> {
  if (!openTelemetryLoaded()) await loadOpenTelemetry();
  const scope = openScope(SPAN.semaphoreAcquire, () => ({
    [ATTR.target]: semaphore.description,
    [ATTR.semaphoreMaxCount]: semaphore.maxCount,
    [ATTR.holder]: `${semaphore.holderName ? `${semaphore.holderName} on ` : ""}${hostname()} (pid ${process.pid})`,
    [ATTR.semaphoreWaits]: waits,
  }));
  if (!scope) return acquire();
  const end = (outcome: string, permit?: PermitLike, error?: unknown) =>
    instrumentation(() => {
      const waited = secondsSince(scope.startedAt);
      scope.telemetry.instruments?.semaphoreWait.record(waited, { [ATTR.outcome]: outcome });
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
    const outcome =
      stringProperty(error, "code") === "SemaphoreTimeout"
        ? "timeout"
        : stringProperty(error, "name") === "AbortError"
          ? "cancelled"
          : "failed";
    end(outcome, undefined, error);
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
