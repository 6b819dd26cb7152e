/**
 * What the features' telemetry files share (`src/<feature>/telemetry.ts`): running an operation in
 * its scope and ending the span after it, the outcome of an error, and the holder in words.
 *
 * Each helper passes the operation's own result or error through unchanged: telemetry after the
 * operation, and never in its way (`./guard.ts`).
 */
import type { Attributes } from "@opentelemetry/api";
import { stringProperty } from "../internal/describe-error.js";
import { ATTR } from "./names.js";
import { openTelemetryLoaded, telemetry, type Telemetry } from "./otel.js";
import { endScope, errorType, instrumentation, runInScope, type Scope } from "./scope.js";

/**
 * Runs `fn` in the scope and ends its span with `describe`'s outcome (or, when `fn` throws,
 * `onError`'s, `failed` by default). Answers what `fn` answers, or throws what it throws.
 */
export async function traced<R>(
  scope: Scope,
  fn: () => Promise<R>,
  describe: (result: R) => { outcome: string; attributes?: () => Attributes },
  onError?: (error: unknown) => string | void,
): Promise<R> {
  let result: R;
  try {
    result = await runInScope(scope, fn);
  } catch (error) {
    instrumentation(() => {
      const outcome = onError?.(error) ?? failureOutcome(error);
      endScope(scope, outcome, undefined, error);
    }, undefined);
    throw error;
  }
  instrumentation(() => {
    const { outcome, attributes } = describe(result);
    endScope(scope, outcome, attributes);
  }, undefined);
  return result;
}

/** The telemetry when the API was loaded (events after an instrumented call never load it themselves). */
export function telemetryIfLoaded(): Telemetry | undefined {
  return openTelemetryLoaded() ? telemetry() : undefined;
}

/** The error's `code`, when it has one. */
export function codeOf(error: unknown): string | undefined {
  return stringProperty(error, "code");
}

/** Whether the error is a cancellation (`AbortError`). */
function isAbort(error: unknown): boolean {
  return stringProperty(error, "name") === "AbortError";
}

/** `cancelled` for a cancellation, `failed` otherwise. */
export function failureOutcome(error: unknown): "cancelled" | "failed" {
  return isAbort(error) ? "cancelled" : "failed";
}

/** The metric attributes of an outcome: `asc.outcome`, and `error.type` when there was an error. */
export function outcomeAttributes(outcome: string, error?: unknown): Attributes {
  return error === undefined
    ? { [ATTR.outcome]: outcome }
    : { [ATTR.outcome]: outcome, [ATTR.errorType]: errorType(error) };
}

/** A lock's holder in words: `name on host (pid n)`. */
export function describeHolder(holder: {
  readonly name?: string | undefined;
  readonly host: string;
  readonly pid: number;
}): string {
  return `${holder.name ? `${holder.name} on ` : ""}${holder.host} (pid ${holder.pid})`;
}
