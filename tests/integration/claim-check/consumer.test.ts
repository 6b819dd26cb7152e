/**
 * `QueueConsumer` with a `claimCheck` (issue 25): handlers see the payload; the payload is deleted
 * after its message is processed, kept (and named in the poison envelope) when it is poisoned; the
 * key a message carries is the default idempotency key; a payload that is gone is a settled copy
 * when the store says the key is done, and poisoned otherwise.
 */
import type { ContainerClient } from "@azure/storage-blob";
import type { QueueClient } from "@azure/storage-queue";
import type { TableClient } from "@azure/data-tables";
import {
  ClaimCheck,
  exponentialBackoff,
  fixedBackoff,
  MemoryIdempotencyStore,
  parsePoisonMessage,
  QueueConsumer,
  TableIdempotencyStore,
  type QueueConsumerEvents,
  type QueueConsumerOptions,
} from "../../../src/index.js";
import { blobService, queueService, tableClient, uniqueName } from "../../support/storage.js";
import { describeStorage } from "../../support/target.js";

const quick = {
  visibilityTimeoutInSeconds: 5,
  pollingBackoff: exponentialBackoff({ deltaInMs: 10, minInMs: 0, maxInMs: 100 }),
  retryBackoff: fixedBackoff({ delayInMs: 0 }),
} satisfies QueueConsumerOptions<string>;

let container: ContainerClient;
let claimCheck: ClaimCheck;
let inbox: TableClient;
const queues: QueueClient[] = [];

beforeAll(async () => {
  container = blobService().getContainerClient(uniqueName("ccconsumer"));
  claimCheck = new ClaimCheck(container);
  inbox = tableClient(uniqueName("ccinbox"));
  await inbox.createTable();
});
afterAll(async () => {
  await Promise.all(queues.map((q) => q.deleteIfExists()));
  await container.deleteIfExists();
  await inbox.deleteTable();
});

async function newQueue(): Promise<QueueClient> {
  const queue = queueService().getQueueClient(uniqueName("ccconsumer"));
  queues.push(queue, queueService().getQueueClient(`${queue.name}-poison`));
  await queue.create();
  return queue;
}

const exists = (name: string) => container.getBlobClient(name).exists();

/** Runs a consumer until `until` has been seen `count` times, then stops it; every event, in order. */
async function consume(
  queue: QueueClient,
  handler: (body: string) => Promise<unknown>,
  options: QueueConsumerOptions<string>,
  until: keyof QueueConsumerEvents,
  count = 1,
) {
  const consumer = new QueueConsumer(queue, handler, { ...quick, claimCheck, ...options });
  const events: { name: string; payload: unknown }[] = [];
  let seen = 0;
  const done = new Promise<void>((resolve) => {
    for (const name of ["processed", "duplicate", "failed", "poisoned", "error"] as const)
      consumer.on(name, (payload) => {
        events.push({ name, payload });
        if (name === until && ++seen === count) resolve();
      });
  });
  await consumer.start();
  await done;
  await consumer.stop();
  return events;
}

