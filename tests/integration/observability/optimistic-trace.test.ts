/**
 * The trace of a contended optimistic update whose write response is lost (issue 14): one
 * `asc.optimistic.update` span with its attempts, conflict and recovery, and the SDK's own spans
 * (its operations and HTTP requests) nested under it, from a real Azurite through the fault proxy.
 */
import type { ContainerClient } from "@azure/storage-blob";
import { blobJsonCell, optimisticUpdate } from "../../../src/optimistic/index.js";
import { fixedBackoff } from "../../../src/retry/index.js";
import { writeBatch } from "../../../src/tables/index.js";
import { ATTR, EVENT, METRIC, SPAN } from "../../../src/observability/names.js";
import { descendants, formatTraceTree, startTracing } from "../../../examples/support/tracing.js";
import { blobService, faultProxyFor, tableClient, uniqueName } from "../../support/storage.js";

let container: ContainerClient;
const tracing = startTracing();

beforeAll(async () => {
  container = blobService().getContainerClient(uniqueName("otel"));
  await container.create();
});
afterAll(async () => {
  await container.delete();
  await tracing.stop();
});

it("a contended update with a lost response: one span with its conflict and recovery, the SDK's spans nested under it", async () => {
  const name = `counter-${Date.now()}.json`;
  const { proxy, connectionString } = await faultProxyFor("blob", {});
  await using _ = proxy;
  const rival = blobJsonCell<{ n: number }>(container.getBlockBlobClient(name));
  await optimisticUpdate(rival, () => ({ n: 0 }));
  const cell = blobJsonCell<{ n: number }>(
    blobService(connectionString).getContainerClient(container.containerName).getBlockBlobClient(name),
  );
  const result = await optimisticUpdate(
    cell,
    async (current, { attempt }) => {
      // First attempt: someone else writes in between (a conflict). Second: the service applies
      // our write and its answer is lost.
      if (attempt === 1) await optimisticUpdate(rival, (c) => ({ n: (c?.n ?? 0) + 100 }), { coalesce: false });
      if (attempt === 2) {
        proxy.addRule({
          times: 1,
          method: "PUT",
          when: (r) => r.path.includes(name) && r.headers["if-match"] !== undefined,
          action: { type: "dropResponse" },
        });
      }
      return { n: (current?.n ?? 0) + 1 };
    },
    { backoff: fixedBackoff({ delayInMs: 10 }), coalesce: false },
  );
  expect(result).toMatchObject({ written: true, attempts: 2, recoveredLostResponse: true });
  expect(proxy.requests.filter((r) => r.outcome === "dropResponse")).toHaveLength(1);

  const spans = tracing.spans();
  const updates = spans.filter(
    (s) =>
      s.name === SPAN.optimisticUpdate &&
      s.attributes[ATTR.resourceKind] === "blob" &&
      s.attributes[ATTR.resourceContainer] === container.containerName &&
      s.attributes[ATTR.resourceName] === name,
  );
  // the caller's update, and the rival's two (its creation and its write in between) on the other client
  const ours = updates.find((s) => s.attributes[ATTR.recoveredLostResponse] === true);
  if (!ours) throw new Error(`no recovered update span in:\n${formatTraceTree(spans)}`);
  expect(ours.attributes).toMatchObject({
    [ATTR.outcome]: "written",
    [ATTR.attempts]: 2,
    [ATTR.conflicts]: 1,
    [ATTR.coalesced]: 1,
  });
  expect(ours.events.map((e) => e.name)).toEqual([EVENT.conflict]);

  // The SDK's spans: its operations (download, upload) and their HTTP requests, all under ours,
  // in the same trace; the upload whose answer was lost is among them.
  const under = descendants(spans, ours);
  const http = under.filter((s) => /^HTTP (GET|PUT)$/.test(s.name));
  expect(under.some((s) => /upload/i.test(s.name))).toBe(true);
  expect(under.some((s) => /download/i.test(s.name))).toBe(true);
  expect(http.filter((s) => s.name === "HTTP PUT").length).toBeGreaterThanOrEqual(2); // the 412, the applied one
  expect(new Set(under.map((s) => s.traceId))).toEqual(new Set([ours.traceId]));
  // The rival's update made inside our `mutate` is its own span, a child of ours (it ran in our scope).
  expect(under.filter((s) => s.name === SPAN.optimisticUpdate)).toHaveLength(1);

  const points = await tracing.metrics();
  const attempts = points.find((p) => p.name === METRIC.updateAttempts);
  const conflicts = points.find((p) => p.name === METRIC.updateConflicts);
  expect(attempts?.count).toBeGreaterThanOrEqual(3); // ours and the rival's two
  expect(conflicts?.value).toBeGreaterThanOrEqual(1);
}, 60_000);

it("a batch write: one span with its transactions and operations, the transaction sizes as a metric", async () => {
  const table = tableClient(uniqueName("otelbatch"));
  await table.createTable();
  try {
    const actions = Array.from(
      { length: 130 },
      (_, i) => ["upsert", { partitionKey: `p${i % 2}`, rowKey: `r${i}`, value: i }] as const,
    );
    const result = await writeBatch(table, actions);
    expect(result.ok).toBe(true);
    const spans = tracing.spans();
    const batch = spans.find((s) => s.name === SPAN.batchWrite);
    expect(batch?.attributes).toMatchObject({
      [ATTR.outcome]: "committed",
      [ATTR.transactions]: 2,
      [ATTR.operations]: 130,
      [ATTR.committedTransactions]: 2,
      [ATTR.failedTransactions]: 0,
    });
    // The SDK's own span of each transaction nests under the batch (data-tables sends the batch
    // request through a pipeline of its own, without an HTTP span).
    const sent = descendants(spans, batch!).filter((s) => /submitTransaction/.test(s.name));
    expect(sent).toHaveLength(2);
    const sizes = (await tracing.metrics()).find((p) => p.name === METRIC.transactionSize);
    expect(sizes).toMatchObject({ count: 2, value: 130 });
  } finally {
    await table.deleteTable();
  }
}, 60_000);
