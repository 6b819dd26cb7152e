/**
 * Fail fast, never silently (issue 12, item 12): `start()` checks the queue, the poison queue and
 * the idempotency table and rejects with a `ConsumerResourceError` that names the resource and
 * the fix; a queue or table deleted after the start, or a refused credential, ends the consumer once
 * with status `failed` (and `closed` rejecting), without counting against any message. Least
 * privilege works: a consumer whose SAS cannot read queue properties, and a poison queue client
 * that may only add messages, both start.
 */
import { exponentialBackoff } from "../../../src/retry/index.js";
import {
  isConsumerResourceError,
  QueueConsumer,
  type QueueConsumerEvents,
  type QueueConsumerOptions,
} from "../../../src/queue/index.js";
import { MemoryIdempotencyStore, TableIdempotencyStore } from "../../../src/idempotency/index.js";
import { queueSasClient, queueService, tableClient, uniqueName } from "../../support/storage.js";

const quick: QueueConsumerOptions<string> = {
  visibilityTimeoutInSeconds: 5,
  pollingBackoff: exponentialBackoff({ deltaInMs: 20, minInMs: 0, maxInMs: 200 }),
};

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (error: unknown) => error,
  );
}

function collect<T, E>(consumer: QueueConsumer<T, E>) {
  const events: { name: keyof QueueConsumerEvents; payload: unknown }[] = [];
  for (const name of ["received", "processed", "failed", "poisoned", "error", "stopped"] as const) {
    consumer.on(name, (payload) => events.push({ name, payload }));
  }
  return events;
}

describe("start() checks what the consumer needs", () => {
  it("rejects on a missing queue, naming it and the fix; the consumer is failed and makes no receive", async () => {
    const name = uniqueName("missing");
    const consumer = new QueueConsumer(queueService().getQueueClient(name), async () => undefined, quick);
    const events = collect(consumer);
    const error = await rejection(consumer.start());
    expect(isConsumerResourceError(error)).toBe(true);
    expect(error).toMatchObject({ resource: "queue", resourceName: name, statusCode: 404, transient: false });
    expect((error as Error).message).toMatch(new RegExp(`queue '${name}' does not exist.*create`, "i"));
    expect(consumer.status).toBe("failed");
    await expect(consumer.closed).rejects.toBe(error);
    expect(events.map((e) => e.name)).toEqual(["stopped"]);
    expect(await queueService().getQueueClient(`${name}-poison`).exists()).toBe(false);
  });

  it("rejects on a missing idempotency table, naming it and createTable()", async () => {
    const queue = queueService().getQueueClient(uniqueName("notable"));
    await queue.create();
    try {
      const table = tableClient(uniqueName("missinginbox"));
      const consumer = new QueueConsumer(queue, async () => undefined, {
        ...quick,
        idempotency: { store: new TableIdempotencyStore(table) },
      });
      const error = await rejection(consumer.start());
      expect(error).toMatchObject({ resource: "idempotencyStore", resourceName: table.tableName, statusCode: 404 });
      expect((error as Error).message).toMatch(/does not exist.*createTable\(\)/);
      expect(consumer.status).toBe("failed");
    } finally {
      await queue.delete();
      await queueService().getQueueClient(`${queue.name}-poison`).deleteIfExists();
    }
  });

  it("rejects a refused credential (a SAS with a wrong signature), without the signature in the message", async () => {
    const name = uniqueName("refused");
    await queueService().getQueueClient(name).create();
    try {
      const consumer = new QueueConsumer(queueSasClient(name, "rpua", { badSignature: true }), async () => undefined, {
        ...quick,
        poisonQueue: queueSasClient(`${name}-poison`, "a"),
      });
      const error = await rejection(consumer.start());
      expect(error).toMatchObject({ resource: "queue", statusCode: 403, serviceCode: "AuthenticationFailed" });
      expect((error as Error).message).toMatch(/refused the credential/);
      expect((error as Error).message).not.toMatch(/AAAA/);
    } finally {
      await queueService().getQueueClient(name).delete();
    }
  });

  it("creates a missing poison queue at the start when the credential may", async () => {
    const name = uniqueName("poisoncheck");
    const queue = queueService().getQueueClient(name);
    await queue.create();
    try {
      const consumer = new QueueConsumer(queue, async () => undefined, quick);
      await consumer.start();
      await consumer.stop();
      expect(await queueService().getQueueClient(`${name}-poison`).exists()).toBe(true);
    } finally {
      await queue.delete();
      await queueService().getQueueClient(`${name}-poison`).deleteIfExists();
    }
  });

  it("an add-only poison client cannot tell at the start that its queue is missing: the first poison move fails the consumer, naming the fix", async () => {
    const name = uniqueName("nopoison");
    const queue = queueService().getQueueClient(name);
    await queue.create();
    try {
      const consumer = new QueueConsumer(
        queue,
        async () => {
          throw new Error("always fails");
        },
        { ...quick, maxDequeueCount: 1, poisonQueue: queueSasClient(`${name}-poison`, "a") },
      );
      const events = collect(consumer);
      await consumer.start();
      await queue.sendMessage("bad job");
      const error = await rejection(consumer.closed);
      expect(error).toMatchObject({ resource: "poisonQueue", resourceName: `${name}-poison`, statusCode: 403 });
      expect((error as Error).message).toMatch(
        /add \(a\) on the poison queue \(and create rights while it does not exist\)/,
      );
      expect(events.filter((e) => e.name === "poisoned")).toEqual([]);
      // The message was not lost: it comes back once its visibility timeout ends.
      expect(await queueService().getQueueClient(`${name}-poison`).exists()).toBe(false);
      expect((await queue.getProperties()).approximateMessagesCount).toBe(1);
    } finally {
      await queue.delete();
    }
  });

  it("starts with least privilege: process+update on the queue (no read), add-only on an existing poison queue", async () => {
    const name = uniqueName("leastpriv");
    const queue = queueService().getQueueClient(name);
    await queue.create();
    await queueService().getQueueClient(`${name}-poison`).create();
    try {
      await queue.sendMessage("hello");
      const consumer = new QueueConsumer(queueSasClient(name, "pu"), async (body) => body.toUpperCase(), {
        ...quick,
        poisonQueue: queueSasClient(`${name}-poison`, "a"),
      });
      const processed = new Promise<QueueConsumerEvents["processed"]>((resolve) => consumer.on("processed", resolve));
      await consumer.start();
      expect((await processed).result).toBe("HELLO");
      await consumer.stop();
      expect(consumer.status).toBe("stopped");
      await expect(consumer.closed).resolves.toBeUndefined();
    } finally {
      await queue.delete();
      await queueService().getQueueClient(`${name}-poison`).delete();
    }
  });
});

