// The standard OpenTelemetry set-up of an ES module application, loaded before the application
// with `node --import ./instrumentation.mjs app.js` (docs/observability.md): after it, the Azure
// SDK's own spans (each client operation, and its HTTP requests) nest under the library's.
//
// 1. The loader hook of `import-in-the-middle`, through which OpenTelemetry instrumentations patch
//    ES modules (`require` hooks see only CommonJS). It is resolved from the Azure SDK
//    instrumentation's own folder: the hook must be the one of the `@opentelemetry/instrumentation`
//    copy that instrumentation uses, and npm may give it a nested copy of its own. `include` keeps
//    every other module unwrapped.
// 2. A tracer provider (here an in-memory exporter the examples and tests read; in production, the
//    OTLP or Azure Monitor exporter) and a context manager.
// 3. `registerInstrumentations` with the Azure SDK instrumentation, as its README shows.
import { register } from "node:module";

register(
  "@opentelemetry/instrumentation/hook.mjs",
  import.meta.resolve("@azure/opentelemetry-instrumentation-azure-sdk"),
  {
    data: { include: ["@azure/core-tracing"] },
  },
);

const { context, trace } = await import("@opentelemetry/api");
const { AsyncLocalStorageContextManager } = await import("@opentelemetry/context-async-hooks");
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } =
  await import("@opentelemetry/sdk-trace-base");
const { registerInstrumentations } = await import("@opentelemetry/instrumentation");
const { createAzureSdkInstrumentation } = await import("@azure/opentelemetry-instrumentation-azure-sdk");

const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
registerInstrumentations({ instrumentations: [createAzureSdkInstrumentation()] });

/** The spans finished so far, as plain data: name, ids, parent. */
export function finishedSpans() {
  return exporter.getFinishedSpans().map((span) => ({
    name: span.name,
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
    parentSpanId: span.parentSpanContext?.spanId ?? span.parentSpanId,
    attributes: span.attributes,
  }));
}
