/**
 * A traced operation's scope: its span, the context that holds it, and the `tracingOptions` every
 * SDK call made inside it passes on, so that the SDK's own spans (its HTTP requests) nest under the
 * library's span even when the application registered no context manager.
 *
 * The scope travels with the async work through an `AsyncLocalStorage` of the library's own, which
 * is entered only when a tracer is registered: with tracing off, {@link sdkTracing} answers
 * `undefined` and nothing is allocated.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { Attributes, Context } from "@opentelemetry/api";
import { failSafe, type SafeSpan } from "./guard.js";
import { ATTR } from "./names.js";
import { telemetry, type Telemetry } from "./otel.js";

export { errorType } from "./guard.js";

/** One instrumented operation. */
export interface Scope {
  readonly telemetry: Telemetry;
  /** Its span, when a tracer is registered (and started it). */
  readonly span: SafeSpan | undefined;
  /** True when the span records (sampled): only then are attributes built. */
  readonly recording: boolean;
  /** The context holding the span, and what SDK calls made inside pass on. */
  readonly context: Context | undefined;
  readonly tracingOptions: { readonly tracingContext: Context } | undefined;
  /** `performance.now()` at the start. */
  readonly startedAt: number;
  /** A counter the call sites bump (conflicts, lock attempts). */
  count: number;
  /** A detail the call sites note (the holder seen while waiting for a lock). */
  detail: string | undefined;
  /** Why the operation failed, when it ends without throwing (a message that failed or was poisoned). */
  failure: unknown;
}

const scopes = new AsyncLocalStorage<Scope>();

/**
 * A context to trace under, as the Azure SDK's `tracingOptions.tracingContext` is: an OpenTelemetry
 * `Context` (`context.active()`, or `trace.setSpan(context.active(), span)`), or the `TracingContext`
 * of `@azure/core-tracing`, which has the same shape.
 */
export interface TracingContext {
  /** The value stored under `key` (the span, for OpenTelemetry's span key). */
  getValue(key: symbol): unknown;
  /** A new context with `value` under `key`. */
  setValue(key: symbol, value: unknown): TracingContext;
  /** A new context without `key`. */
  deleteValue(key: symbol): TracingContext;
}

/**
 * Tracing options of a library operation, as every Azure SDK operation takes them
 * (`OperationTracingOptions`): `tracingContext` is the parent of the operation's span, and so of
 * the SDK's spans under it. Without it, the parent is the active context.
 */
export interface OperationTracingOptions {
  /** The context whose span is the parent of the operation's span. */
  readonly tracingContext?: TracingContext | undefined;
}

/** Checks `tracingOptions` as the operations' options checks do (by name); answers its context. */
export function checkTracingOptions(tracingOptions: OperationTracingOptions | undefined): TracingContext | undefined {
  if (tracingOptions === undefined) return undefined;
  if (typeof tracingOptions !== "object" || tracingOptions === null) {
    throw new TypeError("`tracingOptions` must be an object: { tracingContext }, as the Azure SDK takes it.");
  }
  const { tracingContext } = tracingOptions;
  if (tracingContext !== undefined && typeof (tracingContext as Partial<TracingContext>)?.getValue !== "function") {
    throw new TypeError(
      "`tracingOptions.tracingContext` must be an OpenTelemetry Context (such as `context.active()`) or an Azure SDK TracingContext.",
    );
  }
  return tracingContext;
}

/**
 * Opens a scope (and its span, child of `parent` when given, else of the active span or of the
 * enclosing library scope), or answers `undefined` when nothing would record. `attributes` runs
 * only for a recording span. Never throws: a tracer that throws leaves a scope without a span
 * (metrics still recorded).
 */
export function openScope(
  name: string,
  attributes?: () => Attributes,
  kind?: "consumer",
  parent?: TracingContext,
): Scope | undefined {
  const on = telemetry();
  if (!on) return undefined;
  const startedAt = performance.now();
  let span: SafeSpan | undefined;
  let context: Context | undefined;
  if (on.tracer) {
    const active = on.context.active();
    const parentContext: Context =
      parent ?? (on.context.hasSpan(active) ? active : (scopes.getStore()?.context ?? active));
    span = on.tracer.startSpan(name, parentContext, attributes, kind);
    context = span?.contextFrom(parentContext);
  }
  return {
    telemetry: on,
    span,
    recording: span?.recording ?? false,
    context,
    tracingOptions: context ? { tracingContext: context } : undefined,
    startedAt,
    count: 0,
    detail: undefined,
    failure: undefined,
  };
}

/**
 * Runs `fn` inside the scope (its context is the active one for the SDK and for the application's
 * code): once, whatever the context manager does, with `fn`'s own answer or error.
 */
export function runInScope<R>(scope: Scope | undefined, fn: () => R): R {
  if (!scope) return fn();
  const { context } = scope;
  if (!context) return scopes.run(scope, fn); // metrics only: the scope still collects the outcome
  return scopes.run(scope, () => scope.telemetry.context.run(context, fn));
}

/** The scope the caller runs in, if a traced operation of the library is under way. */
export function currentScope(): Scope | undefined {
  return scopes.getStore();
}

/**
 * What an SDK call made by the library passes as `tracingOptions`, so that its spans nest under the
 * library's: `client.getProperties({ abortSignal, tracingOptions: sdkTracing() })`. `undefined`
 * (the SDK's default) when no library span is active.
 */
export function sdkTracing(): { readonly tracingContext: Context } | undefined {
  // With metrics only, a scope has no tracing options: the SDK keeps its defaults.
  return scopes.getStore()?.tracingOptions;
}

/** Runs `fn` outside any library scope (background work started inside one, e.g. renewals): a new trace. */
export function detached<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
  const on = telemetry();
  if (!on?.tracer) return fn;
  const { context } = on;
  return (...args) => scopes.exit(() => context.run(context.root, () => fn(...args)));
}

/** Ends the scope's span with an outcome; `error` marks it failed. Never throws. */
export function endScope(scope: Scope, outcome: string, attributes?: () => Attributes, error?: unknown): void {
  const { span } = scope;
  if (!span) return;
  span.setAttribute(ATTR.outcome, outcome);
  if (attributes) span.setAttributes(attributes);
  if (error !== undefined) span.fail(error);
  span.end();
}

/** A short span for a moment (a loss, a failed renewal, a leadership change), in a trace of its own. Never throws. */
export function momentSpan(name: string, attributes: () => Attributes, error?: unknown): void {
  const on = telemetry();
  if (!on?.tracer) return;
  const span = on.tracer.startSpan(name, on.context.root, attributes);
  if (!span) return;
  if (error !== undefined) span.fail(error);
  span.end();
}

/** Seconds since the scope opened. */
export function secondsSince(startedAt: number): number {
  return (performance.now() - startedAt) / 1000;
}

/**
 * Runs the library's own instrumentation code (building attributes, choosing an outcome) so that a
 * bug in it is logged once and costs only telemetry: `instrumentation(() => ..., fallback)`.
 */
export function instrumentation<R>(call: () => R, fallback: R): R {
  return failSafe("instrumentation", call, fallback);
}
