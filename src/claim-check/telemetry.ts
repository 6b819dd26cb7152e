/**
 * The claim-check's spans (docs/observability.md): `asc.claim_check.send` around a send, and
 * `asc.claim_check.sweep` around a sweep. Each ends after the operation has settled, with its
 * outcome; none can throw into the operation or change what it answers (`observability/guard.ts`).
 */
import { failureOutcome } from "../observability/helpers.js";
import { ATTR, MESSAGING_SYSTEM, SPAN } from "../observability/names.js";
import { loadOpenTelemetry, openTelemetryLoaded } from "../observability/otel.js";
import { resourceAttributes } from "../observability/resource.js";
import { endScope, instrumentation, openScope, runInScope, type TracingContext } from "../observability/scope.js";
import type { ClaimCheckSendResult } from "./send.js";
import type { ClaimCheckSweepResult } from "./sweep.js";

/** Runs a send in its span: outcome `inline` or `stored` (payload in a blob), or `failed`. */
export async function traceSend(
  queue: { readonly name: string; readonly url: string },
  parent: TracingContext | undefined,
  send: () => Promise<ClaimCheckSendResult>,
): Promise<ClaimCheckSendResult> {
  if (!openTelemetryLoaded()) await loadOpenTelemetry();
  const scope = openScope(
    SPAN.claimCheckSend,
    () => ({
      ...resourceAttributes({ kind: "queue", container: queue.name, url: queue.url }),
      [ATTR.messagingSystem]: MESSAGING_SYSTEM,
      [ATTR.messagingDestination]: queue.name,
    }),
    undefined,
    parent,
  );
  if (!scope) return send();
  let result: ClaimCheckSendResult;
  try {
    result = await runInScope(scope, send);
  } catch (error) {
    instrumentation(() => endScope(scope, outcomeOfError(error), undefined, error), undefined);
    throw error;
  }
  instrumentation(
    () =>
      endScope(scope, result.payloadBlob === undefined ? "inline" : "stored", () => ({
        [ATTR.claimCheckMessageBytes]: result.messageBytes,
        [ATTR.claimCheckStored]: result.payloadBlob !== undefined,
      })),
    undefined,
  );
  return result;
}

/** Runs a sweep in its span: outcome `swept` (with how many were deleted), or `failed`. */
export async function traceSweep(
  container: { readonly containerName: string; readonly url: string },
  parent: TracingContext | undefined,
  sweep: () => Promise<ClaimCheckSweepResult>,
): Promise<ClaimCheckSweepResult> {
  if (!openTelemetryLoaded()) await loadOpenTelemetry();
  const scope = openScope(
    SPAN.claimCheckSweep,
    () => resourceAttributes({ kind: "container", container: container.containerName, url: container.url }),
    undefined,
    parent,
  );
  if (!scope) return sweep();
  let result: ClaimCheckSweepResult;
  try {
    result = await runInScope(scope, sweep);
  } catch (error) {
    instrumentation(() => endScope(scope, outcomeOfError(error), undefined, error), undefined);
    throw error;
  }
  instrumentation(() => endScope(scope, "swept", () => ({ [ATTR.claimCheckDeleted]: result.deleted })), undefined);
  return result;
}

function outcomeOfError(error: unknown): string {
  return failureOutcome(error);
}
