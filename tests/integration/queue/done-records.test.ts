/**
 * What a key's done record decides, against Azurite with the Table store (issue 21):
 * - defect 3 (reproduction r16): a message whose key is done is a duplicate however often it was
 *   received; past `maxDequeueCount` it is deleted, never poisoned. Only the store's answer "not
 *   done" poisons it; a claim that gets no answer leaves it for a later reception.
 * - defect 5 (reproduction r19): a handler result too large for the done mark does not undo the
 *   work: the key is marked done without it (event `resultNotKept`), the handler runs once.
 */
import type { TransactionAction } from "@azure/data-tables";
import { fixedBackoff } from "../../../src/retry/index.js";
import { jsonCodec, QueueConsumer, type QueueConsumerEvents } from "../../../src/queue/index.js";
import { TableIdempotencyStore } from "../../../src/idempotency/index.js";
import { faultProxyFor, queueService, quickSdkRetries, tableClient } from "../../support/storage.js";
import { newInbox, newQueue, peekCount, quick, record } from "./consumer-support.js";

/** Receives the message `times` times without settling it (as consumers that died would), leaving it visible. */
async function receiveUnsettled(queue: Awaited<ReturnType<typeof newQueue>>["queue"], times: number) {
  for (let i = 0; i < times; i++) {
    const [m] = (await queue.receiveMessages({ visibilityTimeout: 30 })).receivedMessageItems;
    await queue.updateMessage(m!.messageId, m!.popReceipt, undefined, 0);
  }
}

/** The key `key` done in `store`, with `result`, as a consumer that processed it and then lost its delete leaves it. */
async function markDone(store: TableIdempotencyStore, key: string, result: unknown) {
  const outcome = await store.claim({ key, owner: "earlier", messageId: "m", dequeueCount: 1, ttlInMs: 30_000 });
  if (outcome.status !== "claimed") throw new Error(`could not claim ${key}: ${outcome.status}`);
  await store.complete(outcome.claim, { result });
}

