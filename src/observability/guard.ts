/**
 * Telemetry can never change an outcome. Every call the library makes into the application's
 * OpenTelemetry set-up (its tracer and meter providers, tracers, spans, span processors and
 * exporters behind `span.end()`, meters, instruments, context manager) goes through the wrappers
 * of this file, each call inside one guard, {@link failSafe}: a throw is caught, logged once per
 * part (a warning through the library's logger), and the library goes on as if telemetry were off
 * for that call. Nothing else in `src/` holds an OpenTelemetry object: `otel.ts` wraps them as it
 * gets them, so no call site can forget the guard.
 *
 * Why (issue 21): a span processor that threw in `onEnd` made `optimisticUpdate` reject after its
 * write had landed (the caller retries: applied twice), made `acquire()` reject after the lease
 * was granted (an orphaned handle kept the lock), and kept a lock's signal from aborting after a
 * refused renewal (two holders). An outcome is decided by the operation, never by a span.
 *
 * The context manager's `with` is the one call that runs library code inside the application's:
 * {@link SafeContext.run} runs that code exactly once whatever `with` does (throws before calling
 * it, throws after it, never calls it), and passes its result or its error through unchanged.
 */
import type * as OtelApi from "@opentelemetry/api";
import type { Attributes, AttributeValue, Context } from "@opentelemetry/api";
import { describeError, errorCodeOf } from "../internal/describe-error.js";
import { logger } from "../internal/logger.js";
import { ATTR } from "./names.js";

/** The part of the OpenTelemetry set-up a call went into, as the once-only warning names it. */
type TelemetryPart =
  | "tracer provider"
  | "tracer"
  | "span"
  | "meter provider"
  | "meter"
  | "instrument"
  | "context manager"
  | "instrumentation";

const reported = new Set<TelemetryPart>();
let caught = 0;

/** Runs `call`; when it throws, logs that once for `part` and answers `fallback`. Never throws. */
export function failSafe<R>(part: TelemetryPart, call: () => R, fallback: R): R {
  try {
    return call();
  } catch (error) {
    telemetryFailed(part, error);
    return fallback;
  }
}

/** Counts a failure of `part`; the first of each part is logged as a warning. Never throws. */
function telemetryFailed(part: TelemetryPart, error: unknown): void {
  caught += 1;
  if (reported.has(part)) return;
  reported.add(part);
  logger.warning(
    `OpenTelemetry: a call into the application's ${part} threw (${describeError(error)}). The library went on ` +
      `as if telemetry were off for that call: no outcome changed. Further failures of the ${part} are not logged.`,
  );
}

/** How many telemetry calls threw and were caught in this process (for tests and diagnostics). */
export function telemetryFailuresCaught(): number {
  return caught;
}

/** Logs the next failure of each part again (tests). */
export function resetTelemetryFailures(): void {
  reported.clear();
  caught = 0;
}

/** A span whose every method is fail-safe; `end()` ends it at most once. */
export class SafeSpan {
  /** True when the span records (sampled): only then are attributes built. */
  readonly recording: boolean;
  readonly #api: typeof OtelApi;
  readonly #span: OtelApi.Span;
  #ended = false;

  constructor(api: typeof OtelApi, span: OtelApi.Span) {
    this.#api = api;
    this.#span = span;
    this.recording = failSafe("span", () => span.isRecording() === true, false);
  }

