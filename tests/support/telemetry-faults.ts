/**
 * An OpenTelemetry set-up that throws where it is told to, for the telemetry explorer
 * (tests/integration/explorer/telemetry.test.ts): the real SDK (a tracer provider with an in-memory
 * exporter, a meter provider with a reader, the async-hooks context manager), each part behind a
 * proxy that counts the calls made into it and throws on the planned one.
 *
 * Fault kinds, each counted on its own:
 * - `tracer`: any call into the tracer provider, a tracer or a span (`getTracer`, `startSpan`,
 *   `isRecording`, `setAttribute(s)`, `addEvent`, `recordException`, `setStatus`, `end`, ...);
 * - `processor`: a span processor's `onStart` / `onEnd` (the SDK calls them from `startSpan` and `end`);
 * - `exporter`: the exporter's `export` (behind a `SimpleSpanProcessor`);
 * - `meter`: any call into the meter provider or the meter (`getMeter`, `createHistogram`,
 *   `createCounter`: the library makes its instruments once per registered provider);
 * - `instrument`: any call into an instrument (`record`, `add`);
 * - `context`: any call into the context manager (`active`, `with`, `bind`).
 *
 * A plan throws on the `at`-th call of its kind, or on `"every"` call of it. The thrown value is an
 * Error for the processor and the exporter (as a buggy one would), and a null-prototype object
 * for the others (the value the library's failure paths once could not print).
 */
import { context, metrics, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace-base";

export const TELEMETRY_FAULT_KINDS = ["tracer", "processor", "exporter", "meter", "instrument", "context"] as const;
export type TelemetryFaultKind = (typeof TELEMETRY_FAULT_KINDS)[number];

/** Where the set-up throws: the `at`-th call of `kind` (1 for the first), or every one. */
export interface TelemetryFaultPlan {
  readonly kind: TelemetryFaultKind;
  readonly at: number | "every";
}

/** A registered set-up: its call counts, how many faults it threw, what it recorded; `uninstall()` it after the run. */
export interface InstalledTelemetry {
  readonly calls: Readonly<Record<TelemetryFaultKind, number>>;
  readonly thrown: () => number;
  /** The spans the exporter received. */
  readonly spans: () => readonly ReadableSpan[];
  uninstall(): Promise<void>;
}

class OnDemandReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

/** Methods whose answer is another OpenTelemetry object, and the kind its calls count under. */
const WRAPPED_ANSWERS: Readonly<Record<string, TelemetryFaultKind>> = {
  getTracer: "tracer",
  startSpan: "tracer",
  getMeter: "meter",
  createHistogram: "instrument",
  createCounter: "instrument",
  createGauge: "instrument",
  createUpDownCounter: "instrument",
};

/** Registers the set-up globally (tracer provider, meter provider, context manager), faulty as planned. */
export function installTelemetry(plan?: TelemetryFaultPlan): InstalledTelemetry {
  const calls: Record<TelemetryFaultKind, number> = {
    tracer: 0,
    processor: 0,
    exporter: 0,
    meter: 0,
    instrument: 0,
    context: 0,
  };
  let thrown = 0;
  let armed = true;
  const fire = (kind: TelemetryFaultKind) => {
    if (!armed) return;
    calls[kind] += 1;
    if (plan?.kind !== kind || (plan.at !== "every" && plan.at !== calls[kind])) return;
    thrown += 1;
    if (kind === "processor" || kind === "exporter") throw new Error(`telemetry fault: ${kind} call ${calls[kind]}`);
    throw Object.assign(Object.create(null) as object, { fault: `${kind} call ${calls[kind]}` });
  };

  const counting = <T extends object>(target: T, kind: TelemetryFaultKind): T => {
    const proxy: T = new Proxy(target, {
      get(t, key) {
        const value: unknown = Reflect.get(t, key, t);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          fire(kind);
          const answer: unknown = (value as (...a: unknown[]) => unknown).apply(t, args);
          if (answer === t) return proxy; // span.setAttribute(...) and the like answer the span itself
          const answerKind = typeof key === "string" ? WRAPPED_ANSWERS[key] : undefined;
          if (answerKind && typeof answer === "object" && answer !== null) return counting(answer, answerKind);
          return answer;
        };
      },
    });
    return proxy;
  };

  const exported = new InMemorySpanExporter();
  const exporter: SpanExporter = {
    export(spans, done) {
      fire("exporter");
      exported.export(spans, done);
    },
    shutdown: () => exported.shutdown(),
    forceFlush: () => exported.forceFlush(),
  };
  const processor: SpanProcessor = {
    onStart: () => fire("processor"),
    onEnd: () => fire("processor"),
    forceFlush: async () => {},
    shutdown: async () => {},
  };
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [processor, new SimpleSpanProcessor(exporter)] });
  const meterProvider = new MeterProvider({ readers: [new OnDemandReader()] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  trace.setGlobalTracerProvider(counting(tracerProvider, "tracer"));
  metrics.setGlobalMeterProvider(counting(meterProvider, "meter"));
  context.setGlobalContextManager(counting(contextManager, "context"));
  return {
    calls,
    thrown: () => thrown,
    spans: () => exported.getFinishedSpans(),
    async uninstall() {
      armed = false; // unregistering calls into the parts too: neither counted nor faulty
      trace.disable();
      metrics.disable();
      context.disable();
      contextManager.disable();
      await Promise.allSettled([tracerProvider.shutdown(), meterProvider.shutdown()]);
    },
  };
}
