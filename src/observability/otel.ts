/**
 * OpenTelemetry, when the application has it. `@opentelemetry/api` is an optional peer dependency,
 * loaded on the first instrumented call (as the command line tool loads `@azure/identity`: a
 * dynamic `import()`, which both the ESM and the CommonJS build keep). Then:
 *
 * - package absent, or no SDK registered: {@link telemetry} answers `undefined` and the library
 *   builds no span, no attribute, no context: one property read per call;
 * - a tracer provider and/or a meter provider registered: it answers the tracer (or `undefined`)
 *   and the instruments, made once per provider.
 *
 * The API keeps its providers in one global, shared by every copy of the package (ESM and CommonJS
 * builds, several versions 1.x), so the application's `trace.setGlobalTracerProvider(...)` (or the
 * NodeSDK's `start()`) is seen here whichever copy it went through.
 *
 * Every OpenTelemetry object is wrapped here as it is got (`./guard.ts`): what {@link telemetry}
 * answers holds only fail-safe wrappers, so a tracer, span processor, exporter, meter or context
 * manager that throws never reaches the library's code.
 */
import type * as OtelApi from "@opentelemetry/api";
import {
  failSafe,
  safeCounter,
  safeHistogram,
  safeUpDownCounter,
  SafeContext,
  SafeTracer,
  type SafeCounter,
  type SafeHistogram,
} from "./guard.js";
import { METRIC, SCOPE_NAME } from "./names.js";

type Api = typeof OtelApi;

/** The instruments of {@link METRIC}, made from one meter. */
interface Instruments {
  readonly updateAttempts: SafeHistogram;
  readonly updateConflicts: SafeHistogram;
  readonly unknownOutcomes: SafeCounter;
  readonly lockWait: SafeHistogram;
  readonly lockHold: SafeHistogram;
  readonly lockLosses: SafeCounter;
  readonly lockHandoffs: SafeCounter;
  readonly renewalFailures: SafeCounter;
  readonly leaderChanges: SafeCounter;
  readonly semaphoreWait: SafeHistogram;
  readonly transactionSize: SafeHistogram;
  readonly messages: SafeCounter;
  readonly handlerDuration: SafeHistogram;
  readonly emptyReceives: SafeCounter;
  readonly budgetTokens: SafeCounter;
  readonly budgetRetries: SafeCounter;
  readonly rateCuts: SafeCounter;
  readonly scheduleRuns: SafeCounter;
  readonly scheduleLag: SafeHistogram;
  readonly scheduleMissed: SafeCounter;
}

/** What is on: the context API, a tracer when a tracer provider is registered, instruments when a meter provider is. */
export interface Telemetry {
  readonly context: SafeContext;
  readonly tracer: SafeTracer | undefined;
  readonly instruments: Instruments | undefined;
}

let api: Api | null | undefined; // undefined: not loaded yet; null: not installed
let loading: Promise<void> | undefined;
let noopTracerProvider: OtelApi.TracerProvider | undefined;
let noopMeter: OtelApi.Meter | undefined;
let cache: { tracerProvider: unknown; meterProvider: unknown; telemetry: Telemetry | undefined } | undefined;

/** True once the API was looked for (found or not): {@link telemetry} then answers for real. */
export function openTelemetryLoaded(): boolean {
  return api !== undefined;
}

/**
 * Looks for `@opentelemetry/api` once; an instrumented entry point awaits it on its first call
 * (`if (!openTelemetryLoaded()) await loadOpenTelemetry();`), never again.
 */
export function loadOpenTelemetry(load: () => Promise<Api> = () => import("@opentelemetry/api")): Promise<void> {
  return (loading ??= load().then(
    (module) => {
      // The CommonJS build seen from ESM puts the exports under `default`.
      const found =
        (typeof module.trace === "object" ? module : (module as unknown as { default?: Api }).default) ?? null;
      api = failSafe(
        "tracer provider",
        () => {
          if (found) {
            noopTracerProvider = new found.ProxyTracerProvider().getDelegate();
            noopMeter = found.createNoopMeter();
          }
          return found;
        },
        null, // an API this library cannot use: stay off
      );
    },
    () => void (api = null), // not installed (or not loadable): stay off
  ));
}

/**
 * The tracer and instruments, or `undefined` when nothing would record (package absent, no
 * provider registered). Cheap: compares the two global providers with the ones seen last time.
 */
export function telemetry(): Telemetry | undefined {
  const otel = api;
  if (!otel) return undefined;
  return failSafe("tracer provider", () => current(otel), undefined);
}

