/**
 * `idempotency.effects: "tables-only"` against Azurite with the Table store (issue 27): a first
 * delivery writes nothing before its handler; its effects and the insert of its done record commit
 * in one entity group transaction, and of several deliveries of one key (producers' duplicates, in
 * one consumer or in two) exactly one commits: the others' effects are discarded whole and their
 * messages deleted as duplicates. A transaction whose answer is lost is read back and recognised
 * as this delivery's (never sent again blind); a redelivery after a lost delete is claimed and
 * recognised as done without running the handler.
 *
 * Each delivery's effect is a row named after its message (`effect-<messageId>`), so that two
 * commits for one key would show as two rows.
 */
import type { TableClient, TransactionAction } from "@azure/data-tables";
import type { QueueClient } from "@azure/storage-queue";
import { QueueConsumer } from "../../../src/queue/index.js";
import { TableIdempotencyStore } from "../../../src/idempotency/index.js";
import type { FaultAction } from "../../../src/testing/index.js";
import { faultProxyFor, queueService, quickSdkRetries, tableClient } from "../../support/storage.js";
import { newInbox, newQueue, peekCount, quick, record } from "./consumer-support.js";

const BATCH = { method: "POST", path: /\$batch/ } as const;

/** Resolves once `check()` holds (checked every 50 ms), or rejects after 20 s. */
async function until(check: () => boolean | Promise<boolean>, timeoutInMs = 20_000) {
  const deadline = Date.now() + timeoutInMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutInMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The rows of one key's partition: its inbox record and the effect rows of the deliveries that committed. */
async function rowsOf(inbox: TableClient, key: string) {
  const rows = [];
  for await (const row of inbox.listEntities<Record<string, unknown>>({
    queryOptions: { filter: `PartitionKey eq '${key}'` },
  }))
    rows.push(row);
  return {
    record: rows.find((row) => row.rowKey!.startsWith("inbox:")),
    effects: rows.filter((row) => row.rowKey!.startsWith("effect-")),
  };
}

interface Seen {
  /** Per key: the inbox record's Status the handler saw when it started (undefined: none). */
  readonly statusAtStart: (string | undefined)[];
  runs: number;
}

function tablesOnlyConsumer(queue: QueueClient, inbox: TableClient, seen: Seen, workMs = 0, options = {}) {
  const store = new TableIdempotencyStore(inbox);
  return new QueueConsumer<string, TransactionAction>(
    queue,
    async (body, { message, idempotency, addEffects }) => {
      seen.runs += 1;
      const row = await tableClient(inbox.tableName)
        .getEntity<{ Status?: string }>(body, store.rowOf(body).rowKey)
        .catch(() => undefined);
      seen.statusAtStart.push(row?.Status);
      if (workMs > 0) await new Promise((resolve) => setTimeout(resolve, workMs));
      addEffects(["create", { partitionKey: idempotency!.partitionKey, rowKey: `effect-${message.messageId}` }]);
      return `charged by ${message.messageId}`;
    },
    {
      ...quick,
      concurrency: 8,
      gracePeriodInMs: 0,
      idempotency: { store, key: (body) => body, effects: "tables-only" },
      ...options,
    },
  );
}

describe('idempotency.effects "tables-only"', () => {
  it("producers' duplicates in one consumer: each key commits once, the others are deleted as duplicates", async () => {
    const { queue } = await newQueue("tonly");
    const inbox = await newInbox();
    const keys = Array.from({ length: 6 }, (_, i) => `order-${i}`);
    for (const key of keys) await Promise.all([queue.sendMessage(key), queue.sendMessage(key)]);
    const seen: Seen = { statusAtStart: [], runs: 0 };
    await using consumer = tablesOnlyConsumer(queue, inbox, seen, 200);
    const events = record(consumer);
    await consumer.start();
    await until(() => events.of("processed").length + events.of("duplicate").length === keys.length * 2);
    await consumer.stop();

    expect(events.of("processed")).toHaveLength(keys.length);
    expect(events.of("duplicate")).toHaveLength(keys.length);
    expect(events.of("failed")).toEqual([]);
    expect(events.of("ownershipLost")).toEqual([]);
    // No claim before any handler: the record was absent, or already done by the other delivery.
    expect(seen.statusAtStart.filter((status) => status === "claimed")).toEqual([]);
    for (const key of keys) {
      const { record: done, effects } = await rowsOf(inbox, key);
      expect(effects).toHaveLength(1);
      expect(done).toMatchObject({ Status: "done" });
      expect(done!.MessageId).toBe(effects[0]!.rowKey!.slice("effect-".length));
      // The duplicate is told the winner's result.
      const duplicate = events.of("duplicate").find((d) => d.key === key)!;
      expect(duplicate.result).toBe(`charged by ${String(done!.MessageId)}`);
    }
    expect(await peekCount(queue)).toBe(0);
  });

  it("concurrent deliveries of one key in two consumers commit once", async () => {
    const { queue } = await newQueue("tonlytwo");
    const inbox = await newInbox();
    const keys = Array.from({ length: 8 }, (_, i) => `order-${i}`);
    for (const key of keys) await Promise.all([queue.sendMessage(key), queue.sendMessage(key)]);
    const seen: Seen = { statusAtStart: [], runs: 0 };
    // batchSize 1: each consumer takes one message per receive, so the two spread the pairs between them.
    await using a = tablesOnlyConsumer(queue, inbox, seen, 300, { batchSize: 1 });
    await using b = tablesOnlyConsumer(queue, inbox, seen, 300, { batchSize: 1 });
    const ea = record(a);
    const eb = record(b);
    const settled = () =>
      [ea, eb].reduce((n, e) => n + e.of("processed").length + e.of("duplicate").length, 0) === keys.length * 2;
    await Promise.all([a.start(), b.start()]);
    await until(settled);
    await Promise.all([a.stop(), b.stop()]);

    expect(ea.of("processed").length + eb.of("processed").length).toBe(keys.length);
    expect(ea.of("duplicate").length + eb.of("duplicate").length).toBe(keys.length);
    expect([...ea.of("ownershipLost"), ...eb.of("ownershipLost")]).toEqual([]);
    expect(seen.runs).toBe(keys.length * 2); // every delivery ran its handler ...
    for (const key of keys) expect((await rowsOf(inbox, key)).effects).toHaveLength(1); // ... its effects applied once
    expect(await peekCount(queue)).toBe(0);
  });

  it("a duplicate arriving after the key is done runs, and its effects are discarded", async () => {
    const { queue } = await newQueue("tonlylate");
    const inbox = await newInbox();
    const seen: Seen = { statusAtStart: [], runs: 0 };
    await using consumer = tablesOnlyConsumer(queue, inbox, seen);
    const events = record(consumer);
    await consumer.start();
    const { messageId: first } = await queue.sendMessage("order-1");
    await events.next("processed");
    await queue.sendMessage("order-1");
    const [duplicate] = await events.next("duplicate");
    await consumer.stop();
    expect(duplicate!.result).toBe(`charged by ${first}`);
    expect(seen.runs).toBe(2);
    expect(seen.statusAtStart).toEqual([undefined, "done"]);
    expect((await rowsOf(inbox, "order-1")).effects.map((row) => row.rowKey)).toEqual([`effect-${first}`]);
    expect(await peekCount(queue)).toBe(0);
  });

  it.each<[string, FaultAction]>([
    ["a 500 after the service applied it", { type: "statusAfterApply", statusCode: 500, serviceCode: "InternalError" }],
    ["its answer dropped", { type: "dropResponse" }],
    ["its answer held back past the time limit", { type: "hang", afterApply: true }],
  ])(
    "a transaction whose answer is lost (%s) is read back: processed once, never a duplicate of itself",
    async (_name, action) => {
      const { queue } = await newQueue("tonlylost");
      const inbox = await newInbox();
      await queue.sendMessage("order-1");
      const { proxy, connectionString } = await faultProxyFor("table");
      await using _ = proxy;
      proxy.addRule({ ...BATCH, times: 1, action });
      const flaky = tableClient(inbox.tableName, connectionString, { retryOptions: quickSdkRetries.tables });
      const seen: Seen = { statusAtStart: [], runs: 0 };
      await using consumer = tablesOnlyConsumer(queue, flaky, seen, 0, { requestTimeoutInMs: 1_000 });
      const events = record(consumer);
      await consumer.start();
      const [processed] = await events.next("processed");
      await consumer.stop();
      expect(processed!.messageDeleted).toBe(true);
      expect(events.of("duplicate")).toEqual([]);
      expect(events.of("failed")).toEqual([]);
      expect(events.of("ownershipLost")).toEqual([]);
      expect(seen.runs).toBe(1);
      expect(proxy.requests.filter((r) => r.method === "POST" && /\$batch/.test(r.path)).length).toBeGreaterThanOrEqual(
        1,
      );
      const { record: done, effects } = await rowsOf(inbox, "order-1");
      expect(effects).toHaveLength(1);
      expect(done).toMatchObject({ Status: "done", MessageId: processed!.message.messageId });
      expect(await peekCount(queue)).toBe(0);
    },
  );

  it("a redelivery after a lost delete is claimed, recognised as done, and deleted without running the handler", async () => {
    const { queue } = await newQueue("tonlyredeliver");
    const inbox = await newInbox();
    await queue.sendMessage("order-1");
    const { proxy, connectionString } = await faultProxyFor("queue");
    await using _ = proxy;
    proxy.addRule({ method: "DELETE", path: /\/messages\//, action: { type: "reset" } });
    const seen: Seen = { statusAtStart: [], runs: 0 };
    const cutOff = queueService(connectionString, { retryOptions: quickSdkRetries.storage }).getQueueClient(queue.name);
    await using first = tablesOnlyConsumer(cutOff, inbox, seen, 0, { visibilityTimeoutInSeconds: 2 });
    const firstEvents = record(first);
    await first.start();
    await until(() => firstEvents.of("error").some((e) => e.operation === "delete the message"));
    await first.stop();
    expect(seen.runs).toBe(1);

    await using second = tablesOnlyConsumer(queue, inbox, seen);
    const events = record(second);
    await second.start();
    const [duplicate] = await events.next("duplicate");
    await second.stop();
    expect(duplicate!.message.dequeueCount).toBeGreaterThan(1);
    expect(seen.runs).toBe(1);
    expect((await rowsOf(inbox, "order-1")).effects).toHaveLength(1);
    expect(await peekCount(queue)).toBe(0);
  });
});
