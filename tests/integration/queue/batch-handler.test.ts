/**
 * The batch handler: decoded messages of one receive together, an outcome per message, each
 * message settled by its own outcome (retries and poison as for one message); with the Table store,
 * the done marks and effects of messages that share a partition commit in shared transactions, and
 * a claim lost in one of them fails alone.
 */
import type { TransactionAction } from "@azure/data-tables";
import { isHandlerTimeoutError, jsonCodec, QueueConsumer } from "../../../src/queue/index.js";
import {
  MemoryIdempotencyStore,
  TableIdempotencyStore,
  type ClaimRequest,
  type IdempotencyClaim,
  type MemoryEffect,
} from "../../../src/idempotency/index.js";
import { faultProxyFor, tableClient } from "../../support/storage.js";
import { newQueue, peekCount, quick, record, newInbox as newInboxTable } from "./consumer-support.js";

const newInbox = () => newInboxTable("batchinbox");

interface Job {
  id: string;
  group?: string;
  fail?: boolean;
}

async function send(queue: Awaited<ReturnType<typeof newQueue>>["queue"], jobs: readonly Job[]) {
  for (const job of jobs) await queue.sendMessage(JSON.stringify(job));
}

describe("QueueConsumer.withBatchHandler", () => {
  it("hands over the messages of a receive at once and settles each by its own outcome", async () => {
    const { queue, poison } = await newQueue("batch");
    await send(queue, [
      ...Array.from({ length: 8 }, (_, i) => ({ id: `ok-${i}` })),
      { id: "bad-1", fail: true },
      { id: "bad-2", fail: true },
    ]);
    const sizes: number[] = [];
    const consumer = QueueConsumer.withBatchHandler<Job>(
      queue,
      async (messages) => {
        sizes.push(messages.length);
        return messages.map(({ body }) =>
          body.fail
            ? { status: "failed", error: new Error(`${body.id} is bad`) }
            : { status: "processed", result: body.id },
        );
      },
      { ...quick, codec: jsonCodec(), batchSize: 16, maxDequeueCount: 2 },
    );
    const events = record(consumer);
    await consumer.start();
    await events.next("processed", 8);
    await events.next("poisoned", 2);
    await consumer.stop();

    expect(sizes[0]).toBe(10);
    expect(
      events
        .of("processed")
        .map((p) => p.result)
        .sort(),
    ).toEqual(Array.from({ length: 8 }, (_, i) => `ok-${i}`));
    expect(events.of("failed").map((f) => [String(f.error), f.willRetry])).toEqual(
      expect.arrayContaining([
        ["Error: bad-1 is bad", true],
        ["Error: bad-1 is bad", false],
      ]),
    );
    expect(await peekCount(queue)).toBe(0);
    expect(await peekCount(poison)).toBe(2);
  });

  it("fails every message when the handler throws, or answers with the wrong number of outcomes", async () => {
    const { queue } = await newQueue("batch");
    await send(queue, [{ id: "a" }, { id: "b" }, { id: "c" }]);
    let calls = 0;
    const consumer = QueueConsumer.withBatchHandler<Job>(
      queue,
      async (messages) => {
        calls += 1;
        if (calls === 1) throw new Error("the database is down");
        if (calls === 2) return []; // no outcome for its messages
        return messages.map(() => ({ status: "processed" as const }));
      },
      { ...quick, codec: jsonCodec(), batchSize: 16 },
    );
    const events = record(consumer);
    await consumer.start();
    await events.next("processed", 3);
    await consumer.stop();
    const errors = events.of("failed").map((f) => String(f.error));
    expect(errors.filter((e) => e.includes("the database is down"))).toHaveLength(3);
    expect(
      errors.filter((e) => /TypeError: The batch handler resolved with 0 outcomes for \d messages/.test(e)).length,
    ).toBeGreaterThan(0);
  });

  it("runs a message whose key is busy (the same key twice in one receive) later, on its own, as a duplicate", async () => {
    const { queue } = await newQueue("batch");
    await send(queue, [{ id: "k1" }, { id: "k2" }, { id: "k1" }]);
    const store = new MemoryIdempotencyStore();
    const effects: string[] = [];
    const consumer = QueueConsumer.withBatchHandler<Job, MemoryEffect>(
      queue,
      async (messages) => {
        for (const { body, addEffects } of messages) addEffects(() => effects.push(body.id));
        await new Promise((resolve) => setTimeout(resolve, 200));
      },
      { ...quick, codec: jsonCodec(), batchSize: 16, idempotency: { store, key: (job) => job.id } },
    );
    const events = record(consumer);
    await consumer.start();
    await events.next("duplicate");
    await events.next("processed", 2);
    await consumer.stop();
    expect(events.of("deferred").map((d) => d.key)).toEqual(["k1"]);
    expect(effects.sort()).toEqual(["k1", "k2"]);
  });

  it("aborts every message of a batch that runs out of time, and counts it as a failure of each", async () => {
    const { queue } = await newQueue("batch");
    await send(queue, [{ id: "x" }, { id: "y" }]);
    const reasons: unknown[] = [];
    const consumer = QueueConsumer.withBatchHandler<Job>(
      queue,
      async (messages, { abortSignal }) => {
        if (messages[0]!.message.dequeueCount > 1) return;
        await new Promise((_, reject) =>
          abortSignal.addEventListener("abort", () => reject(abortSignal.reason as Error), { once: true }),
        );
        for (const m of messages) reasons.push(m.abortSignal.reason);
      },
      { ...quick, codec: jsonCodec(), batchSize: 16, handlerTimeoutInMs: 200 },
    );
    const events = record(consumer);
    await consumer.start();
    await events.next("processed", 2);
    await consumer.stop();
    const failed = events.of("failed");
    expect(failed).toHaveLength(2);
    expect(failed.every((f) => isHandlerTimeoutError(f.error) && f.error.messageIds.length === 2)).toBe(true);
    expect(reasons.every(isHandlerTimeoutError)).toBe(true);
  });

  it("commits the done marks and effects of messages that share a partition in shared transactions (Table store)", async () => {
    const { queue } = await newQueue("batch");
    const inbox = await newInbox();
    const jobs = Array.from({ length: 24 }, (_, i) => ({ id: `job-${i}`, group: `group-${i % 2}` }));
    await send(queue, jobs);
    const { proxy, connectionString } = await faultProxyFor("table");
    try {
      const consumer = QueueConsumer.withBatchHandler<Job, TransactionAction>(
        queue,
        async (messages) => {
          for (const { body, idempotency, addEffects } of messages) {
            addEffects(["create", { partitionKey: idempotency!.partitionKey, rowKey: `effect-${body.id}` }]);
          }
        },
        {
          ...quick,
          codec: jsonCodec(),
          batchSize: 32,
          idempotency: {
            store: new TableIdempotencyStore(tableClient(inbox.tableName, connectionString)),
            key: (job) => job.id,
            partitionKey: (job) => job.group!,
            purge: false,
          },
        },
      );
      const events = record(consumer);
      await consumer.start();
      await events.next("processed", jobs.length);
      await consumer.stop();
    } finally {
      await proxy.close();
    }
    const rows = new Map<string, { Status?: string }>();
    for await (const row of inbox.listEntities<{ Status?: string }>()) rows.set(row.rowKey!, row);
    for (const job of jobs) {
      expect(rows.get(`effect-${job.id}`)).toBeDefined();
      expect(rows.get(`inbox:${job.id}`)).toMatchObject({ Status: "done" });
    }
    // Claims are one request each; the done marks of each receive's batch share one transaction per group.
    const batches = proxy.requests.filter((r) => r.method === "POST" && r.path.includes("$batch"));
    expect(batches.length).toBeLessThanOrEqual(6);
    expect(batches.length).toBeGreaterThanOrEqual(2);
  });
});