  /** Sets the attributes `build` makes (built only for a recording span, inside the guard). */
  setAttributes(build: () => Attributes): void {
    if (!this.recording) return;
    failSafe("span", () => void this.#span.setAttributes(build()), undefined);
  }

  setAttribute(key: string, value: AttributeValue): void {
    if (!this.recording) return;
    failSafe("span", () => void this.#span.setAttribute(key, value), undefined);
  }

  addEvent(name: string, build: () => Attributes): void {
    if (!this.recording) return;
    failSafe("span", () => void this.#span.addEvent(name, build()), undefined);
  }

  /** Marks the span failed with `error`, described safely and redacted of secrets. */
  fail(error: unknown): void {
    if (!this.recording) return;
    const message = describeError(error);
    const type = errorType(error);
    failSafe(
      "span",
      () => {
        // One value for both: a backend that groups by `error.type` or by `exception.type` sees the same classes.
        this.#span.recordException({ name: type, message });
        this.#span.setAttribute(ATTR.errorType, type);
        this.#span.setStatus({ code: this.#api.SpanStatusCode.ERROR, message });
      },
      undefined,
    );
  }

  /** Ends the span (its processors and exporters run here), once. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    failSafe("span", () => this.#span.end(), undefined);
  }

  /** `parent` with this span set as the active one, or `undefined` when that fails. */
  contextFrom(parent: Context): Context | undefined {
    return failSafe("context manager", () => this.#api.trace.setSpan(parent, this.#span), undefined);
  }
}

/**
 * The `error.type` of an error, also its exception event's `exception.type`: its `code` (the
 * library's error codes, such as `LockTimeout`; the service's, such as `LeaseAlreadyPresent`, on
 * an SDK `RestError`), else its class name (`TypeError`), else the type of what was thrown.
 */
export function errorType(error: unknown): string {
  return errorCodeOf(error) ?? (error === null ? "null" : typeof error);
}

/** A tracer whose `startSpan` is fail-safe: `undefined` when it throws. */
export class SafeTracer {
  readonly #api: typeof OtelApi;
  readonly #tracer: OtelApi.Tracer;

  constructor(api: typeof OtelApi, tracer: OtelApi.Tracer) {
    this.#api = api;
    this.#tracer = tracer;
  }

  /** Starts a span (kind CONSUMER when asked) under `parent`, with `attributes` when it records. */
  startSpan(name: string, parent: Context, attributes?: () => Attributes, kind?: "consumer"): SafeSpan | undefined {
    const options = kind ? { kind: this.#api.SpanKind.CONSUMER } : undefined;
    const span = failSafe("tracer", () => this.#tracer.startSpan(name, options, parent), undefined);
    if (span === undefined || span === null) return undefined;
    const safe = new SafeSpan(this.#api, span);
    if (attributes) safe.setAttributes(attributes);
    return safe;
  }
}

/** The context API, fail-safe. */
export class SafeContext {
  readonly #api: typeof OtelApi;

  constructor(api: typeof OtelApi) {
    this.#api = api;
  }

  /** The root context (a constant of the API). */
  get root(): Context {
    return this.#api.ROOT_CONTEXT;
  }

  /** The active context (the root when the context manager throws). */
  active(): Context {
    return failSafe("context manager", () => this.#api.context.active(), this.#api.ROOT_CONTEXT);
  }

  /** Whether `context` holds a span. */
  hasSpan(context: Context): boolean {
    return failSafe("context manager", () => this.#api.trace.getSpan(context) !== undefined, false);
  }

  /**
   * Runs `fn` once with `context` active and answers what `fn` answers (or throws what it throws).
   * A context manager that throws, or never calls `fn`, costs only the context: `fn` runs anyway.
   */
  run<R>(context: Context, fn: () => R): R {
    let ran: { ok: true; value: R } | { ok: false; error: unknown } | undefined;
    const once = (): R => {
      if (ran === undefined) {
        try {
          ran = { ok: true, value: fn() };
        } catch (error) {
          ran = { ok: false, error };
        }
      }
      if (!ran.ok) throw ran.error;
      return ran.value;
    };
    try {
      this.#api.context.with(context, once);
    } catch (error) {
      if (ran?.ok === false) throw ran.error; // fn's own error, whatever `with` did with it
      telemetryFailed("context manager", error);
    }
    if (ran === undefined) telemetryFailed("context manager", new Error("context.with() did not call the function"));
    return once(); // fn's answer (run here if `with` never ran it), never what `with` made of it
  }
}

/** A histogram whose `record` is fail-safe. */
interface SafeHistogram {
  record(value: number, attributes?: Attributes): void;
}

/** A counter whose `add` is fail-safe. */
interface SafeCounter {
  add(value: number, attributes?: Attributes): void;
}

const NO_HISTOGRAM: SafeHistogram = { record: () => undefined };
const NO_COUNTER: SafeCounter = { add: () => undefined };

/** How an instrument is described to the meter. */
interface InstrumentShape {
  readonly description: string;
  /** UCUM unit: `s`, or a count in braces (`{message}`). */
  readonly unit: string;
}

/**
 * A meter whose instruments are fail-safe: an instrument the meter cannot make records nothing, and
 * a `record`/`add` that throws is caught. Each feature makes its own instruments from it
 * (`defineInstruments` in `./otel.ts`).
 */
export class SafeMeter {
  readonly #meter: OtelApi.Meter;

  constructor(meter: OtelApi.Meter) {
    this.#meter = meter;
  }

  /**
   * A histogram with explicit bucket boundaries, passed as the instrument's advice: an SDK that
   * reads advice (`@opentelemetry/sdk-metrics` 1.19 and later) uses them unless a View says
   * otherwise; an older one ignores the advice and keeps its default boundaries.
   */
  histogram(name: string, shape: InstrumentShape & { readonly boundaries: readonly number[] }): SafeHistogram {
    const { description, unit, boundaries } = shape;
    const histogram = failSafe(
      "meter",
      () =>
        this.#meter.createHistogram(name, {
          description,
          unit,
          advice: { explicitBucketBoundaries: [...boundaries] },
        }),
      undefined,
    );
    if (!histogram) return NO_HISTOGRAM;
    return {
      record: (value, attributes) => failSafe("instrument", () => histogram.record(value, attributes), undefined),
    };
  }

  /** A monotonic counter. */
  counter(name: string, shape: InstrumentShape): SafeCounter {
    return guardedCounter(failSafe("meter", () => this.#meter.createCounter(name, shape), undefined));
  }

  /** An up-down counter (a level that goes up and down, such as the tokens a budget holds). */
  upDownCounter(name: string, shape: InstrumentShape): SafeCounter {
    return guardedCounter(failSafe("meter", () => this.#meter.createUpDownCounter(name, shape), undefined));
  }
}

function guardedCounter(counter: OtelApi.Counter | OtelApi.UpDownCounter | undefined | null): SafeCounter {
  if (!counter) return NO_COUNTER;
  return { add: (value, attributes) => failSafe("instrument", () => counter.add(value, attributes), undefined) };
}
