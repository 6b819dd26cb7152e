/**
 * `tracingOptions` as the Azure SDK takes them (issue 23): its `tracingContext` is the parent of the
 * library's span, whatever the active context; a value that is not a context is a TypeError that
 * says what to pass. (The whole tree, the SDK's spans included, in an ES module process:
 * tests/integration/observability/esm-instrumentation.test.ts.)
 */
import { context, ROOT_CONTEXT, trace } from "@opentelemetry/api";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { SPAN } from "../../../src/observability/names.js";
import { loadOpenTelemetry, resetOpenTelemetry } from "../../../src/observability/otel.js";
import { checkTracingOptions } from "../../../src/observability/scope.js";
import { finishUpdate, startUpdate } from "../../../src/optimistic/telemetry.js";

afterEach(() => {
  trace.disable();
  resetOpenTelemetry();
});

it("checks tracingOptions by name: an object whose tracingContext, if any, is a context", () => {
  expect(checkTracingOptions(undefined)).toBeUndefined();
  expect(checkTracingOptions({})).toBeUndefined();
  expect(checkTracingOptions({ tracingContext: ROOT_CONTEXT })).toBe(ROOT_CONTEXT);
  expect(() => checkTracingOptions("parent" as never)).toThrow(/`tracingOptions` must be an object/);
  expect(() => checkTracingOptions({ tracingContext: { span: 1 } as never })).toThrow(
    /`tracingOptions.tracingContext` must be an OpenTelemetry Context/,
  );
});

it("the tracingContext's span is the parent of the library's span, not the active one", async () => {
  const exporter = new InMemorySpanExporter();
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  await loadOpenTelemetry();
  const request = trace.getTracer("app").startSpan("app request");
  const scope = startUpdate({ description: "my cell" }, trace.setSpan(context.active(), request));
  await finishUpdate(
    scope,
    Promise.resolve({ written: true, attempts: 1, coalesced: 1, recoveredLostResponse: false }),
  );
  request.end();
  const update = exporter.getFinishedSpans().find((s) => s.name === SPAN.optimisticUpdate);
  expect(update?.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
  expect(update?.spanContext().traceId).toBe(request.spanContext().traceId);
  // A cell of the application's own has only its description to say what it is.
  expect(update?.attributes).toMatchObject({ "asc.resource.description": "my cell" });
});
