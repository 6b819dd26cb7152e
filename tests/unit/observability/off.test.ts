/**
 * With OpenTelemetry off (the package absent, or no provider registered) the instrumented call
 * sites are no-ops: no span, no attribute object, no context handed to the SDK (issue 14).
 */
import { jest } from "@jest/globals";
import { trace } from "@opentelemetry/api";
import {
  AlwaysOffSampler,
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { finishUpdate, startUpdate } from "../../../src/optimistic/telemetry.js";
import { noteLockEnded, noteRenewalFailed } from "../../../src/lease/telemetry.js";
import { traceMessage } from "../../../src/queue/telemetry.js";
import { loadOpenTelemetry, resetOpenTelemetry, telemetry } from "../../../src/observability/otel.js";
import { openScope, runInScope, sdkTracing } from "../../../src/observability/scope.js";

const result = { written: true, attempts: 1, coalesced: 1, recoveredLostResponse: false };

afterEach(() => {
  trace.disable();
  resetOpenTelemetry();
});

it("package absent: nothing is on, and every helper gives back what it was given", async () => {
  const notFound = Object.assign(new Error("Cannot find package '@opentelemetry/api'"), {
    code: "ERR_MODULE_NOT_FOUND",
  });
  await loadOpenTelemetry(() => Promise.reject(notFound));
  expect(telemetry()).toBeUndefined();
  expect(startUpdate({ description: "blob 'c/b'" })).toBeUndefined();
  const outcome = Promise.resolve(result);
  expect(finishUpdate(undefined, outcome)).toBe(outcome);
  expect(sdkTracing()).toBeUndefined();
  noteLockEnded({ description: "blob 'c/lock'" }, new Date(), { reason: "lease-gone", error: new Error("gone") });
  noteRenewalFailed({ description: "blob 'c/lock'" }, new Error("503"));
  expect(runInScope(undefined, () => sdkTracing())).toBeUndefined();
});

it("API present, no provider registered: no span is started and no attributes are built", async () => {
  await loadOpenTelemetry();
  const attributes = jest.fn(() => ({}));
  expect(telemetry()).toBeUndefined();
  expect(openScope("asc.test", attributes)).toBeUndefined();
  expect(attributes).not.toHaveBeenCalled();
  // The consumer's wrapper hands back the processing's own promise: nothing is built per message.
  const processing = Promise.resolve();
  const process = jest.fn((step: string) => (step === "step" ? processing : Promise.reject(new Error(step))));
  expect(traceMessage("jobs", { messageId: "m1", dequeueCount: 1 }, 1_000, process, "step")).toBe(processing);
});

it("a provider registered later is seen; a span that does not record gets no attributes built", async () => {
  await loadOpenTelemetry();
  expect(telemetry()).toBeUndefined();
  const exporter = new InMemorySpanExporter();
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  const scope = startUpdate({ description: "blob 'c/b'" });
  expect(scope?.recording).toBe(true);
  expect(runInScope(scope, () => sdkTracing())).toBe(scope?.tracingOptions);
  await finishUpdate(scope, Promise.resolve(result));
  expect(exporter.getFinishedSpans().map((s) => [s.name, s.attributes["asc.outcome"]])).toEqual([
    ["asc.optimistic.update", "written"],
  ]);

  trace.disable();
  trace.setGlobalTracerProvider(new BasicTracerProvider({ sampler: new AlwaysOffSampler() }));
  const attributes = jest.fn(() => ({}));
  const unsampled = openScope("asc.test", attributes);
  expect(unsampled?.recording).toBe(false);
  expect(attributes).not.toHaveBeenCalled();
});
