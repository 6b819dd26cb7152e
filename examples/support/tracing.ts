/**
 * OpenTelemetry set up the way an application would, kept in memory so that an example (or a test)
 * can print what was recorded: a tracer provider with an in-memory exporter, a meter provider with
 * a reader to collect from, and the Azure SDK's own spans switched on.
 *
 * The Azure SDK emits spans through `@azure/core-tracing` once an OpenTelemetry instrumenter is
 * plugged in. An application does that with `registerInstrumentations` and the Azure SDK
 * instrumentation, loaded before it with `node --import` (`./instrumentation.mjs`, the standard
 * set-up: docs/observability.md). Here the set-up starts inside a running process (an example's
 * `main`, a jest test, where no loader hook can be added any more), so the instrumentation's own
 * patch is applied to the imported `@azure/core-tracing` directly, below: the same instrumenter.
 */
import * as coreTracing from "@azure/core-tracing";
import { createAzureSdkInstrumentation } from "@azure/opentelemetry-instrumentation-azure-sdk";
import { context, metrics, SpanKind, SpanStatusCode, trace, type AttributeValue } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { MeterProvider, MetricReader, type ResourceMetrics } from "@opentelemetry/sdk-metrics";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from "@opentelemetry/sdk-trace-base";

/** A finished span, as plain data (it crosses process boundaries as JSON). */
export interface SpanRecord {
  readonly name: string;
  /** `internal`, `consumer`, `client`, ... */
  readonly kind: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | undefined;
  readonly attributes: Readonly<Record<string, AttributeValue | undefined>>;
  readonly events: readonly { readonly name: string; readonly attributes: Readonly<Record<string, unknown>> }[];
  readonly status: "ok" | "error" | "unset";
  readonly startTimeInMs: number;
  readonly durationInMs: number;
}

/** One data point of an instrument: a counter's value, or a histogram's count and sum. */
export interface MetricPoint {
  readonly name: string;
  readonly attributes: Readonly<Record<string, unknown>>;
  readonly value: number;
  readonly count?: number;
}

/** A reader the caller collects from when it wants (no timer). */
class OnDemandReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

/** Registers the providers globally; `stop()` unregisters them. */
export function startTracing(options: { contextManager?: boolean } = {}) {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  trace.setGlobalTracerProvider(tracerProvider);
  const contextManager = options.contextManager ? new AsyncLocalStorageContextManager().enable() : undefined;
  if (contextManager) context.setGlobalContextManager(contextManager);
  const reader = new OnDemandReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  metrics.setGlobalMeterProvider(meterProvider);
  const instrumentation = createAzureSdkInstrumentation({ enabled: false }) as unknown as {
    getModuleDefinitions(): { patch?: (exports: unknown, version?: string) => unknown }[];
  };
  for (const definition of instrumentation.getModuleDefinitions()) definition.patch?.(coreTracing, undefined);
  return {
    /** The spans finished so far. */
    spans: (): SpanRecord[] => exporter.getFinishedSpans().map(toRecord),
    /** The metrics recorded so far. */
    async metrics(): Promise<MetricPoint[]> {
      const { resourceMetrics } = await reader.collect();
      return toPoints(resourceMetrics);
    },
    async stop(): Promise<void> {
      trace.disable();
      metrics.disable();
      if (contextManager) context.disable();
      await Promise.all([tracerProvider.shutdown(), meterProvider.shutdown()]);
    },
  };
}

function toRecord(span: ReadableSpan): SpanRecord {
  const [seconds, nanos] = span.duration;
  return {
    name: span.name,
    kind: SpanKind[span.kind].toLowerCase(),
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
    parentSpanId: span.parentSpanContext?.spanId,
    attributes: { ...span.attributes },
    events: span.events.map((e) => ({ name: e.name, attributes: { ...e.attributes } })),
    status:
      span.status.code === SpanStatusCode.ERROR ? "error" : span.status.code === SpanStatusCode.OK ? "ok" : "unset",
    startTimeInMs: span.startTime[0] * 1000 + span.startTime[1] / 1e6,
    durationInMs: seconds * 1000 + nanos / 1e6,
  };
}

function toPoints(resourceMetrics: ResourceMetrics): MetricPoint[] {
  return resourceMetrics.scopeMetrics.flatMap((scope) =>
    scope.metrics.flatMap((metric) =>
      metric.dataPoints.map((point) => {
        const value = point.value as number | { sum?: number; count: number };
        return typeof value === "number"
          ? { name: metric.descriptor.name, attributes: { ...point.attributes }, value }
          : {
              name: metric.descriptor.name,
              attributes: { ...point.attributes },
              value: value.sum ?? 0,
              count: value.count,
            };
      }),
    ),
  );
}

/** Every span under `root`, at any depth. */
export function descendants(spans: readonly SpanRecord[], root: SpanRecord): SpanRecord[] {
  const children = spans.filter((s) => s.parentSpanId === root.spanId);
  return children.flatMap((child) => [child, ...descendants(spans, child)]);
}

/** The spans as an indented tree, children under their parent, in start order. */
export function formatTraceTree(spans: readonly SpanRecord[], { attributes = true } = {}): string {
  const ids = new Set(spans.map((s) => s.spanId));
  const ordered = [...spans].sort((a, b) => a.startTimeInMs - b.startTimeInMs);
  const lines: string[] = [];
  const print = (span: SpanRecord, depth: number) => {
    const shown = Object.entries(span.attributes)
      .filter(
        ([key]) =>
          attributes &&
          (key.startsWith("asc.") ||
            key.startsWith("messaging.") ||
            key === "http.status_code" ||
            key === "http.response.status_code"),
      )
      .map(([key, value]) => `${key}=${JSON.stringify(value)}`);
    const events = span.events.map((e) => `!${e.name}`);
    lines.push(
      `${"  ".repeat(depth)}${span.name} (${span.durationInMs.toFixed(1)} ms)${[...shown, ...events].map((s) => ` ${s}`).join("")}`,
    );
    for (const child of ordered.filter((s) => s.parentSpanId === span.spanId)) print(child, depth + 1);
  };
  for (const root of ordered.filter((s) => s.parentSpanId === undefined || !ids.has(s.parentSpanId))) print(root, 0);
  return lines.join("\n");
}
