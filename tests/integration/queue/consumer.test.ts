/**
 * QueueConsumer against a real Azurite, in one process: settling, retries and poison, undecodable
 * bodies, lost ownership (404 and 400 PopReceiptMismatch), graceful stop, polling backoff, bounded
 * concurrency and idempotency with the memory store.
 */
import type { TransactionAction } from "@azure/data-tables";
import { exponentialBackoff, fixedBackoff } from "../../../src/retry/index.js";
import {
  isConsumerStoppedError,
  isMessageOwnershipLostError,
  jsonCodec,
  parsePoisonMessage,
  QueueConsumer,
  type QueueConsumerEvents,
} from "../../../src/queue/index.js";
import { MemoryIdempotencyStore, TableIdempotencyStore } from "../../../src/idempotency/index.js";
import { faultProxyFor, queueService, tableClient, uniqueName } from "../../support/storage.js";
import { newQueue, peekCount, quick, record } from "./consumer-support.js";

describe("QueueConsumer", () => {
  it("processes messages, deletes them, and reports each step", async () => {
    const { queue } = await newQueue();
    for (const text of ["a", "b", "c"]) await queue.sendMessage(text);
    const handled: string[] = [];
    const consumer = new QueueConsumer(
      queue,
      async (body: string) => {
        handled.push(body);
        return body.toUpperCase();
      },
      { ...quick },
    );
    const events = record(consumer);
    expect(consumer.status).toBe("idle");
    await consumer.start();
    expect(consumer.status).toBe("running");
    const processed = await events.next("processed", 3);
    await consumer.stop();
    expect(consumer.status).toBe("stopped");
    expect(handled.sort()).toEqual(["a", "b", "c"]);
    expect(processed.map((p) => p.result).sort()).toEqual(["A", "B", "C"]);
    expect(events.of("received")).toHaveLength(3);
    expect(events.of("stopped")).toHaveLength(1);
    expect(await peekCount(queue)).toBe(0);
  });

  it("retries a failing message and moves it to <queue>-poison after maxDequeueCount, with the reason", async () => {
    const { queue, poison } = await newQueue();
    const sent = await queue.sendMessage("always fails");
    let attempts = 0;
    const consumer = new QueueConsumer(
      queue,
      async () => {
        attempts += 1;
        throw new Error(`attempt ${attempts} failed`);
      },
      { ...quick, maxDequeueCount: 3 },
    );
    const events = record(consumer);
    await consumer.start();
    const [poisoned] = await events.next("poisoned");
    await consumer.stop();

    expect(attempts).toBe(3);
    expect(events.of("failed").map((f) => [f.message.dequeueCount, f.willRetry, f.retryInSeconds])).toEqual([
      [1, true, 0],
      [2, true, 0],
      [3, false, undefined],
    ]);
    expect(poisoned!.poisonQueueName).toBe(poison.name);
    expect(poisoned!.reason).toMatch(/attempt 3 failed/);
    const [item] = (await poison.receiveMessages()).receivedMessageItems;
    const envelope = parsePoisonMessage(item!.messageText);
    expect(envelope).toMatchObject({
      messageText: "always fails",
      messageId: sent.messageId,
      dequeueCount: 3,
      sourceQueue: queue.name,
    });
    expect(envelope!.reason).toMatch(/Failed on each of 3 receptions.*attempt 3 failed/);
    expect(await peekCount(queue)).toBe(0);
  });

  it("waits the retry backoff (whole seconds) before a failed message is visible again", async () => {
    const { queue } = await newQueue();
    await queue.sendMessage("fails once");
    const consumer = new QueueConsumer(
      queue,
      async (_body, { message }) => {
        if (message.dequeueCount === 1) throw new Error("first attempt fails");
      },
      { ...quick, retryBackoff: fixedBackoff({ delayInMs: 1_500 }) },
    );
    const events = record(consumer);
    await consumer.start();
    const [failed] = await events.next("failed");
    expect(failed!.retryInSeconds).toBe(2);
    // Hidden for now (a peek does not see invisible messages) ...
    expect(await peekCount(queue)).toBe(0);
    // ... and processed on its second reception.
    const [processed] = await events.next("processed");
    await consumer.stop();
    expect(processed!.message.dequeueCount).toBe(2);
  });

  it("moves an undecodable body to the poison queue at once with the decode error, without running the handler", async () => {
    const { queue, poison } = await newQueue();
    await queue.sendMessage("{ not json");
    let ran = 0;
    const consumer = new QueueConsumer(queue, async () => void (ran += 1), { ...quick, codec: jsonCodec() });
    const events = record(consumer);
    await consumer.start();
    const [poisoned] = await events.next("poisoned");
    await consumer.stop();
    expect(ran).toBe(0);
    expect(poisoned!.message.dequeueCount).toBe(1);
    expect(poisoned!.reason).toMatch(/not valid JSON/);
    const envelope = parsePoisonMessage((await poison.receiveMessages()).receivedMessageItems[0]!.messageText)!;
    expect(envelope.messageText).toBe("{ not json");
    expect(envelope.errorCode).toBe("MessageDecodeFailed");
    expect(envelope.reason).toMatch(/not valid JSON/);
  });

  it("poisons a message received more than maxDequeueCount times without being settled, before its handler runs", async () => {
    const { queue } = await newQueue();
    await queue.sendMessage("crashes its consumers");
    // Two receptions that were never settled (as if two consumers had died).
    for (let i = 0; i < 2; i++) {
      const [m] = (await queue.receiveMessages({ visibilityTimeout: 1 })).receivedMessageItems;
      await queue.updateMessage(m!.messageId, m!.popReceipt, undefined, 0);
    }
    let ran = 0;
    const consumer = new QueueConsumer(queue, async () => void (ran += 1), { ...quick, maxDequeueCount: 2 });
    const events = record(consumer);
    await consumer.start();
    const [poisoned] = await events.next("poisoned");
    await consumer.stop();
    expect(ran).toBe(0);
    expect(poisoned!.message.dequeueCount).toBe(3);
    expect(poisoned!.reason).toMatch(/received 3 times .* without being settled/);
  });

  it("reports a delete that fails with 400 PopReceiptMismatch as lost ownership, not as processed", async () => {
    const { queue } = await newQueue();
    await queue.sendMessage("taken over");
    const consumer = new QueueConsumer(
      queue,
      async (_body, { message, popReceipt }) => {
        // Someone else updates the message on its first delivery: the consumer's pop receipt is stale.
        if (message.dequeueCount === 1) await queue.updateMessage(message.messageId, popReceipt, undefined, 0);
      },
      { ...quick },
    );
    const events = record(consumer);
    await consumer.start();
    const [lost] = await events.next("ownershipLost");
    const [processed] = await events.next("processed");
    await consumer.stop();
    expect(isMessageOwnershipLostError(lost!.error)).toBe(true);
    expect(lost!.error).toMatchObject({
      statusCode: 400,
      serviceCode: "PopReceiptMismatch",
      operation: "delete",
      lost: "message",
    });
    expect(lost!.message.dequeueCount).toBe(1);
    expect(processed!.message.dequeueCount).toBe(2);
    expect(events.of("processed")).toHaveLength(1);
    expect(events.of("error")).toEqual([]);
  });

  it("counts a delete answered 404 while the message is certainly still hidden as done: nobody else can have deleted it", async () => {
    const { queue } = await newQueue();
    await queue.sendMessage("deleted with our own receipt");
    const consumer = new QueueConsumer(
      queue,
      async (_body, { message, popReceipt }) => {
        // Only a holder of this pop receipt can delete the message: what a lost answer to our own delete looks like.
        await queue.deleteMessage(message.messageId, popReceipt);
      },
      { ...quick },
    );
    const events = record(consumer);
    await consumer.start();
    const [processed] = await events.next("processed");
    await consumer.stop();
    expect(processed).toMatchObject({ messageDeleted: true });
    expect(events.of("ownershipLost")).toEqual([]);
  });

  // The service answers a stale pop receipt 404 too ("Delete Message"), so a 404 heard while the
  // message is certainly hidden may be the consumer's own update having landed: the message is
  // then taken as hidden by it until its window ends, and lost from then on (docs/service-conformance.md).
  it("aborts the handler's signal when a heartbeat finds the message gone, once the message may be visible again", async () => {
    const { queue } = await newQueue();
    await queue.sendMessage("vanishes mid-work");
    let abortReason: unknown;
    const consumer = new QueueConsumer(
      queue,
      async (_body, { message, popReceipt, abortSignal }) => {
        await queue.deleteMessage(message.messageId, popReceipt);
        await new Promise<void>((_resolve, reject) => {
          const timer = setTimeout(() => reject(new Error("the signal was never aborted")), 10_000);
          abortSignal.addEventListener("abort", () => {
            clearTimeout(timer);
            abortReason = abortSignal.reason;
            reject(abortSignal.reason);
          });
        });
      },
      { ...quick, visibilityTimeoutInSeconds: 2, heartbeatIntervalInMs: 200 },
    );
    const events = record(consumer);
    await consumer.start();
    const [lost] = await events.next("ownershipLost");
    await consumer.stop();
    expect(isMessageOwnershipLostError(abortReason)).toBe(true);
    expect(lost!.error).toBe(abortReason);
    expect(lost!.error).toMatchObject({ operation: "extend the visibility of", lost: "message" });
    expect(events.of("failed")).toEqual([]);
    expect(events.of("ownershipLost")).toHaveLength(1);
  });

  it("stop() lets running handlers finish within the grace period and resolves after them", async () => {
    const { queue } = await newQueue();
    await queue.sendMessage("slow");
    let finished = false;
    const consumer = new QueueConsumer(
      queue,
      async () => {
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        finished = true;
      },
      { ...quick },
    );
    const events = record(consumer);
    await consumer.start();
    await events.next("received");
    const stopping = consumer.stop({ gracePeriodInMs: 20_000 });
    expect(consumer.status).toBe("stopping");
    await stopping;
    expect(finished).toBe(true);
    expect(consumer.status).toBe("stopped");
    expect(events.of("processed")).toHaveLength(1);
    expect(events.events.at(-1)!.name).toBe("stopped");
    expect(await peekCount(queue)).toBe(0);
    await expect(consumer.start()).rejects.toThrow(/starts once/);
  });

  it("stop() aborts handlers after the grace period and makes their messages visible again at once", async () => {
    const { queue } = await newQueue();
    await queue.sendMessage("stubborn");
    let reason: unknown;
    const consumer = new QueueConsumer(
      queue,
      (_body, { abortSignal }) =>
        new Promise((_resolve, reject) =>
          abortSignal.addEventListener("abort", () => {
            reason = abortSignal.reason;
            reject(abortSignal.reason);
          }),
        ),
      { ...quick, visibilityTimeoutInSeconds: 60 },
    );
    const events = record(consumer);
    await consumer.start();
    await events.next("received");
    await consumer.stop({ gracePeriodInMs: 100 });
    expect(isConsumerStoppedError(reason)).toBe(true);
    expect(events.of("failed")).toMatchObject([{ willRetry: true, retryInSeconds: 0 }]);
    // Visible again now, not after the 60 s visibility timeout.
    const [again] = (await queue.receiveMessages()).receivedMessageItems;
    expect(again?.messageText).toBe("stubborn");
    expect(again?.dequeueCount).toBe(2);
  });

  it("backs off between empty receives with growing random delays, and starts over once a message arrives", async () => {
    const { queue } = await newQueue();
    const consumer = new QueueConsumer(queue, async () => undefined, {
      ...quick,
      pollingBackoff: exponentialBackoff({ deltaInMs: 10, minInMs: 0, maxInMs: 150 }),
    });
    const empties: QueueConsumerEvents["empty"][] = [];
    consumer.on("empty", (e) => empties.push(e));
    let atReceive = -1;
    consumer.on("received", () => (atReceive = empties.length));
    const events = record(consumer);
    await consumer.start();
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const before = [...empties];
    await queue.sendMessage("wake up");
    await events.next("processed");
    await new Promise((resolve) => setTimeout(resolve, 200));
    await consumer.stop();

    expect(before.map((e) => e.emptyReceives).slice(0, 4)).toEqual([1, 2, 3, 4]);
    // 10 ms ±20% × (2^x − 1), capped at 150 ms.
    expect(before[0]!.delayInMs).toBeGreaterThanOrEqual(8);
    expect(before[0]!.delayInMs).toBeLessThanOrEqual(12);
    expect(before[2]!.delayInMs).toBeGreaterThanOrEqual(56);
    expect(before[2]!.delayInMs).toBeLessThanOrEqual(84);
    expect(Math.max(...before.map((e) => e.delayInMs))).toBeLessThanOrEqual(150);
    // The first empty receive after the message starts the backoff over.
    expect(before.length).toBeGreaterThan(4);
    expect(empties[atReceive]?.emptyReceives).toBe(1);
    expect(empties[atReceive - 1]?.emptyReceives).toBeGreaterThan(4);
  });

  it("never runs more than `concurrency` handlers at once, and runs them in parallel", async () => {
    const { queue } = await newQueue();
    await Promise.all(Array.from({ length: 40 }, (_, i) => queue.sendMessage(`m${i}`)));
    let running = 0;
    let most = 0;
    const consumer = new QueueConsumer(
      queue,
      async () => {
        running += 1;
        most = Math.max(most, running);
        await new Promise((resolve) => setTimeout(resolve, 30));
        running -= 1;
      },
      { ...quick, batchSize: 32, concurrency: 5, newBatchThreshold: 2 },
    );
    const events = record(consumer);
    await consumer.start();
    await events.next("processed", 40);
    await consumer.stop();
    expect(most).toBeLessThanOrEqual(5);
    expect(most).toBeGreaterThan(1);
  });

  it("frees a handler slot when its handler returns: the next receive asks for a full batch while the deletes are in flight", async () => {
    const { queue } = await newQueue();
    await Promise.all(Array.from({ length: 16 }, (_, i) => queue.sendMessage(`m${i}`)));
    const asked: number[] = [];
    let deleting = 0;
    let receivedWhileDeleting = 0;
    const receive = queue.receiveMessages.bind(queue);
    const remove = queue.deleteMessage.bind(queue);
    queue.receiveMessages = (options) => {
      asked.push(options?.numberOfMessages ?? 1);
      if (deleting > 0) receivedWhileDeleting += 1;
      return receive(options);
    };
    queue.deleteMessage = async (...args) => {
      deleting += 1;
      try {
        return await remove(...args);
      } finally {
        deleting -= 1;
      }
    };
    const consumer = new QueueConsumer(queue, async () => undefined, { ...quick, batchSize: 4, concurrency: 4 });
    const events = record(consumer);
    await consumer.start();
    await events.next("processed", 16);
    await consumer.stop();
    // Four receives of four, as a raw receive + delete loop makes, not eight of two.
    expect(asked.slice(0, 4)).toEqual([4, 4, 4, 4]);
    expect(receivedWhileDeleting).toBeGreaterThan(0);
    expect(await peekCount(queue)).toBe(0);
  });

  it("with an idempotency store, runs the handler once per key and settles duplicates with the stored result", async () => {
    const { queue } = await newQueue();
    const store = new MemoryIdempotencyStore();
    await queue.sendMessage(JSON.stringify({ orderId: "o-1" }));
    const runs: string[] = [];
    const consumer = new QueueConsumer(
      queue,
      async (order: { orderId: string }, { idempotency }) => {
        runs.push(order.orderId);
        expect(idempotency).toMatchObject({ key: "o-1", partitionKey: "o-1" });
        return { receipt: `r-${order.orderId}` };
      },
      { ...quick, codec: jsonCodec<{ orderId: string }>(), idempotency: { store, key: (order) => order.orderId } },
    );
    const events = record(consumer);
    await consumer.start();
    await events.next("processed");
    await queue.sendMessage(JSON.stringify({ orderId: "o-1" }));
    const [duplicate] = await events.next("duplicate");
    await consumer.stop();
    expect(runs).toEqual(["o-1"]);
    expect(duplicate).toMatchObject({ key: "o-1", result: { receipt: "r-o-1" } });
    expect(store.inspect("o-1")).toMatchObject({ status: "done", result: { receipt: "r-o-1" } });
    expect(await peekCount(queue)).toBe(0);
  });

  it("puts a duplicate back while its key is being processed elsewhere, then settles it as a duplicate", async () => {
    const { queue } = await newQueue();
    const store = new MemoryIdempotencyStore();
    await queue.sendMessage("same-key");
    await queue.sendMessage("same-key");
    let runs = 0;
    const consumer = new QueueConsumer(
      queue,
      async () => {
        runs += 1;
        await new Promise((resolve) => setTimeout(resolve, 500));
      },
      { ...quick, visibilityTimeoutInSeconds: 2, idempotency: { store, key: (body) => body } },
    );
    const events = record(consumer);
    await consumer.start();
    const [deferred] = await events.next("deferred");
    await events.next("duplicate");
    await consumer.stop();
    expect(runs).toBe(1);
    expect(deferred!.waitInMs).toBeGreaterThan(0);
    expect(deferred!.owner).toBe(consumer.consumerId);
  });

  it("keyed by message id: when a redelivery overtakes a slow first delivery, only the redelivery's effects are written", async () => {
    const { queue } = await newQueue();
    const inbox = tableClient(uniqueName("inbox"));
    await inbox.createTable();
    await queue.sendMessage("pay once");
    let secondDone!: () => void;
    const secondProcessed = new Promise<void>((resolve) => (secondDone = resolve));
    const consumer = new QueueConsumer<string, TransactionAction>(
      queue,
      async (_body, { message, popReceipt, idempotency, addEffects }) => {
        if (message.dequeueCount === 1) {
          // This delivery stalls: the message becomes visible again and is received a second time.
          await queue.updateMessage(message.messageId, popReceipt, undefined, 0);
          await secondProcessed;
        }
        addEffects(["create", { partitionKey: idempotency!.partitionKey, rowKey: `effect-${message.dequeueCount}` }]);
      },
      { ...quick, concurrency: 2, idempotency: { store: new TableIdempotencyStore(inbox) } },
    );
    const events = record(consumer);
    consumer.on("processed", () => secondDone());
    await consumer.start();
    const [processed] = await events.next("processed");
    const [lost] = await events.next("ownershipLost");
    await consumer.stop();

    expect(processed!.message.dequeueCount).toBe(2);
    expect(lost!.message.dequeueCount).toBe(1);
    expect(isMessageOwnershipLostError(lost!.error)).toBe(true);
    const rows = new Map<string, Record<string, unknown>>();
    for await (const e of inbox.listEntities()) rows.set(e.rowKey!, e);
    expect([...rows.keys()].sort()).toEqual(["effect-2", `inbox:${processed!.message.messageId}`]);
    expect(rows.get(`inbox:${processed!.message.messageId}`)).toMatchObject({ Status: "done", DequeueCount: 2 });
    expect(await peekCount(queue)).toBe(0);
    await inbox.deleteTable();
  });

  it("reports a failing receive as an error and keeps polling with backoff [Azurite only]", async () => {
    const { queue } = await newQueue();
    const { proxy, connectionString } = await faultProxyFor("queue");
    try {
      const flaky = queueService(connectionString, { retryOptions: { maxTries: 1 } }).getQueueClient(queue.name);
      proxy.addRule({ method: "GET", path: /\/messages/, times: 2, action: { type: "serverBusy" } });
      const consumer = new QueueConsumer(flaky, async () => undefined, { ...quick });
      const events = record(consumer);
      await consumer.start();
      const errors = await events.next("error", 2);
      await queue.sendMessage("after the errors");
      await events.next("processed");
      await consumer.stop();
      expect(errors[0]).toMatchObject({ operation: "receive messages", error: { statusCode: 503 } });
      expect(consumer.status).toBe("stopped");
    } finally {
      await proxy.close();
    }
  });

  it("stops when its abortSignal is aborted", async () => {
    const { queue } = await newQueue();
    const controller = new AbortController();
    const consumer = new QueueConsumer(queue, async () => undefined, { ...quick, abortSignal: controller.signal });
    const events = record(consumer);
    await consumer.start();
    controller.abort();
    await events.next("stopped");
    expect(consumer.status).toBe("stopped");
  });

  it("addEffects() without an idempotency store fails the attempt with a clear error", async () => {
    const { queue } = await newQueue();
    await queue.sendMessage("x");
    const consumer = new QueueConsumer<string, () => void>(
      queue,
      async (_body, { addEffects }) => addEffects(() => undefined),
      {
        ...quick,
        maxDequeueCount: 1,
      },
    );
    const events = record(consumer);
    await consumer.start();
    const [failed] = await events.next("failed");
    await consumer.stop();
    expect(String(failed!.error)).toMatch(/needs an idempotency store/);
  });
});