function current(otel: Api): Telemetry | undefined {
  const tracerProvider = otel.trace.getTracerProvider();
  const meterProvider = otel.metrics.getMeterProvider();
  if (cache?.tracerProvider === tracerProvider && cache.meterProvider === meterProvider) {
    // The proxy stays the same object when a tracer provider is registered later: look behind it.
    if (cache.telemetry?.tracer || delegateOf(tracerProvider) === noopTracerProvider) return cache.telemetry;
  }
  cache = { tracerProvider, meterProvider, telemetry: build(otel, tracerProvider, meterProvider) };
  return cache.telemetry;
}

/** Forgets the API and the providers seen (tests load it again with another loader). */
export function resetOpenTelemetry(): void {
  api = undefined;
  loading = undefined;
  cache = undefined;
}

/** The provider behind the API's proxy (the proxy stays the same when the application registers one). */
function delegateOf(provider: OtelApi.TracerProvider): OtelApi.TracerProvider {
  const proxy = provider as Partial<OtelApi.ProxyTracerProvider>;
  return typeof proxy.getDelegate === "function" ? proxy.getDelegate() : provider;
}

/** Wraps what the providers give: a provider that throws leaves its half off (a tracer, or the instruments). */
function build(otel: Api, tracerProvider: OtelApi.TracerProvider, meterProvider: OtelApi.MeterProvider) {
  const tracer = failSafe(
    "tracer provider",
    () => (delegateOf(tracerProvider) === noopTracerProvider ? undefined : tracerProvider.getTracer(SCOPE_NAME)),
    undefined,
  );
  const meter = failSafe("meter provider", () => meterProvider.getMeter(SCOPE_NAME), undefined);
  const instruments = meter === undefined || meter === null || meter === noopMeter ? undefined : makeInstruments(meter);
  return tracer || instruments
    ? { context: new SafeContext(otel), tracer: tracer ? new SafeTracer(otel, tracer) : undefined, instruments }
    : undefined;
}

function makeInstruments(meter: OtelApi.Meter): Instruments {
  const seconds = (name: string, description: string) =>
    safeHistogram(() => meter.createHistogram(name, { description, unit: "s" }));
  const count = (name: string, description: string, unit: string) =>
    safeCounter(() => meter.createCounter(name, { description, unit }));
  const sizes = (name: string, description: string, unit: string) =>
    safeHistogram(() =>
      meter.createHistogram(name, { description, unit, advice: { explicitBucketBoundaries: SMALL_COUNTS } }),
    );
  return {
    updateAttempts: sizes(METRIC.updateAttempts, "Read-modify-write rounds per optimistic update", "{attempt}"),
    updateConflicts: sizes(METRIC.updateConflicts, "Conflicts met per optimistic update", "{conflict}"),
    unknownOutcomes: count(METRIC.unknownOutcomes, "Optimistic writes whose outcome could not be settled", "{write}"),
    lockWait: seconds(METRIC.lockWait, "Time spent acquiring a lock"),
    lockHold: seconds(METRIC.lockHold, "Time a lock was held, until released or lost"),
    lockLosses: count(METRIC.lockLosses, "Locks lost while held", "{loss}"),
    lockHandoffs: count(METRIC.lockHandoffs, "Locks taken over after waiting for another holder", "{handoff}"),
    renewalFailures: count(METRIC.renewalFailures, "Background lock renewals that failed", "{renewal}"),
    leaderChanges: count(METRIC.leaderChanges, "Times this process became or stopped being leader", "{change}"),
    semaphoreWait: seconds(METRIC.semaphoreWait, "Time spent acquiring a semaphore permit"),
    transactionSize: sizes(METRIC.transactionSize, "Actions per entity group transaction", "{operation}"),
    messages: count(METRIC.messages, "Messages settled by the consumer, by outcome", "{message}"),
    handlerDuration: seconds(METRIC.handlerDuration, "Time the handler took per call (one message, or a batch)"),
    emptyReceives: count(METRIC.emptyReceives, "Receives that found the queue empty", "{receive}"),
    budgetTokens: safeUpDownCounter(() =>
      meter.createUpDownCounter(METRIC.budgetTokens, { description: "Tokens a retry budget holds", unit: "{token}" }),
    ),
    budgetRetries: count(METRIC.budgetRetries, "Retries a retry budget was asked to pay for", "{retry}"),
    rateCuts: count(METRIC.rateCuts, "Throttling answers that cut a rate limiter's rate", "{cut}"),
    scheduleRuns: count(METRIC.scheduleRuns, "Scheduled runs by this instance, by outcome", "{run}"),
    scheduleLag: seconds(METRIC.scheduleLag, "How late after its due time a scheduled run started"),
    scheduleMissed: count(METRIC.scheduleMissed, "Ticks recorded as missed by catch-up", "{tick}"),
  };
}

/** Buckets for small counts (attempts, conflicts, actions per transaction: at most 100). */
const SMALL_COUNTS = [0, 1, 2, 3, 5, 10, 20, 50, 100];
