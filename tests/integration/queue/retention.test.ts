/**
 * The inbox does not grow for ever: done records carry an expiry, an expired key counts as new
 * (purged or not), and `purge()` deletes expired records, each only if unchanged since its scan
 * read it: a key claimed or completed after the scan is never deleted, and one such key never
 * keeps the purge from deleting the others. Against the Table store on Azurite and the memory
 * store (whose clock the test moves); and the consumer's background purge.
 */
import type { TableClient } from "@azure/data-tables";
import {
  MemoryIdempotencyStore,
  TableIdempotencyStore,
  type ClaimRequest,
  type IdempotencyClaim,
  type IdempotencyStore,
  type PurgeResult,
} from "../../../src/idempotency/index.js";
import { QueueConsumer, type QueueConsumerEvents } from "../../../src/queue/index.js";
import { tableClient, uniqueName } from "../../support/storage.js";
import { newQueue, quick, record, newInbox as newInboxTable } from "./consumer-support.js";

const newInbox = () => newInboxTable("retention");

const request = (key: string, overrides: Partial<ClaimRequest> = {}): ClaimRequest => ({
  key,
  owner: "consumer-a",
  messageId: `m-${key}`,
  dequeueCount: 1,
  ttlInMs: 30_000,
  ...overrides,
});