describe("a resource lost after the start ends the consumer, once and loudly", () => {
  it("the queue is deleted: status failed, one error event, closed rejects", async () => {
    const name = uniqueName("deleted");
    const queue = queueService().getQueueClient(name);
    await queue.create();
    try {
      const consumer = new QueueConsumer(queue, async () => undefined, quick);
      const events = collect(consumer);
      await consumer.start();
      await queue.delete();
      const error = await rejection(consumer.closed);
      expect(isConsumerResourceError(error)).toBe(true);
      expect(error).toMatchObject({ resource: "queue", statusCode: 404, serviceCode: "QueueNotFound" });
      expect(consumer.status).toBe("failed");
      expect(events.filter((e) => e.name === "error")).toEqual([
        { name: "error", payload: { error, operation: "consume", message: undefined } },
      ]);
      expect(events.at(-1)).toEqual({ name: "stopped", payload: { error } });
      await expect(consumer.stop()).resolves.toEqual({ timedOut: false, stillRunning: [] });
    } finally {
      await queueService().getQueueClient(`${name}-poison`).deleteIfExists();
    }
  });

  it("the idempotency table is deleted: the message is neither run nor poisoned, and comes back later", async () => {
    const name = uniqueName("tablegone");
    const queue = queueService().getQueueClient(name);
    const inbox = tableClient(uniqueName("goneinbox"));
    await queue.create();
    await inbox.createTable();
    try {
      let runs = 0;
      const consumer = new QueueConsumer(
        queue,
        async () => {
          runs += 1;
        },
        {
          ...quick,
          maxDequeueCount: 1,
          idempotency: { store: new TableIdempotencyStore(inbox), key: (body) => body },
        },
      );
      const events = collect(consumer);
      await consumer.start();
      await inbox.deleteTable();
      await queue.sendMessage("order-1");
      const error = await rejection(consumer.closed);
      expect(error).toMatchObject({ resource: "idempotencyStore", resourceName: inbox.tableName, statusCode: 404 });
      expect(runs).toBe(0);
      expect(events.filter((e) => ["poisoned", "failed", "processed"].includes(e.name))).toEqual([]);
      expect(events.filter((e) => e.name === "error")).toHaveLength(1);
      expect(await queueService().getQueueClient(`${name}-poison`).getProperties()).toMatchObject({
        approximateMessagesCount: 0,
      });
    } finally {
      await queue.delete();
      await queueService().getQueueClient(`${name}-poison`).deleteIfExists();
    }
  });

  it("a consumer without a store in memory has nothing to check but its queues", async () => {
    const name = uniqueName("memstore");
    const queue = queueService().getQueueClient(name);
    await queue.create();
    try {
      const consumer = new QueueConsumer(queue, async () => undefined, {
        ...quick,
        idempotency: { store: new MemoryIdempotencyStore() },
      });
      await consumer.start();
      expect(consumer.status).toBe("running");
      await consumer.stop();
    } finally {
      await queue.delete();
      await queueService().getQueueClient(`${name}-poison`).deleteIfExists();
    }
  });
});
