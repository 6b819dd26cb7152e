/**
 * The queue consumer's message spans (issue 14): one `process <queue>` span per message, per
 * OpenTelemetry's messaging semantic conventions, with its outcome (processed, duplicate, poisoned)
 * and the SDK calls made for the message (the Table idempotency store's claim and done mark, the
 * queue's delete) nested under it; with a batch handler, one span per message too.
 */
import type { TableClient } from "@azure/data-tables";
import { jsonCodec, QueueConsumer } from "../../../src/queue/index.js";
import { TableIdempotencyStore } from "../../../src/idempotency/index.js";
import { ATTR, MESSAGING_SYSTEM, METRIC, SPAN } from "../../../src/observability/names.js";
import { descendants, formatTraceTree, startTracing, type SpanRecord } from "../../../examples/support/tracing.js";
import { tableClient, uniqueName } from "../../support/storage.js";
import { newQueue, quick, record } from "../queue/consumer-support.js";

interface Job {
  readonly id: string;
  readonly fail?: boolean;
}

let inbox: TableClient;
const tracing = startTracing();

beforeAll(async () => {
  inbox = tableClient(uniqueName("otelinbox"));
  await inbox.createTable();
});
afterAll(async () => {
  await inbox.deleteTable();
  await tracing.stop();
});

/** The message span of `messageId`, or a failure that shows the whole tree. */
function messageSpan(spans: readonly SpanRecord[], messageId: string): SpanRecord {
  const found = spans.filter((s) => s.attributes[ATTR.messagingMessageId] === messageId);
  if (found.length !== 1) throw new Error(`${found.length} spans of ${messageId} in:\n${formatTraceTree(spans)}`);
  return found[0]!;
}

