/**
 * The outbox relay's span (docs/observability.md): `asc.outbox.relay` around one row's relay (its
 * send and its delete), ended after both with outcome `relayed` or `failed`. It can never throw into
 * the relay or change its outcome (`observability/guard.ts`).
 */
import { ATTR, SPAN } from "../observability/names.js";
import { loadOpenTelemetry, openTelemetryLoaded } from "../observability/otel.js";
import { endScope, instrumentation, openScope, runInScope } from "../observability/scope.js";

/** Relays one row in its span; `relay` answers whether the row was relayed, and never throws. */
export async function traceRelay(
  row: { readonly partitionKey: string; readonly sequence: number },
  relay: () => Promise<boolean>,
): Promise<boolean> {
  if (!openTelemetryLoaded()) await loadOpenTelemetry();
  const scope = openScope(SPAN.outboxRelay, () => ({
    [ATTR.outboxPartition]: row.partitionKey,
    [ATTR.outboxSequence]: row.sequence,
  }));
  if (!scope) return relay();
  const relayed = await runInScope(scope, relay);
  instrumentation(() => endScope(scope, relayed ? "relayed" : "failed"), undefined);
  return relayed;
}
