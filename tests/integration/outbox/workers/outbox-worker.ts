/**
 * A process of the outbox kill test (ASC_ROLE): a `writer` (ASC_WRITER names it) commits ASC_COUNT
 * orders, each with its "order placed" message, through a TableOutbox on ASC_TABLE (every 5th
 * message is large: it goes through the claim-check when relayed); a `relay` runs an OutboxRelay
 * to ASC_QUEUE; a `consumer` runs a QueueConsumer with the claim-check and a TableIdempotencyStore
 * on ASC_INBOX, whose handler writes one effect row `effect-<uuid>` (Key: the message's id) in the
 * same transaction as the done mark, so an effect committed twice would show up as two rows.
 * Reports on stdout as JSON lines; SIGTERM stops relays and consumers gracefully.
 */
import { randomUUID } from "node:crypto";
import type { TransactionAction } from "@azure/data-tables";
import {
  ClaimCheck,
  fixedBackoff,
  OutboxRelay,
  QueueConsumer,
  TableIdempotencyStore,
  TableOutbox,
} from "../../../../src/index.js";
import { blobService, queueService, tableClient } from "../../../support/storage.js";

const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is not set`);
  return value;
};
const print = (line: Record<string, unknown>) =>
  process.stdout.write(`${JSON.stringify({ pid: process.pid, ...line })}\n`);

const table = tableClient(env("ASC_TABLE"));
const queue = queueService().getQueueClient(env("ASC_QUEUE"));
const claimCheck = new ClaimCheck(blobService().getContainerClient(env("ASC_PAYLOADS")), {
  requestTimeoutInMs: 5_000,
  sweepGraceInMs: 60_000,
});

async function write(): Promise<void> {
  const writer = env("ASC_WRITER");
  const outbox = new TableOutbox(table);
  for (let i = 0; i < Number(env("ASC_COUNT")); i++) {
    const orderId = `${writer}-${i}`;
    const partitionKey = `customer-${i % 3}`;
    const body = JSON.stringify({ orderId, ...(i % 5 === 4 ? { lines: "x".repeat(70_000) } : {}) });
    print({ event: "committing", orderId });
    try {
      await outbox.write([["create", { partitionKey, rowKey: orderId }]], [{ body, id: orderId }], { maxAttempts: 50 });
      print({ event: "committed", orderId });
    } catch (error) {
      print({ event: "failed", orderId, error: String(error) });
    }
  }
  print({ event: "done" });
}

async function relay(): Promise<void> {
  const relay = new OutboxRelay(table, queue, {
    claimCheck,
    lockContainer: blobService().getContainerClient(env("ASC_LOCKS")),
    identity: `relay-${process.pid}`,
    pollIntervalInMs: 50,
    maxPollIntervalInMs: 200,
    retryPeriodInMs: 300,
    renewDeadlineInMs: 8_000,
  });
  relay.on("leading", () => print({ event: "leading" }));
  relay.on("sent", ({ id, sequence, partitionKey }) => print({ event: "sent", id, sequence, partitionKey }));
  relay.on("error", ({ operation, error }) => print({ event: "error", operation, error: String(error) }));
  process.once("SIGTERM", () => void relay.stop().then(() => process.exit(0)));
  await relay.start();
  print({ event: "ready" });
}

async function consume(): Promise<void> {
  const inbox = tableClient(env("ASC_INBOX"));
  const consumer = new QueueConsumer<string, TransactionAction>(
    queue,
    async (body, { idempotency, addEffects, message }) => {
      const { orderId } = JSON.parse(body) as { orderId: string };
      print({ event: "handling", key: idempotency!.key, messageId: message.messageId });
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 20));
      addEffects([
        "create",
        {
          partitionKey: idempotency!.partitionKey,
          rowKey: `effect-${randomUUID()}`,
          Key: idempotency!.key,
          OrderId: orderId,
          Pid: process.pid,
        },
      ]);
    },
    {
      claimCheck,
      idempotency: { store: new TableIdempotencyStore(inbox) },
      visibilityTimeoutInSeconds: 3,
      requestTimeoutInMs: 2_100,
      maxDequeueCount: 10,
      concurrency: 8,
      batchSize: 8,
      retryBackoff: fixedBackoff({ delayInMs: 0 }),
    },
  );
  consumer.on("processed", ({ message }) => print({ event: "processed", messageId: message.messageId }));
  consumer.on("duplicate", ({ key }) => print({ event: "duplicate", key }));
  consumer.on("poisoned", ({ reason }) => print({ event: "poisoned", reason }));
  consumer.on("error", ({ operation, error }) => print({ event: "error", operation, error: String(error) }));
  process.once("SIGTERM", () => void consumer.stop({ gracePeriodInMs: 3_000 }).then(() => process.exit(0)));
  await consumer.start();
  print({ event: "ready" });
}

const role = env("ASC_ROLE");
await (role === "writer" ? write() : role === "relay" ? relay() : consume());
