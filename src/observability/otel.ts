/**
 * OpenTelemetry, when the application has it. `@opentelemetry/api` is an optional peer dependency,
 * loaded on the first instrumented call (as the command line tool loads `@azure/identity`: a
 * dynamic `import()`, which both the ESM and the CommonJS build keep). Then:
 *
 * - package absent, or no SDK registered: {@link telemetry} answers `undefined` and the library
 *   builds no span, no attribute, no context: one property read per call;
 * - a tracer provider and/or a meter provider registered: it answers the tracer (or `undefined`)
 *   and the meter (or `undefined`), got once per provider under the scope `azure-storage-concurrency`
 *   and the library's version. Each feature makes its own instruments from that meter, once per
 *   meter ({@link defineInstruments}, in `src/<feature>/telemetry.ts`).
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
import { failSafe, SafeContext, SafeMeter, SafeTracer } from "./guard.js";
import { SCOPE_NAME } from "./names.js";
import { LIBRARY_VERSION } from "./version.js";

type Api = typeof OtelApi;

/** What is on: the context API, a tracer when a tracer provider is registered, a meter when a meter provider is. */
export interface Telemetry {
  readonly context: SafeContext;
  readonly tracer: SafeTracer | undefined;
  readonly meter: SafeMeter | undefined;
}

/**
 * A feature's instruments, made once per meter by `make` (each feature declares its own, beside
 * its code): `const lockInstruments = defineInstruments((meter) => ({ wait: meter.histogram(...) }))`,
 * then `lockInstruments(scope.telemetry)?.wait.record(...)`. Answers `undefined` when no meter
 * provider is registered.
 */
export function defineInstruments<T>(make: (meter: SafeMeter) => T): (on: Telemetry | undefined) => T | undefined {
  const made = new WeakMap<SafeMeter, T>();
  return (on) => {
    const meter = on?.meter;
    if (!meter) return undefined;
    let instruments = made.get(meter);
    if (instruments === undefined) {
      instruments = make(meter);
      made.set(meter, instruments);
    }
    return instruments;
  };
}

/**
 * Bucket boundaries, in seconds, for the durations people wait on (lock and semaphore waits, lock
 * holds, a run's lateness): from 5 ms to an hour. The SDK's default boundaries (0, 5, 10, ... 10000)
 * are made for milliseconds: in seconds, every wait under 5 s would fall into one bucket.
 */
export const WAIT_SECONDS: readonly number[] = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600,
];

/**
 * Bucket boundaries, in seconds, the messaging semantic conventions give `messaging.process.duration`
 * (https://opentelemetry.io/docs/specs/semconv/messaging/messaging-metrics/).
 */
export const MESSAGING_SECONDS: readonly number[] = [
  0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
];

/** Buckets for small counts (attempts, conflicts, actions per transaction: at most 100). */
export const SMALL_COUNTS: readonly number[] = [0, 1, 2, 3, 5, 10, 20, 50, 100];

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

/** Wraps what the providers give: a provider that throws leaves its half off (a tracer, or the meter). */
function build(otel: Api, tracerProvider: OtelApi.TracerProvider, meterProvider: OtelApi.MeterProvider) {
  const tracer = failSafe(
    "tracer provider",
    () =>
      delegateOf(tracerProvider) === noopTracerProvider
        ? undefined
        : tracerProvider.getTracer(SCOPE_NAME, LIBRARY_VERSION),
    undefined,
  );
  const meter = failSafe("meter provider", () => meterProvider.getMeter(SCOPE_NAME, LIBRARY_VERSION), undefined);
  const on = meter === undefined || meter === null || meter === noopMeter ? undefined : new SafeMeter(meter);
  return tracer || on
    ? { context: new SafeContext(otel), tracer: tracer ? new SafeTracer(otel, tracer) : undefined, meter: on }
    : undefined;
}