async function claimed<E>(store: IdempotencyStore<E>, r: ClaimRequest): Promise<IdempotencyClaim> {
  const outcome = await store.claim(r);
  if (outcome.status !== "claimed") throw new Error(`expected a claim of ${r.key}, got ${outcome.status}`);
  return outcome.claim;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function rowKeys(table: TableClient): Promise<string[]> {
  const keys: string[] = [];
  for await (const row of table.listEntities()) keys.push(`${row.partitionKey}/${row.rowKey}`);
  return keys.sort();
}

describe("TableIdempotencyStore retention and purge", () => {
  it("writes an expiry with each done mark; an expired key counts as new, and purge deletes only expired records", async () => {
    const inbox = await newInbox();
    const store = new TableIdempotencyStore(inbox, { retentionInMs: 3_600_000 });
    const shortLived = await claimed(store, request("short"));
    await store.complete(shortLived, { result: "short", retentionInMs: 1_000 });
    await store.complete(await claimed(store, request("long")), { result: "long" });
    await claimed(store, request("abandoned", { ttlInMs: 1 })); // its holder died
    await claimed(store, request("live")); // being processed
    await inbox.createEntity({ partitionKey: "short", rowKey: "not-an-inbox-row", Status: "done" });

    const long = await inbox.getEntity<{ CompletedOn: Date; ExpiresOn: Date }>("long", "inbox:long");
    expect(long.ExpiresOn.getTime() - long.CompletedOn.getTime()).toBe(3_600_000);
    expect(await store.claim(request("short", { messageId: "m-2" }))).toMatchObject({ status: "done" });

    await sleep(1_100);
    const result = await store.purge();
    expect(result).toMatchObject({ expired: 2, deleted: 2, changed: 0, failed: 0 });
    expect(await rowKeys(inbox)).toEqual(["live/inbox:live", "long/inbox:long", "short/not-an-inbox-row"]);

    // The key counts as new once expired, purged or not.
    await store.complete(await claimed(store, request("short", { messageId: "m-3" })), {
      result: "again",
      retentionInMs: 1_000,
    });
    await sleep(1_100);
    expect((await store.claim(request("short", { messageId: "m-4" }))).status).toBe("claimed");
  });

  it("never deletes a record claimed or completed after its scan read it, and still deletes the others", async () => {
    const inbox = await newInbox();
    const store = new TableIdempotencyStore(inbox);
    const keys = ["a", "b", "c", "d"];
    for (const key of keys) {
      await store.complete(await claimed(store, request(key, { partitionKey: "shared" })), {
        result: key,
        retentionInMs: 1_000,
      });
    }
    await sleep(1_100);
    // Between the scan and the deletes, a consumer claims "b" again and another completes "c" again.
    const racer = new TableIdempotencyStore(tableClient(inbox.tableName));
    let race: Promise<void> | undefined;
    const interleaved = new Proxy(inbox, {
      get(target, property, receiver) {
        if (property !== "deleteEntity") return Reflect.get(target, property, receiver) as unknown;
        return async (...args: Parameters<TableClient["deleteEntity"]>) => {
          race ??= (async () => {
            await claimed(racer, request("b", { partitionKey: "shared", owner: "racer", messageId: "m-b2" }));
            const c = await claimed(racer, request("c", { partitionKey: "shared", owner: "racer", messageId: "m-c2" }));
            await racer.complete(c, { result: "c again" });
          })();
          await race; // every delete waits until the race has run
          return target.deleteEntity(...args);
        };
      },
    });
    const result = await new TableIdempotencyStore(interleaved).purge();
    expect(result).toMatchObject({ expired: 4, deleted: 2, changed: 2, failed: 0 });
    expect(await rowKeys(inbox)).toEqual(["shared/inbox:b", "shared/inbox:c"]);
    const b = await inbox.getEntity<{ Status: string; Owner: string }>("shared", "inbox:b");
    expect(b).toMatchObject({ Status: "claimed", Owner: "racer" });
    expect(await racer.claim(request("c", { partitionKey: "shared", messageId: "m-c3" }))).toMatchObject({
      status: "done",
      result: "c again",
    });
  });

  it("refuses an olderThan in the future, or a retention under a second, before any request", async () => {
    const inbox = tableClient(uniqueName("neverused")); // not created: any request would fail
    const store = new TableIdempotencyStore(inbox);
    await expect(store.purge({ olderThan: new Date(Date.now() + 60_000) })).rejects.toThrow(
      /`olderThan`.*is in the future/,
    );
    await expect(store.purge({ maxConcurrency: 0 })).rejects.toThrow(/`maxConcurrency` must be at least 1/);
    expect(() => new TableIdempotencyStore(inbox, { retentionInMs: 10 })).toThrow(
      /`retentionInMs` must be at least 1000/,
    );
  });

  it("pages through a scan longer than one response", async () => {
    const inbox = await newInbox();
    const expired = new Date(Date.now() - 60_000);
    const rows = Array.from({ length: 1_050 }, (_, i) => ({
      partitionKey: `p${i % 7}`,
      rowKey: `inbox:k${i}`,
      Status: "done",
      CompletedOn: expired,
      ExpiresOn: expired,
    }));
    for (let i = 0; i < rows.length; i += 100) {
      const chunk = rows.slice(i, i + 100);
      await Promise.all(
        [...new Set(chunk.map((r) => r.partitionKey))].map((pk) =>
          inbox.submitTransaction(chunk.filter((r) => r.partitionKey === pk).map((r) => ["create", r] as const)),
        ),
      );
    }
    const result = await new TableIdempotencyStore(inbox).purge({ maxConcurrency: 16 });
    expect(result).toMatchObject({ expired: 1_050, deleted: 1_050, failed: 0 });
    expect(await rowKeys(inbox)).toEqual([]);
  }, 120_000);
});

describe("MemoryIdempotencyStore retention and purge", () => {
  it("follows the same rules on its own clock", async () => {
    let now = 1_000_000;
    const store = new MemoryIdempotencyStore({ now: () => now, retentionInMs: 60_000 });
    await store.complete(await claimed(store, request("done")), { result: 1 });
    await claimed(store, request("abandoned", { ttlInMs: 1_000 }));
    now += 30_000;
    await claimed(store, request("live")); // the store may sweep the abandoned claim by itself here
    const first = await store.purge();
    expect(first.expired).toBe(first.deleted);
    expect(store.inspect("abandoned")).toBeUndefined(); // gone: by the store's own sweep, or by purge
    expect(store.inspect("live")).toBeDefined();
    expect(store.inspect("done")?.doneExpiresOn).toEqual(new Date(1_060_000));
    now += 30_001;
    expect(await store.purge({ olderThan: new Date(now - 10_000) })).toMatchObject({ expired: 0 });
    expect((await store.claim(request("done", { messageId: "m-2" }))).status).toBe("claimed"); // expired: new again
    await store.purge();
    expect(store.inspect("live")).toBeUndefined(); // "live" expired meanwhile
    expect(store.inspect("done")).toBeDefined(); // claimed again just now
    await expect(store.purge({ olderThan: new Date(now + 1) })).rejects.toThrow(RangeError);
  });
});

describe("QueueConsumer background purge", () => {
  it("purges expired done records while it runs, reports each run, and stops with the consumer", async () => {
    const { queue } = await newQueue("purging");
    const inbox = await newInbox();
    for (let i = 0; i < 5; i++) await queue.sendMessage(`job ${i}`);
    const consumer = new QueueConsumer(queue, async () => "ok", {
      ...quick,
      visibilityTimeoutInSeconds: 1,
      idempotency: {
        store: new TableIdempotencyStore(inbox),
        retentionInMs: 1_500,
        purge: { intervalInMs: 1_000 },
      },
    });
    const events = record(consumer);
    const purged: PurgeResult[] = [];
    consumer.on("purged", (result) => purged.push(result));
    await consumer.start();
    await events.next("processed", 5);
    const deadline = Date.now() + 20_000;
    while (purged.reduce((sum, r) => sum + r.deleted, 0) < 5 && Date.now() < deadline) await sleep(200);
    await consumer.stop();
    const runs = purged.length;
    expect(purged.reduce((sum, r) => sum + r.deleted, 0)).toBe(5);
    expect(await rowKeys(inbox)).toEqual([]);
    await sleep(1_500);
    expect(purged).toHaveLength(runs); // no run after stop()
  });

  it("reports a purge that fails as an error event, and goes on consuming", async () => {
    const { queue } = await newQueue("purging");
    const inbox = await newInbox();
    const consumer = new QueueConsumer(queue, async () => "ok", {
      ...quick,
      idempotency: { store: new TableIdempotencyStore(inbox), purge: { intervalInMs: 1_000 } },
    });
    const errors: QueueConsumerEvents["error"][] = [];
    consumer.on("error", (e) => errors.push(e));
    await consumer.start();
    await inbox.deleteTable();
    const deadline = Date.now() + 10_000;
    while (errors.length === 0 && Date.now() < deadline) await sleep(100);
    expect(consumer.status).toBe("running");
    await consumer.stop();
    expect(errors[0]).toMatchObject({ operation: "purge expired idempotency records", error: { statusCode: 404 } });
  });
});
