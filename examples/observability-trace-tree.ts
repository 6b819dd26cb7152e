/**
 * What the library shows in a tracing backend: OpenTelemetry set up as an application would
 * (`./support/tracing.ts`: a tracer and a meter provider, the Azure SDK's own spans switched on),
 * then a contended optimistic update, a lock handed from one worker to another, a batch write and
 * a queue message processed through the Table idempotency store (and sent again: a duplicate).
 * Each trace is printed as a tree: the library's span, the SDK's operations and HTTP requests
 * under it; then the metrics.
 */
import { TableClient } from "@azure/data-tables";
import { QueueServiceClient } from "@azure/storage-queue";
import { BlobServiceClient } from "@azure/storage-blob";
import { blobJsonCell, optimisticUpdate } from "azure-storage-concurrency/optimistic";
import { blobLock } from "azure-storage-concurrency/lease";
import { jsonCodec, QueueConsumer } from "azure-storage-concurrency/queue";
import { TableIdempotencyStore } from "azure-storage-concurrency/idempotency";
import { writeBatch } from "azure-storage-concurrency/tables";
import { runIfMain, type ExampleContext } from "./support/run-example.js";
import { formatTraceTree, startTracing, type SpanRecord } from "./support/tracing.js";

export const title = "Observability: the library's spans, with the Azure SDK's under them, as a tree";

export async function main({ connectionString, log }: ExampleContext): Promise<void> {
  const tracing = startTracing();
  const suffix = Date.now();
  const blobs = BlobServiceClient.fromConnectionString(connectionString).getContainerClient(`otel-demo-${suffix}`);
  const table = TableClient.fromConnectionString(connectionString, `oteldemo${suffix}`, {
    allowInsecureConnection: true,
  });
  const queue = QueueServiceClient.fromConnectionString(connectionString).getQueueClient(`otel-demo-${suffix}`);
  await Promise.all([blobs.create(), table.createTable(), queue.create()]);
  try {
    const show = (heading: string, spans: readonly SpanRecord[]) => {
      log(`${heading}:`);
      for (const line of formatTraceTree(libraryTrees(spans)).split("\n")) log(`  ${line}`);
    };
    let seen = 0;
    const newSpans = () => {
      const spans = tracing.spans();
      const fresh = spans.slice(seen);
      seen = spans.length;
      return fresh;
    };

    // 1. Two writers update one blob at once: the one that loses the race meets a conflict
    //    (an event on its span), reads again and writes; the SDK's requests nest under each update.
    const cell = () => blobJsonCell<{ n: number }>(blobs.getBlockBlobClient("counter.json"));
    await optimisticUpdate(cell(), () => ({ n: 0 }));
    newSpans();
    await Promise.all(
      [1, 2].map(() => optimisticUpdate(cell(), (current) => ({ n: (current?.n ?? 0) + 1 }), { coalesce: false })),
    );
    show("two writers race on one blob", newSpans());

    // 2. Worker B waits for the lock worker A holds; A releases it, B gets it (a handoff).
    const lockA = blobLock(blobs, "report-lock", { holderName: "worker A" });
    const lockB = blobLock(blobs, "report-lock", { holderName: "worker B" });
    const a = await lockA.acquire();
    const waiting = lockB.acquire({ timeoutInMs: 20_000 });
    await new Promise((resolve) => setTimeout(resolve, 500));
    await a.release();
    const b = await waiting;
    await b.release();
    show("a lock handed from worker A to worker B", newSpans());

    // 3. A batch of 120 upserts over two partitions: one span, one transaction per 100 actions.
    const actions = Array.from(
      { length: 120 },
      (_, i) => ["upsert", { partitionKey: `p${i % 2}`, rowKey: `r${i}`, value: i }] as const,
    );
    await writeBatch(table, actions);
    show("a batch write", newSpans());

    // 4. A message processed through the Table idempotency store, then the same order again.
    const consumer = new QueueConsumer<{ orderId: string }>(queue, async (order) => `shipped ${order.orderId}`, {
      codec: jsonCodec(),
      idempotency: { store: new TableIdempotencyStore(table), key: (order) => order.orderId, purge: false },
    });
    let settled = 0;
    consumer.on("processed", () => void settled++);
    consumer.on("duplicate", () => void settled++);
    await consumer.start();
    for (const sent of [1, 2]) {
      await queue.sendMessage(JSON.stringify({ orderId: "order-7" }));
      while (settled < sent) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await consumer.stop();
    show("a message processed, and the same order sent again", newSpans());

    log("metrics:");
    for (const point of await tracing.metrics()) {
      const attributes = Object.entries(point.attributes)
        .map(([key, value]) => `${key}=${String(value)}`)
        .join(" ");
      const value = point.count === undefined ? `${point.value}` : `${point.count} recorded, sum ${point.value}`;
      log(`  ${point.name} ${attributes ? `{${attributes}} ` : ""}${value}`);
    }
  } finally {
    await Promise.all([blobs.delete(), table.deleteTable(), queue.delete()]);
    await tracing.stop();
  }
}

/**
 * The library's spans and what nests under them. Left out: the SDK's spans outside them (the
 * consumer's start-up checks and receives, renewals and releases, the entity operations a batch
 * transaction is built of), which an application sees too, in traces of their own.
 */
function libraryTrees(spans: readonly SpanRecord[]): SpanRecord[] {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const rootOf = (span: SpanRecord): SpanRecord => {
    const parent = span.parentSpanId === undefined ? undefined : byId.get(span.parentSpanId);
    return parent ? rootOf(parent) : span;
  };
  return spans.filter((s) => /^(asc\.|process )/.test(rootOf(s).name));
}

runIfMain(import.meta.url, { title, main });