it("a message processed through the Table store: its span, attributes and outcome, the SDK's spans under it; a duplicate's outcome", async () => {
  const { queue } = await newQueue("otelconsumer");
  const consumer = new QueueConsumer<Job, never>(
    queue,
    async (job) => {
      if (job.fail) throw new Error(`${job.id} is bad`);
      return job.id;
    },
    {
      ...quick,
      codec: jsonCodec(),
      maxDequeueCount: 1,
      handlerTimeoutInMs: 10_000,
      idempotency: { store: new TableIdempotencyStore(inbox), key: (job) => job.id, purge: false },
    },
  );
  const events = record(consumer);
  await consumer.start();
  const first = (await queue.sendMessage(JSON.stringify({ id: "order-1" }))).messageId;
  await events.next("processed", 1);
  const again = (await queue.sendMessage(JSON.stringify({ id: "order-1" }))).messageId; // same key: a duplicate
  await events.next("duplicate", 1);
  const bad = (await queue.sendMessage(JSON.stringify({ id: "order-2", fail: true }))).messageId;
  await events.next("poisoned", 1);
  await consumer.stop();

  const spans = tracing.spans();
  const processed = messageSpan(spans, first);
  expect(processed).toMatchObject({
    name: `${SPAN.messageProcess} ${queue.name}`,
    kind: "consumer",
    status: "unset",
    attributes: {
      [ATTR.messagingSystem]: "azure_queue",
      [ATTR.messagingDestination]: queue.name,
      [ATTR.messagingOperationName]: "process",
      [ATTR.messagingOperationType]: "process",
      [ATTR.dequeueCount]: 1,
      [ATTR.handlerTimeout]: 10,
      [ATTR.outcome]: "processed",
    },
  });
  // The store's claim (a new row) and done mark, and the queue's delete, each with its HTTP request.
  const under = descendants(spans, processed);
  const names = under.map((s) => s.name);
  expect(names).toEqual(expect.arrayContaining([expect.stringMatching(/createEntity/)]));
  expect(names).toEqual(expect.arrayContaining([expect.stringMatching(/updateEntity/)]));
  expect(names).toEqual(expect.arrayContaining([expect.stringMatching(/deleteMessage/)]));
  expect(names).toEqual(expect.arrayContaining(["HTTP POST", "HTTP DELETE"]));
  expect(new Set(under.map((s) => s.traceId))).toEqual(new Set([processed.traceId]));

  const duplicate = messageSpan(spans, again);
  expect(duplicate.attributes[ATTR.outcome]).toBe("duplicate");
  expect(descendants(spans, duplicate).map((s) => s.name)).toEqual(
    expect.arrayContaining([expect.stringMatching(/createEntity/), expect.stringMatching(/deleteMessage/)]),
  );

  const poisoned = messageSpan(spans, bad);
  expect(poisoned).toMatchObject({
    status: "error",
    attributes: { [ATTR.outcome]: "poisoned", [ATTR.errorType]: "Error" },
  });
  expect(descendants(spans, poisoned).map((s) => s.name)).toEqual(
    expect.arrayContaining([expect.stringMatching(/sendMessage/)]), // to the poison queue
  );

  const points = await tracing.metrics();
  const messages = (outcome: string) =>
    points.find(
      (p) =>
        p.name === METRIC.consumedMessages &&
        p.attributes[ATTR.outcome] === outcome &&
        p.attributes[ATTR.messagingDestination] === queue.name,
    )?.value;
  expect([messages("processed"), messages("duplicate"), messages("poisoned")]).toEqual([1, 1, 1]);
  // Per the messaging conventions: the system and the operation on every point, `error.type` on a failure.
  const poisonedPoint = points.find(
    (p) => p.name === METRIC.consumedMessages && p.attributes[ATTR.outcome] === "poisoned",
  );
  expect(poisonedPoint?.attributes).toMatchObject({
    [ATTR.messagingSystem]: MESSAGING_SYSTEM,
    [ATTR.messagingOperationName]: "receive",
    [ATTR.errorType]: "Error",
  });
  const durations = points.filter(
    (p) => p.name === METRIC.processDuration && p.attributes[ATTR.messagingDestination] === queue.name,
  );
  expect(durations.reduce((sum, p) => sum + (p.count ?? 0), 0)).toBe(3); // one per message, as its span
  expect(durations.every((p) => p.attributes[ATTR.messagingOperationName] === "process")).toBe(true);
  expect(points.find((p) => p.name === METRIC.emptyReceives)?.value).toBeGreaterThanOrEqual(1);
}, 60_000);

it("a batch handler: one span per message, each with its own outcome and its own delete", async () => {
  const { queue } = await newQueue("otelbatch");
  const ids: string[] = [];
  for (const id of ["a", "b", "c"])
    ids.push((await queue.sendMessage(JSON.stringify({ id, fail: id === "c" }))).messageId);
  const consumer = QueueConsumer.withBatchHandler<Job>(
    queue,
    async (messages) =>
      messages.map(({ body }) =>
        body.fail ? { status: "failed", error: new Error("c is bad") } : { status: "processed", result: body.id },
      ),
    { ...quick, codec: jsonCodec(), batchSize: 8, maxDequeueCount: 5 },
  );
  const events = record(consumer);
  await consumer.start();
  await events.next("processed", 2);
  await events.next("failed", 1);
  await consumer.stop();

  const spans = tracing.spans();
  const [a, b, c] = ids.map((id) =>
    messageSpan(
      spans.filter((s) => s.attributes[ATTR.dequeueCount] === 1),
      id,
    ),
  );
  for (const span of [a!, b!]) {
    expect(span.attributes[ATTR.outcome]).toBe("processed");
    expect(descendants(spans, span).map((s) => s.name)).toEqual(
      expect.arrayContaining([expect.stringMatching(/deleteMessage/)]),
    );
  }
  expect(c).toMatchObject({ status: "error", attributes: { [ATTR.outcome]: "failed" } });
  expect(descendants(spans, c!).map((s) => s.name)).toEqual(
    expect.arrayContaining([expect.stringMatching(/updateMessage/)]), // visible again for its retry
  );
}, 60_000);
