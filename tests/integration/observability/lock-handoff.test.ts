/**
 * A lock handed off between two processes, seen in both processes' traces (issue 14): the first
 * holder's acquisition and release, the second's wait with the holder it saw, the fencing tokens
 * in order, and the handoff and hold metrics.
 */
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import type { ContainerClient } from "@azure/storage-blob";
import { blobLock } from "../../../src/lease/index.js";
import { ATTR, EVENT, METRIC, SPAN } from "../../../src/observability/names.js";
import { startTracing, type MetricPoint, type SpanRecord } from "../../../examples/support/tracing.js";
import { spawnWorker } from "../../support/processes.js";
import { blobService, uniqueName } from "../../support/storage.js";

const WORKERS = `${dirname(fileURLToPath(import.meta.url))}/workers`;
let container: ContainerClient;
const tracing = startTracing();

beforeAll(async () => {
  container = blobService().getContainerClient(uniqueName("otellock"));
  await container.create();
});
afterAll(async () => {
  await container.delete();
  await tracing.stop();
});

it("a handoff between two processes: both acquisitions traced, the wait names the holder, tokens in order", async () => {
  const first = spawnWorker(`${WORKERS}/traced-holder.ts`, [container.containerName, "lock", "1500"]);
  try {
    const { token } = await first.waitFor<{ acquired?: boolean; token: number }>((m) => m.acquired === true, 30_000);
    const handle = await blobLock(container, "lock", { holderName: "second", pollIntervalInMs: 200 }).acquire({
      timeoutInMs: 30_000,
    });
    expect(handle.fencingToken).toBe(token + 1);
    await handle.release();
    const report = await first.waitFor<{ released?: boolean; spans: SpanRecord[]; metrics: MetricPoint[] }>(
      (m) => m.released === true,
      30_000,
    );

    // The first process: its acquisition (no wait for anyone) and the hold it reports.
    const theirs = report.spans.find((s) => s.name === SPAN.lockAcquire);
    expect(theirs?.attributes).toMatchObject({ [ATTR.outcome]: "acquired", [ATTR.fencingToken]: token });
    expect(String(theirs?.attributes[ATTR.holder])).toMatch(/^first on /);
    // The SDK's lease requests nest under it (their operation spans, then the HTTP requests).
    const under = (span: SpanRecord): boolean => {
      const parent = report.spans.find((p) => p.spanId === span.parentSpanId);
      return parent !== undefined && (parent.spanId === theirs?.spanId || under(parent));
    };
    expect(report.spans.filter((s) => s.name === "HTTP PUT" && under(s)).length).toBeGreaterThan(0);
    expect(report.metrics.find((p) => p.name === METRIC.lockHold)).toMatchObject({
      count: 1,
      attributes: { [ATTR.outcome]: "released" },
    });

    // This process: it waited, saw the first holder, and took over.
    const ours = tracing.spans().find((s) => s.name === SPAN.lockAcquire);
    expect(ours?.attributes).toMatchObject({
      [ATTR.outcome]: "acquired",
      [ATTR.fencingToken]: token + 1,
      [ATTR.lockWaits]: true,
    });
    expect(ours?.attributes[ATTR.previousHolder]).toBe(theirs?.attributes[ATTR.holder]);
    expect(Number(ours?.attributes[ATTR.lockAttempts])).toBeGreaterThanOrEqual(2);
    expect(ours?.events.map((e) => e.name)).toContain(EVENT.lockBusy);
    const points = await tracing.metrics();
    expect(points.find((p) => p.name === METRIC.lockHandoffs)?.value).toBe(1);
    expect(points.find((p) => p.name === METRIC.lockWait)).toMatchObject({
      count: 1,
      attributes: { [ATTR.outcome]: "acquired" },
    });
  } finally {
    await first.kill();
  }
}, 60_000);
