/**
 * The retry budget's figures and the limiter's cuts reach OpenTelemetry as metrics (issue 26):
 * `asc.retry_budget.tokens` sums to the tokens the budget holds, `asc.retry_budget.retries` counts
 * paid and refused retries, `asc.throttling.rate_cuts` counts cuts by kind of key. Read through a
 * real MeterProvider and a reader collected on demand.
 */
import { metrics } from "@opentelemetry/api";
import { MeterProvider, MetricReader, type DataPoint, type ResourceMetrics } from "@opentelemetry/sdk-metrics";
import { AdaptiveRateLimiter, RetryBudget, throttleScopeOf } from "../../../src/index.js";
import { loadOpenTelemetry, resetOpenTelemetry } from "../../../src/observability/otel.js";

class OnDemandReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

let reader: OnDemandReader;
let provider: MeterProvider;
beforeEach(async () => {
  reader = new OnDemandReader();
  provider = new MeterProvider({ readers: [reader] });
  metrics.setGlobalMeterProvider(provider);
  resetOpenTelemetry();
  await loadOpenTelemetry();
});
afterEach(async () => {
  metrics.disable();
  await provider.shutdown();
});

/** Each data point of metric `name`: its attributes and value. */
async function points(name: string): Promise<{ attributes: Record<string, unknown>; value: number }[]> {
  const { resourceMetrics } = (await reader.collect()) as { resourceMetrics: ResourceMetrics };
  const metric = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name);
  return ((metric?.dataPoints ?? []) as DataPoint<number>[]).map((p) => ({ attributes: { ...p.attributes }, value: p.value })); // prettier-ignore
}

describe("throttling metrics", () => {
  it("a budget reports its tokens, and each retry paid or refused", async () => {
    const budget = new RetryBudget({ name: "orders", maxTokens: 2, successCredit: 0.5 });
    expect(budget.trySpend()).toBe(true);
    expect(budget.trySpend()).toBe(true);
    expect(budget.trySpend()).toBe(false);
    budget.credit();
    expect(await points("asc.retry_budget.tokens")).toEqual([
      { attributes: { "asc.retry_budget.name": "orders" }, value: 0.5 },
    ]);
    const retries = await points("asc.retry_budget.retries");
    expect(retries).toEqual(
      expect.arrayContaining([
        { attributes: { "asc.retry_budget.name": "orders", "asc.outcome": "allowed" }, value: 2 },
        { attributes: { "asc.retry_budget.name": "orders", "asc.outcome": "refused" }, value: 1 },
      ]),
    );
    expect(retries).toHaveLength(2);
  });

  it("a limiter counts its cuts by kind of key: the partition's on a 503 ServerBusy, the account's on an account-level one", async () => {
    const limiter = new AdaptiveRateLimiter({ name: "app" });
    const scope = throttleScopeOf("https://acct.table.core.windows.net/t(PartitionKey='hot',RowKey='r')");
    const busy = { name: "RestError", statusCode: 503, code: "ServerBusy", message: "The server is busy." };
    const account = { ...busy, message: "Operations per second is over the account limit." };
    limiter.record(await limiter.acquire(scope), busy);
    const other = throttleScopeOf("https://other.table.core.windows.net/t(PartitionKey='x',RowKey='r')"); // no wait
    limiter.record(await limiter.acquire(other), account);
    expect(await points("asc.throttling.rate_cuts")).toEqual(
      expect.arrayContaining([
        { attributes: { "asc.throttling.limiter": "app", "asc.throttling.scope": "table" }, value: 1 },
        { attributes: { "asc.throttling.limiter": "app", "asc.throttling.scope": "account" }, value: 1 },
      ]),
    );
  });
});
