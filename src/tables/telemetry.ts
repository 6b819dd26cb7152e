/**
 * The batch writer's telemetry (docs/observability.md): the span `asc.tables.batch_write` around
 * one `writeBatch` call (transactions planned, committed, failed, not sent) and the histogram of
 * actions per entity group transaction sent.
 *
 * As everywhere in the library: every call into OpenTelemetry goes through the fail-safe wrappers
 * of `../observability/`, and the batch's result or error passes through unchanged, after the
 * batch has decided it.
 */
import { traced } from "../observability/helpers.js";
import { ATTR, METRIC, SPAN } from "../observability/names.js";
import { defineInstruments, loadOpenTelemetry, openTelemetryLoaded, SMALL_COUNTS } from "../observability/otel.js";
import { resourceAttributes } from "../observability/resource.js";
import { openScope, type TracingContext } from "../observability/scope.js";

const instruments = defineInstruments((meter) => ({
  transactionSize: meter.histogram(METRIC.transactionSize, {
    description: "Actions per entity group transaction",
    unit: "{operation}",
    boundaries: SMALL_COUNTS,
  }),
}));

/** What the batch span reads of `writeBatch`'s result. */
interface BatchResult {
  readonly ok: boolean;
  readonly transactions: readonly { readonly status: string; readonly actionIndexes: readonly number[] }[];
}

/**
 * Wraps one `writeBatch` call: the span `asc.tables.batch_write` (child of `parent`, the caller's
 * `tracingOptions.tracingContext`, when given) and the transaction sizes.
 */
export async function traceBatch<R extends BatchResult>(
  table: { readonly url: string; readonly tableName: string },
  transactions: number,
  operations: number,
  parent: TracingContext | undefined,
  write: () => Promise<R>,
): Promise<R> {
  if (!openTelemetryLoaded()) await loadOpenTelemetry();
  const scope = openScope(
    SPAN.batchWrite,
    () => ({
      ...resourceAttributes({ kind: "table", container: table.tableName, url: table.url }),
      [ATTR.transactions]: transactions,
      [ATTR.operations]: operations,
    }),
    undefined,
    parent,
  );
  if (!scope) return write();
  const made = instruments(scope.telemetry);
  return traced(scope, write, (result) => {
    const counts = { committed: 0, failed: 0, "not-sent": 0 } as Record<string, number>;
    for (const t of result.transactions) {
      counts[t.status] = (counts[t.status] ?? 0) + 1;
      if (t.status !== "not-sent") made?.transactionSize.record(t.actionIndexes.length);
    }
    return {
      outcome: result.ok ? "committed" : counts.committed ? "partial" : "failed",
      attributes: () => ({
        [ATTR.committedTransactions]: counts.committed ?? 0,
        [ATTR.failedTransactions]: counts.failed ?? 0,
        [ATTR.notSentTransactions]: counts["not-sent"] ?? 0,
      }),
    };
  });
}