/** Resolves once `check()` holds (checked every 50 ms), or rejects after 20 s. */
async function until(check: () => boolean, timeoutInMs = 20_000) {
  const deadline = Date.now() + timeoutInMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutInMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const poisonedOrNot = async (poison: Awaited<ReturnType<typeof newQueue>>["poison"]) =>
  (await poison.exists()) ? peekCount(poison) : 0;

describe("a done key past maxDequeueCount (defect 3)", () => {
  it("a message completed on its last reception whose delete was lost is deleted as a duplicate, not poisoned", async () => {
    const { queue, poison } = await newQueue("donepast");
    const inbox = await newInbox();
    await queue.sendMessage("order-1");
    const { proxy, connectionString } = await faultProxyFor("queue");
    await using _ = proxy;
    proxy.addRule({ method: "DELETE", path: /\/messages\//, action: { type: "reset" } });
    let runs = 0;
    const make = (client: typeof queue) =>
      new QueueConsumer<string, TransactionAction>(
        client,
        async (_body, { addEffects, idempotency }) => {
          runs += 1;
          addEffects(["upsert", { partitionKey: idempotency!.partitionKey, rowKey: "charge", amount: 5 }]);
          return "charged";
        },
        {
          ...quick,
          visibilityTimeoutInSeconds: 2,
          maxDequeueCount: 1,
          gracePeriodInMs: 0,
          idempotency: { store: new TableIdempotencyStore(inbox) },
        },
      );
    // The first consumer processes it on its only allowed reception; every delete is cut off.
    await using first = make(
      queueService(connectionString, { retryOptions: quickSdkRetries.storage }).getQueueClient(queue.name),
    );
    const firstEvents = record(first);
    await first.start();
    await until(() => firstEvents.of("error").some((e) => e.operation === "delete the message"));
    await first.stop();
    expect(runs).toBe(1);

    // It comes back (past the limit) to another consumer.
    await using second = make(queue);
    const events = record(second);
    await second.start();
    const [duplicate] = await events.next("duplicate");
    await second.stop();
    expect(duplicate!.message.dequeueCount).toBeGreaterThan(1); // past maxDequeueCount
    expect(duplicate!.result).toBe("charged");
    expect(events.of("poisoned")).toEqual([]);
    expect(runs).toBe(1);
    expect(await peekCount(queue)).toBe(0);
    expect(await poisonedOrNot(poison)).toBe(0);
  });

  it("a claim that gets no answer does not poison it: it is retried, and the done record then settles it", async () => {
    const { queue, poison } = await newQueue("donenoanswer");
    const inbox = await newInbox();
    const store = new TableIdempotencyStore(inbox);
    await markDone(store, "order-2", "charged");
    await queue.sendMessage("order-2");
    await receiveUnsettled(queue, 1);
    const { proxy, connectionString } = await faultProxyFor("table");
    await using _ = proxy;
    let runs = 0;
    await using consumer = new QueueConsumer(queue, async () => void (runs += 1), {
      ...quick,
      maxDequeueCount: 1,
      idempotency: {
        store: new TableIdempotencyStore(
          tableClient(inbox.tableName, connectionString, { retryOptions: { maxRetries: 0 } }),
        ),
        key: (body) => body,
      },
    });
    const events = record(consumer);
    // Every try of the first claim is cut off before it reaches the service.
    proxy.addRule({ method: "POST", action: { type: "reset" }, times: 3 });
    await consumer.start();
    const [failed] = await events.next("failed");
    const [duplicate] = await events.next("duplicate");
    await consumer.stop();
    expect(failed).toMatchObject({ willRetry: true, message: { dequeueCount: 2 } });
    expect(duplicate).toMatchObject({ key: "order-2", result: "charged", message: { dequeueCount: 3 } });
    expect(events.of("poisoned")).toEqual([]);
    expect(runs).toBe(0);
    expect(await poisonedOrNot(poison)).toBe(0);
  });

  it("a key that is not done is still poisoned past the limit, without running the handler, and its claim released", async () => {
    const { queue, poison } = await newQueue("notdonepast");
    const inbox = await newInbox();
    await queue.sendMessage("crashes its consumers");
    await receiveUnsettled(queue, 2);
    let runs = 0;
    await using consumer = new QueueConsumer(queue, async () => void (runs += 1), {
      ...quick,
      maxDequeueCount: 2,
      idempotency: { store: new TableIdempotencyStore(inbox), key: (body) => body },
    });
    const events = record(consumer);
    await consumer.start();
    const [poisoned] = await events.next("poisoned");
    await consumer.stop();
    expect(runs).toBe(0);
    expect(poisoned!.message.dequeueCount).toBe(3);
    expect(poisoned!.reason).toMatch(/received 3 times .* without being settled/);
    expect(await peekCount(poison)).toBe(1);
    const rows = [];
    for await (const row of inbox.listEntities()) rows.push(row);
    expect(rows).toEqual([]); // the claim made to ask was given back
  });
});

describe("a result too large for the done mark (defect 5)", () => {
  const large = { report: "x".repeat(40_000) };

  it("marks the key done without the result, says so, and never runs the handler again", async () => {
    const { queue, poison } = await newQueue("toolarge");
    const inbox = await newInbox();
    await queue.sendMessage("report-1");
    let runs = 0;
    await using consumer = new QueueConsumer(
      queue,
      async () => {
        runs += 1;
        return large;
      },
      {
        ...quick,
        maxDequeueCount: 3,
        idempotency: { store: new TableIdempotencyStore(inbox), key: (body) => body },
      },
    );
    const events = record(consumer);
    const notKept: QueueConsumerEvents["resultNotKept"][] = [];
    consumer.on("resultNotKept", (payload) => notKept.push(payload));
    await consumer.start();
    const [processed] = await events.next("processed");
    await queue.sendMessage("report-1"); // a duplicate of it
    const [duplicate] = await events.next("duplicate");
    await consumer.stop();
    expect(runs).toBe(1);
    expect(processed!.result).toBe(large);
    expect(notKept).toHaveLength(1);
    expect(notKept[0]).toMatchObject({ key: "report-1", message: { messageId: processed!.message.messageId } });
    expect(notKept[0]!.error).toBeInstanceOf(RangeError);
    expect(duplicate).toMatchObject({ key: "report-1", result: undefined });
    expect(events.of("failed")).toEqual([]);
    expect(await poisonedOrNot(poison)).toBe(0);
    expect(await peekCount(queue)).toBe(0);
  });

  it("in a batch, a result that cannot be kept (too large, or not JSON) does not fail the others or itself", async () => {
    const { queue } = await newQueue("toolargebatch");
    const inbox = await newInbox();
    for (const id of ["a", "big", "cyclic"]) await queue.sendMessage(JSON.stringify({ id }));
    const runs: string[] = [];
    await using consumer = QueueConsumer.withBatchHandler<{ id: string }>(
      queue,
      async (messages) =>
        messages.map(({ body }) => {
          runs.push(body.id);
          const cyclic: Record<string, unknown> = {};
          cyclic["self"] = cyclic;
          return { status: "processed", result: body.id === "big" ? large : body.id === "cyclic" ? cyclic : "ok" };
        }),
      {
        ...quick,
        codec: jsonCodec(),
        batchSize: 8,
        retryBackoff: fixedBackoff({ delayInMs: 0 }),
        idempotency: { store: new TableIdempotencyStore(inbox), key: (body) => body.id, partitionKey: () => "p" },
      },
    );
    const events = record(consumer);
    const notKept: string[] = [];
    consumer.on("resultNotKept", ({ key, error }) => notKept.push(`${key}: ${(error as Error).name}`));
    await consumer.start();
    await events.next("processed", 3);
    await consumer.stop();
    expect(runs.sort()).toEqual(["a", "big", "cyclic"]);
    expect(notKept.sort()).toEqual(["big: RangeError", "cyclic: TypeError"]);
    expect(events.of("failed")).toEqual([]);
    const done = [];
    for await (const row of inbox.listEntities()) done.push(row["Status"]);
    expect(done).toEqual(["done", "done", "done"]);
  });
});