describeStorage("QueueConsumer with a claim-check", () => {
  it("hands the handler the payload, and deletes it after the message", async () => {
    const queue = await newQueue();
    const text = "payload ".repeat(20_000);
    const sent = await claimCheck.sendMessage(queue, text);
    const bodies: string[] = [];
    const events = await consume(queue, async (body) => void bodies.push(body), {}, "processed");
    expect(bodies).toEqual([text]);
    expect(events.map((e) => e.name)).toEqual(["processed"]);
    expect(await exists(sent.payloadBlob!)).toBe(false);
    expect((await queue.getProperties()).approximateMessagesCount).toBe(0);
  });

  it("keeps a poisoned message's payload, and the poison envelope names it", async () => {
    const queue = await newQueue();
    const sent = await claimCheck.sendMessage(queue, "bad ".repeat(20_000));
    await consume(
      queue,
      async () => {
        throw new Error("always fails");
      },
      { maxDequeueCount: 1 },
      "poisoned",
    );
    const [copy] = (await queueService().getQueueClient(`${queue.name}-poison`).peekMessages()).peekedMessageItems;
    const envelope = parsePoisonMessage(copy!.messageText)!;
    expect(envelope.payloadBlob).toBe(sent.payloadBlob);
    expect((await claimCheck.resolve(envelope.messageText)).messageText).toBe("bad ".repeat(20_000));
    const properties = await container.getBlobClient(sent.payloadBlob!).getProperties();
    expect(properties.metadata?.poisonedon).toBeDefined();
  });

  it("the key a message carries is the default idempotency key: a second send of it is a duplicate", async () => {
    const queue = await newQueue();
    const store = new MemoryIdempotencyStore();
    await claimCheck.sendMessage(queue, "small", { idempotencyKey: "order-7" });
    await claimCheck.sendMessage(queue, "x".repeat(70_000), { idempotencyKey: "order-7" }); // the same message, sent again
    let runs = 0;
    const events = await consume(queue, async () => void (runs += 1), { idempotency: { store } }, "duplicate");
    expect(runs).toBe(1);
    expect(events.find((e) => e.name === "duplicate")?.payload).toMatchObject({ key: "order-7" });
    expect(await payloadCount()).toBe(0); // the copy's payload too, once it was deleted as a duplicate
  });

  it("a copy whose payload is gone is deleted as a duplicate when its key is done (Table store)", async () => {
    const queue = await newQueue();
    const sent = await claimCheck.sendMessage(queue, "y".repeat(70_000));
    const [item] = (await queue.receiveMessages()).receivedMessageItems;
    await queue.sendMessage(item!.messageText); // a copy, as the SDK's retry of a lost answer would add
    await queue.updateMessage(item!.messageId, item!.popReceipt, undefined, 0);
    let runs = 0;
    const events = await consume(
      queue,
      async () => void (runs += 1),
      { idempotency: { store: new TableIdempotencyStore(inbox) }, batchSize: 1, concurrency: 1, newBatchThreshold: 0 },
      "duplicate",
    );
    expect(runs).toBe(1);
    expect(events.map((e) => e.name)).toEqual(["processed", "duplicate"]);
    expect(events[1]!.payload).toMatchObject({ key: sent.payloadBlob });
    expect((await queue.getProperties()).approximateMessagesCount).toBe(0);
  });

  it("a payload lost while its key is not done poisons the message, without running the handler", async () => {
    const queue = await newQueue();
    const sent = await claimCheck.sendMessage(queue, "z".repeat(70_000));
    await container.getBlobClient(sent.payloadBlob!).delete();
    let runs = 0;
    for (const store of [new MemoryIdempotencyStore(), undefined]) {
      if (!store)
        await claimCheck
          .sendMessage(queue, "w".repeat(70_000))
          .then((s) => container.getBlobClient(s.payloadBlob!).delete());
      const events = await consume(
        queue,
        async () => void (runs += 1),
        store ? { idempotency: { store } } : {},
        "poisoned",
      );
      expect(events.find((e) => e.name === "poisoned")?.payload).toMatchObject({
        reason: expect.stringMatching(/payload (.* )?(is gone|is not in container)/) as unknown,
      });
    }
    expect(runs).toBe(0);
  });

  it("refuses a claim-check whose sweep grace is not longer than the visibility timeout", () => {
    const queue = queueService().getQueueClient("unused");
    expect(
      () =>
        new QueueConsumer(queue, async () => undefined, {
          claimCheck: new ClaimCheck(container, { sweepGraceInMs: 30_000 }),
          visibilityTimeoutInSeconds: 30,
        }),
    ).toThrow(/`sweepGraceInMs` \(30000\) must be longer than `visibilityTimeoutInSeconds` \(30 s\)/);
    expect(() => new QueueConsumer(queue, async () => undefined, { claimCheck: {} as ClaimCheck })).toThrow(TypeError);
  });
});

async function payloadCount(): Promise<number> {
  let n = 0;
  for await (const blob of container.listBlobsFlat({ includeMetadata: true }))
    if (blob.metadata?.poisonedon === undefined) n += 1;
  return n;
}