describe("TableIdempotencyStore.completeMany", () => {
  const request = (key: string, overrides: Partial<ClaimRequest> = {}): ClaimRequest => ({
    key,
    partitionKey: "shared",
    owner: "consumer-a",
    messageId: `m-${key}`,
    dequeueCount: 1,
    ttlInMs: 30_000,
    ...overrides,
  });
  async function claimed(store: TableIdempotencyStore, r: ClaimRequest): Promise<IdempotencyClaim> {
    const outcome = await store.claim(r);
    if (outcome.status !== "claimed") throw new Error(`expected a claim of ${r.key}`);
    return outcome.claim;
  }
  const effect = (claim: IdempotencyClaim, n = 0): TransactionAction => [
    "create",
    { partitionKey: claim.partitionKey, rowKey: `effect-${claim.key}-${n}` },
  ];

  it("packs claims of one partition into transactions of at most 100 operations, each claim whole", async () => {
    const inbox = await newInbox();
    const { proxy, connectionString } = await faultProxyFor("table");
    try {
      const store = new TableIdempotencyStore(tableClient(inbox.tableName, connectionString));
      const claims = await Promise.all(Array.from({ length: 40 }, (_, i) => claimed(store, request(`k${i}`))));
      proxy.clearLog();
      const committed = await store.completeMany(
        claims.map((claim) => ({ claim, result: claim.key, effects: [effect(claim, 0), effect(claim, 1)] })),
      );
      expect(committed).toEqual(claims.map(() => true));
      // 40 claims x 3 operations: 33 claims (99 operations), then 7.
      expect(proxy.requests.map((r) => r.method)).toEqual(["POST", "POST"]);
    } finally {
      await proxy.close();
    }
    let effects = 0;
    for await (const row of inbox.listEntities({ queryOptions: { filter: "RowKey ge 'effect-'" } })) {
      if (row.rowKey!.startsWith("effect-")) effects += 1;
    }
    expect(effects).toBe(80);
  });

  it("leaves a transaction with one lost claim to be completed one by one: the lost claim fails alone", async () => {
    const inbox = await newInbox();
    const store = new TableIdempotencyStore(inbox);
    const [a, b, c] = await Promise.all(["a", "b", "c"].map((key) => claimed(store, request(key))));
    // b's holder lost it: another delivery of the same message took the key over.
    await claimed(store, request("b", { owner: "consumer-b", dequeueCount: 2 }));
    const entries = [a!, b!, c!].map((claim) => ({ claim, result: claim.key, effects: [effect(claim)] }));
    expect(await store.completeMany(entries)).toEqual([false, false, false]);
    await store.complete(a!, entries[0]);
    await expect(store.complete(b!, entries[1])).rejects.toThrow(/another consumer took it over/);
    await store.complete(c!, entries[2]);
    const rows: string[] = [];
    for await (const row of inbox.listEntities<{ Status?: string }>()) rows.push(`${row.rowKey}:${row.Status ?? ""}`);
    expect(rows.sort()).toEqual(["effect-a-0:", "effect-c-0:", "inbox:a:done", "inbox:b:claimed", "inbox:c:done"]);
  });
});
