/**
 * The throttling feature's metrics, after the state has changed and never in its way (every call
 * goes through the fail-safe wrappers of `src/observability`):
 *
 * - `asc.retry_budget.tokens` (up-down counter): the tokens each budget holds. Each budget reports
 *   the difference between its tokens and what it reported last, so the counter's sum is the
 *   budget's tokens from the first report on, however late OpenTelemetry was loaded.
 * - `asc.retry_budget.retries` (counter): retries a budget was asked to pay for, `allowed` or `refused`.
 * - `asc.throttling.rate_cuts` (counter): throttling answers that cut a limiter's rate, by kind of key.
 */
import { telemetryIfLoaded } from "../observability/helpers.js";
import { ATTR, METRIC } from "../observability/names.js";
import { defineInstruments, loadOpenTelemetry, openTelemetryLoaded } from "../observability/otel.js";
import { instrumentation } from "../observability/scope.js";

const instruments = defineInstruments((meter) => ({
  budgetTokens: meter.upDownCounter(METRIC.budgetTokens, {
    description: "Tokens a retry budget holds",
    unit: "{token}",
  }),
  budgetRetries: meter.counter(METRIC.budgetRetries, {
    description: "Retries a retry budget was asked to pay for",
    unit: "{retry}",
  }),
  rateCuts: meter.counter(METRIC.rateCuts, {
    description: "Throttling answers that cut a rate limiter's rate",
    unit: "{cut}",
  }),
}));

const reported = new WeakMap<object, number>();

/** A budget's tokens changed to `tokens`; `outcome` when a retry was paid for or refused. */
export function noteBudget(budget: object, name: string, tokens: number, outcome?: "allowed" | "refused"): void {
  if (!openTelemetryLoaded()) {
    void loadOpenTelemetry(); // reported from the next change on (the whole amount then)
    return;
  }
  const made = instruments(telemetryIfLoaded());
  if (!made) return;
  instrumentation(() => {
    const delta = tokens - (reported.get(budget) ?? 0);
    reported.set(budget, tokens);
    const attributes = { [ATTR.retryBudget]: name };
    if (delta !== 0) made.budgetTokens.add(delta, attributes);
    if (outcome) made.budgetRetries.add(1, { ...attributes, [ATTR.outcome]: outcome });
  }, undefined);
}

/** A throttling answer cut a limiter's rate for a key of kind `scope` (`table`, `queue`, `account`, …). */
export function noteRateCut(limiter: string, scope: string): void {
  if (!openTelemetryLoaded()) {
    void loadOpenTelemetry();
    return;
  }
  instrumentation(
    () =>
      instruments(telemetryIfLoaded())?.rateCuts.add(1, { [ATTR.rateLimiter]: limiter, [ATTR.throttledScope]: scope }),
    undefined,
  );
}
