/**
 * A consumer process for the queue tests: consumes ASC_QUEUE with a TableIdempotencyStore on
 * ASC_INBOX (keys from the body, or the message id with ASC_KEY=message-id; with
 * ASC_EFFECTS=tables-only, no claim before a first delivery's handler), one message at a time
 * or, with ASC_BATCH=1, with a batch handler whose keys share ASC_PARTITIONS partitions (so that
 * done marks share transactions), and reports on stdout as JSON lines:
 * `ready`, `handling` (a handler started), `processed`, `duplicate`, `poisoned`, `ownershipLost`,
 * `error`, `stopped`. SIGTERM stops it gracefully.
 *
 * Bodies are JSON `{ key, poison?, sleepMs? }`: `poison` makes the handler throw; `sleepMs` is how
 * long the handler works (default a random 0..ASC_MAX_SLEEP_MS). Each successful attempt writes
 * one effect row `effect-<uuid>` in the key's partition in the same transaction as the done mark,
 * so an effect committed twice would show up as two rows.
 */
import { randomUUID } from "node:crypto";
import type { TransactionAction } from "@azure/data-tables";
import { fixedBackoff } from "../../../../src/retry/index.js";
import {
  jsonCodec,
  QueueConsumer,
  type BatchMessageOutcome,
  type MessageContext,
  type QueueConsumerOptions,
} from "../../../../src/queue/index.js";
import { TableIdempotencyStore } from "../../../../src/idempotency/index.js";
import { queueService, tableClient } from "../../../support/storage.js";

interface Body {
  key: string;
  poison?: boolean;
  sleepMs?: number;
}

const env = (name: string, fallback?: string): string => {
  const value = process.env[name] ?? fallback;
  if (value === undefined) throw new Error(`${name} is not set`);
  return value;
};
const print = (line: Record<string, unknown>) =>
  process.stdout.write(`${JSON.stringify({ pid: process.pid, ...line })}\n`);

const queue = queueService().getQueueClient(env("ASC_QUEUE"));
const inbox = tableClient(env("ASC_INBOX"));
const maxSleepMs = Number(env("ASC_MAX_SLEEP_MS", "20"));
const heartbeat = process.env.ASC_HEARTBEAT_MS ? { heartbeatIntervalInMs: Number(process.env.ASC_HEARTBEAT_MS) } : {};
// Several of these processes and Azurite share two cores: answers can take over a second. The
// default limit (a quarter of a 3 s visibility timeout) would be correct but noisy here.
const requestTimeoutInMs = Number(env("ASC_REQUEST_TIMEOUT_MS", String(Number(env("ASC_VISIBILITY_S", "3")) * 700)));

/** One message's work: the same for one message at a time and for a batch. */
async function work(body: Body, { idempotency, addEffects, abortSignal, message }: MessageContext<TransactionAction>) {
  print({ event: "handling", key: body.key, messageId: message.messageId, dequeueCount: message.dequeueCount });
  const sleepMs = body.sleepMs ?? Math.floor(Math.random() * maxSleepMs);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, sleepMs);
    abortSignal.addEventListener("abort", () => (clearTimeout(timer), reject(abortSignal.reason)), { once: true });
  });
  if (body.poison) throw new Error(`poison message ${body.key} always fails`);
  addEffects([
    "create",
    { partitionKey: idempotency!.partitionKey, rowKey: `effect-${randomUUID()}`, Key: body.key, Pid: process.pid },
  ]);
  return { pid: process.pid };
}

const partitions = Number(process.env.ASC_PARTITIONS ?? "0");
const options: QueueConsumerOptions<Body, TransactionAction> = {
  codec: jsonCodec<Body>(),
  visibilityTimeoutInSeconds: Number(env("ASC_VISIBILITY_S", "3")),
  ...heartbeat,
  requestTimeoutInMs,
  maxDequeueCount: Number(env("ASC_MAX_DEQUEUE", "4")),
  concurrency: Number(env("ASC_CONCURRENCY", "16")),
  batchSize: 16,
  retryBackoff: fixedBackoff({ delayInMs: 0 }),
  idempotency: {
    store: new TableIdempotencyStore(inbox),
    // ASC_KEY=message-id keys by the message id (the default), anything else by the body's key.
    ...(process.env.ASC_KEY === "message-id" ? {} : { key: (body: Body) => body.key }),
    // ASC_EFFECTS=tables-only: no claim before a first delivery's handler (issue 27).
    ...(process.env.ASC_EFFECTS === "tables-only" ? { effects: "tables-only" as const } : {}),
    // ASC_PARTITIONS=n: the keys share n partitions, so a batch's done marks share transactions.
    ...(partitions > 0
      ? { partitionKey: (body: Body) => `group-${Number(body.key.replace(/\D/g, "")) % partitions}` }
      : {}),
  },
};

const consumer =
  process.env.ASC_BATCH === "1"
    ? QueueConsumer.withBatchHandler<Body, TransactionAction>(
        queue,
        async (messages) =>
          Promise.all(
            messages.map(async ({ body, ...context }): Promise<BatchMessageOutcome> => {
              try {
                return { status: "processed", result: await work(body, context) };
              } catch (error) {
                return { status: "failed", error };
              }
            }),
          ),
        options,
      )
    : new QueueConsumer<Body, TransactionAction>(queue, work, options);

consumer.on("processed", ({ message }) =>
  print({ event: "processed", messageId: message.messageId, key: keyOf(message.messageText) }),
);
consumer.on("duplicate", ({ message, key }) => print({ event: "duplicate", messageId: message.messageId, key }));
consumer.on("deferred", ({ message, key }) => print({ event: "deferred", messageId: message.messageId, key }));
consumer.on("poisoned", ({ message, reason }) => print({ event: "poisoned", messageId: message.messageId, reason }));
consumer.on("ownershipLost", ({ message }) => print({ event: "ownershipLost", messageId: message.messageId }));
consumer.on("error", ({ operation, error }) => print({ event: "error", operation, error: String(error) }));

process.once("SIGTERM", () => {
  void consumer.stop({ gracePeriodInMs: 5_000 }).then(() => {
    print({ event: "stopped" });
    process.exit(0);
  });
});

await consumer.start();
print({ event: "ready", consumerId: consumer.consumerId });

function keyOf(text: string): string | undefined {
  try {
    return (JSON.parse(text) as Body).key;
  } catch {
    return undefined;
  }
}
