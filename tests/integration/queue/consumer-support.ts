/**
 * What the consumer tests share: queues and inbox tables made and deleted per test file, a recorder
 * of a consumer's events, and quick timings.
 */
import type { TableClient } from "@azure/data-tables";
import type { QueueClient } from "@azure/storage-queue";
import { exponentialBackoff, fixedBackoff } from "../../../src/retry/index.js";
import { type QueueConsumer, type QueueConsumerEvents, type QueueConsumerOptions } from "../../../src/queue/index.js";
import { queueService, tableClient, uniqueName } from "../../support/storage.js";

const cleanup: QueueClient[] = [];
const tables: TableClient[] = [];
afterAll(async () => {
  await Promise.all([...cleanup.map((q) => q.deleteIfExists()), ...tables.map((t) => t.deleteTable())]);
});

/** A new, empty inbox table (for the Table idempotency store), deleted after the test file. */
export async function newInbox(prefix = "inbox"): Promise<TableClient> {
  const table = tableClient(uniqueName(prefix));
  await table.createTable();
  tables.push(table);
  return table;
}

export async function newQueue(prefix = "consumer"): Promise<{ queue: QueueClient; poison: QueueClient }> {
  const name = uniqueName(prefix);
  const queue = queueService().getQueueClient(name);
  const poison = queueService().getQueueClient(`${name}-poison`);
  await queue.create();
  cleanup.push(queue, poison);
  return { queue, poison };
}

/** Collects a consumer's events in order. */
export function record<T, E>(consumer: QueueConsumer<T, E>) {
  const events: { name: keyof QueueConsumerEvents; payload: unknown }[] = [];
  const names: (keyof QueueConsumerEvents)[] = [
    "received",
    "processed",
    "duplicate",
    "deferred",
    "failed",
    "poisoned",
    "ownershipLost",
    "error",
    "stopped",
  ];
  for (const name of names) consumer.on(name, (payload) => events.push({ name, payload }));
  const of = <K extends keyof QueueConsumerEvents>(name: K) =>
    events.filter((e) => e.name === name).map((e) => e.payload as QueueConsumerEvents[K]);
  const next = <K extends keyof QueueConsumerEvents>(name: K, count = 1, timeoutInMs = 20_000) =>
    new Promise<QueueConsumerEvents[K][]>((resolve, reject) => {
      const check = () => of(name).length >= count;
      if (check()) return resolve(of(name));
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `no ${count} '${name}' events within ${timeoutInMs} ms: ${JSON.stringify(events.map((e) => e.name))}`,
            ),
          ),
        timeoutInMs,
      );
      const listener = consumer.on(name, () => {
        if (!check()) return;
        clearTimeout(timer);
        listener.dispose();
        resolve(of(name));
      });
    });
  return { events, of, next };
}

export const quick: Pick<
  QueueConsumerOptions<unknown>,
  "visibilityTimeoutInSeconds" | "pollingBackoff" | "retryBackoff"
> = {
  visibilityTimeoutInSeconds: 5,
  pollingBackoff: exponentialBackoff({ deltaInMs: 20, minInMs: 0, maxInMs: 200 }),
  retryBackoff: fixedBackoff({ delayInMs: 0 }),
};

export async function peekCount(queue: QueueClient): Promise<number> {
  return (await queue.peekMessages({ numberOfMessages: 32 })).peekedMessageItems.length;
}
