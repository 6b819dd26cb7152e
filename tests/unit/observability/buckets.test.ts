/**
 * Durations in seconds get second-scale bucket boundaries (issue 23): through the real
 * OpenTelemetry SDK, lock waits of 3 ms to 45 s spread over several buckets, where the SDK's
 * default boundaries (made for milliseconds: 0, 5, 10, ... 10000) would put every wait under 5 s
 * into one. The waits are made on a fake clock: `performance.now()` is jest's.
 *
 * Also: the instrumentation scope carries the library's version (package.json's, for a bundler as
 * for Node: a constant, `src/observability/version.ts`).
 */
import { readFileSync } from "node:fs";
import { jest } from "@jest/globals";
import { metrics } from "@opentelemetry/api";
import {
  AggregationTemporality,
  MeterProvider,
  MetricReader,
  type HistogramMetricData,
  type ResourceMetrics,
} from "@opentelemetry/sdk-metrics";
import { traceAcquire } from "../../../src/lease/telemetry.js";
import { METRIC, SCOPE_NAME } from "../../../src/observability/names.js";
import { loadOpenTelemetry, resetOpenTelemetry, WAIT_SECONDS } from "../../../src/observability/otel.js";
import { LIBRARY_VERSION } from "../../../src/observability/version.js";

class OnDemandReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

const lock = { leasable: { description: "blob 'locks/report'" }, options: { holderName: "test" } };
let reader: OnDemandReader;
let provider: MeterProvider;

beforeEach(async () => {
  reader = new OnDemandReader();
  provider = new MeterProvider({ readers: [reader] });
  metrics.setGlobalMeterProvider(provider);
  await loadOpenTelemetry();
  jest.useFakeTimers();
});
afterEach(async () => {
  jest.useRealTimers();
  metrics.disable();
  resetOpenTelemetry();
  await provider.shutdown();
});

/** One acquisition that waits `seconds` on the fake clock. */
async function waitFor(seconds: number): Promise<void> {
  await traceAcquire(lock, true, undefined, async () => {
    jest.advanceTimersByTime(seconds * 1000);
    return { fencingToken: 1 };
  });
}

function lockWaits(collected: ResourceMetrics) {
  const scope = collected.scopeMetrics.find((s) => s.scope.name === SCOPE_NAME);
  const data = scope?.metrics.find((m) => m.descriptor.name === METRIC.lockWait) as HistogramMetricData | undefined;
  return { scope: scope?.scope, point: data?.dataPoints[0] };
}

it("lock waits from milliseconds to a minute fall into as many buckets, on second-scale boundaries", async () => {
  const waits = [0.003, 0.04, 0.3, 2, 45];
  for (const seconds of waits) await waitFor(seconds);
  const { point } = lockWaits((await reader.collect()).resourceMetrics);
  if (!point) throw new Error(`no ${METRIC.lockWait} point`);
  expect(point.value.buckets.boundaries).toEqual(WAIT_SECONDS);
  expect(point.value.count).toBe(waits.length);
  const filled = point.value.buckets.counts.filter((count) => count > 0);
  expect(filled).toHaveLength(waits.length); // one bucket each: 5 ms, 50 ms, 500 ms, 2.5 s, 60 s
});

it("(the contrast) without the advice, the SDK's default boundaries put every wait under 5 s into one bucket", async () => {
  const control = provider.getMeter("control").createHistogram("control.wait", { unit: "s" });
  for (const seconds of [0.003, 0.04, 0.3, 2, 45]) control.record(seconds);
  const { scopeMetrics } = (await reader.collect()).resourceMetrics;
  const data = scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === "control.wait");
  const counts = (data as HistogramMetricData).dataPoints[0]!.value.buckets.counts;
  expect(counts.filter((count) => count > 0)).toEqual([4, 1]);
});

it("the instrumentation scope names the library and its version, which is package.json's", async () => {
  await waitFor(0.01);
  const { scope } = lockWaits((await reader.collect()).resourceMetrics);
  const { version } = JSON.parse(readFileSync("package.json", "utf8")) as { version: string };
  expect(LIBRARY_VERSION).toBe(version);
  expect(scope).toMatchObject({ name: SCOPE_NAME, version });
});
