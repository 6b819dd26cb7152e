/**
 * A message whose idempotency key another message is processing right now (issue 12, item 11):
 * waiting for the key is not a failed delivery. The message waits in place, kept invisible by its
 * heartbeat, and is settled as a duplicate once the other finishes; it is never received again
 * meanwhile, so its dequeue count does not grow and it is never poisoned.
 */
import { exponentialBackoff } from "../../../src/retry/index.js";
import { jsonCodec, QueueConsumer, type QueueConsumerEvents } from "../../../src/queue/index.js";
import { TableIdempotencyStore } from "../../../src/idempotency/index.js";
import { queueService, tableClient, uniqueName } from "../../support/storage.js";

interface Order {
  orderId: string;
  n: number;
}

it("a message deferred because its key is busy is never poisoned and ends as a duplicate", async () => {
  const queue = queueService().getQueueClient(uniqueName("busy"));
  const inbox = tableClient(uniqueName("busyinbox"));
  await queue.create();
  await inbox.createTable();
  try {
    await queue.sendMessage(JSON.stringify({ orderId: "o-1", n: 1 }));
    await queue.sendMessage(JSON.stringify({ orderId: "o-1", n: 2 })); // the same order again
    const runs: number[] = [];
    const consumer = new QueueConsumer<Order>(
      queue,
      async (order) => {
        runs.push(order.n);
        await new Promise((resolve) => setTimeout(resolve, 4_500)); // healthy, but past two visibility timeouts
        return "ok";
      },
      {
        codec: jsonCodec<Order>(),
        idempotency: { store: new TableIdempotencyStore(inbox), key: (order) => order.orderId },
        visibilityTimeoutInSeconds: 2,
        // Updates well inside the hold's window (1.5 s from the last one that landed), on a busy machine.
        heartbeatIntervalInMs: 400,
        // One reception only: a deferral that counted as a delivery would poison the second message.
        maxDequeueCount: 1,
        batchSize: 2,
        concurrency: 2,
        newBatchThreshold: 1,
        pollingBackoff: exponentialBackoff({ deltaInMs: 20, minInMs: 0, maxInMs: 200 }),
      },
    );
    const seen: { name: string; payload: unknown }[] = [];
    for (const name of [
      "processed",
      "duplicate",
      "deferred",
      "poisoned",
      "failed",
      "ownershipLost",
      "error",
    ] as const) {
      consumer.on(name, (payload) => seen.push({ name, payload }));
    }
    const duplicate = new Promise<QueueConsumerEvents["duplicate"]>((resolve) => consumer.on("duplicate", resolve));
    await consumer.start();
    const settled = await duplicate;
    await consumer.stop();

    expect(runs).toHaveLength(1);
    expect(settled).toMatchObject({ key: "o-1", result: "ok" });
    expect(settled.message.dequeueCount).toBe(1); // never received again while it waited
    const names = seen.map((e) => e.name);
    expect(names).toContain("deferred");
    expect(names.filter((n) => n === "processed")).toHaveLength(1);
    expect(names.filter((n) => ["poisoned", "failed", "ownershipLost", "error"].includes(n))).toEqual([]);
    const deferred = seen.find((e) => e.name === "deferred")!.payload as QueueConsumerEvents["deferred"];
    expect(deferred.owner).toBe(consumer.consumerId);
    expect(deferred.waitInMs).toBeLessThanOrEqual(2_000 / 3 + 1);
    expect((await queue.getProperties()).approximateMessagesCount).toBe(0);
  } finally {
    await queue.delete();
    await inbox.deleteTable();
  }
}, 30_000);
