/**
 * The Table idempotency store keeps its records its own (issue 21), against Azurite:
 * - an effect may not write any row under the store's RowKey prefix: it could forge another key's
 *   record (`inbox:<other key>` marked done with a made-up result) and settle that key's requests
 *   without running them. Refused before any request, on the single and the grouped (shared
 *   transaction) paths, and nothing is written;
 * - two stores whose prefixes start alike (`in:` and `in:b:`) never share a row, and one's purge
 *   never deletes the other's.
 */
import type { TransactionAction } from "@azure/data-tables";
import { TableIdempotencyStore, type ClaimRequest, type IdempotencyClaim } from "../../../src/idempotency/index.js";
import { faultProxyFor, tableClient } from "../../support/storage.js";
import { newInbox } from "./consumer-support.js";

const request = (overrides: Partial<ClaimRequest> = {}): ClaimRequest => ({
  key: "order-1",
  owner: "consumer-a",
  messageId: "m-1",
  dequeueCount: 1,
  ttlInMs: 30_000,
  ...overrides,
});

async function claimed(store: TableIdempotencyStore, r: ClaimRequest): Promise<IdempotencyClaim> {
  const outcome = await store.claim(r);
  if (outcome.status !== "claimed") throw new Error(`expected a claim, got ${outcome.status}`);
  return outcome.claim;
}

async function rowKeys(inbox: { listEntities(): AsyncIterable<{ rowKey?: string }> }): Promise<string[]> {
  const keys: string[] = [];
  for await (const row of inbox.listEntities()) keys.push(row.rowKey!);
  return keys.sort();
}

describe("effects may not write the store's own rows", () => {
  it("refuses an effect that forges another key's done record, before any request; nothing is written", async () => {
    const inbox = await newInbox("forge");
    const { proxy, connectionString } = await faultProxyFor("table");
    try {
      const store = new TableIdempotencyStore(tableClient(inbox.tableName, connectionString));
      // Both keys in one partition, as a consumer with a shared `idempotency.partitionKey` has them.
      const claim = await claimed(store, request({ partitionKey: "tenant-1" }));
      const victim = store.rowOf("order-2", "tenant-1");
      const forged: TransactionAction[] = [
        ["upsert", { partitionKey: "tenant-1", rowKey: "balance", amount: 10 }],
        ["upsert", { ...victim, Status: "done", Key: "order-2", Result: '{"refund":1000}' }],
      ];
      const before = proxy.requests.length;
      await expect(store.complete(claim, { result: "ok", effects: forged })).rejects.toThrow(
        /writes the row 'inbox:order-2', under the idempotency store's RowKey prefix 'inbox:'.*Nothing was written/,
      );
      expect(proxy.requests.length).toBe(before);
      expect(await rowKeys(inbox)).toEqual([claim.rowKey]);
      // The forged key is still new; the claim is still held and completes without the forgery.
      expect(await store.claim(request({ key: "order-2", partitionKey: "tenant-1", messageId: "m-2" }))).toMatchObject({
        status: "claimed",
      });
      await store.complete(claim, { result: "ok", effects: [forged[0]!] });
    } finally {
      await proxy.close();
    }
  });

  it("refuses any row under the prefix, also one no key has yet, and a delete of another key's record", async () => {
    const inbox = await newInbox("forge");
    const store = new TableIdempotencyStore(inbox);
    const claim = await claimed(store, request({ partitionKey: "tenant-1" }));
    for (const effect of [
      ["create", { partitionKey: "tenant-1", rowKey: "inbox:" }],
      ["upsert", { partitionKey: "tenant-1", rowKey: "inbox:anything", Status: "claimed" }],
      ["delete", { partitionKey: "tenant-1", rowKey: "inbox:order-2" }],
    ] as TransactionAction[]) {
      await expect(store.complete(claim, { effects: [effect] })).rejects.toThrow(
        /under the idempotency store's RowKey prefix/,
      );
    }
    expect(await rowKeys(inbox)).toEqual([claim.rowKey]);
  });

  it("the grouped path (shared transactions) does not commit a forging entry; complete() then refuses it by name", async () => {
    const inbox = await newInbox("forge");
    const store = new TableIdempotencyStore(inbox);
    const honest = await claimed(store, request({ partitionKey: "shared", key: "a", messageId: "m-a" }));
    const forger = await claimed(store, request({ partitionKey: "shared", key: "b", messageId: "m-b" }));
    const victim = store.rowOf("c", "shared");
    const committed = await store.completeMany([
      { claim: honest, result: 1, effects: [["upsert", { partitionKey: "shared", rowKey: "effect-a" }]] },
      { claim: forger, result: 2, effects: [["upsert", { ...victim, Status: "done", Key: "c", Result: "1" }]] },
      { claim: await claimed(store, request({ partitionKey: "shared", key: "d", messageId: "m-d" })), result: 3 },
    ]);
    expect(committed).toEqual([true, false, true]);
    await expect(
      store.complete(forger, { effects: [["upsert", { ...victim, Status: "done", Key: "c", Result: "1" }]] }),
    ).rejects.toThrow(/under the idempotency store's RowKey prefix/);
    expect(await rowKeys(inbox)).toEqual(
      ["effect-a", honest.rowKey, forger.rowKey, store.rowOf("d", "shared").rowKey].sort(),
    );
    expect(await store.claim(request({ key: "c", partitionKey: "shared", messageId: "m-c" }))).toMatchObject({
      status: "claimed",
    });
  });
});

describe("stores whose prefixes start alike", () => {
  it("never share a row, and one's purge never deletes the other's records", async () => {
    const inbox = await newInbox("prefixes");
    const outer = new TableIdempotencyStore(inbox, { rowKeyPrefix: "in:" });
    const inner = new TableIdempotencyStore(inbox, { rowKeyPrefix: "in:b:" });
    // Without the escaping these two would be one row: "in:" + "b:x" = "in:b:" + "x".
    const a = await claimed(outer, request({ key: "b:x", partitionKey: "p", ttlInMs: 1 }));
    const b = await claimed(inner, request({ key: "x", partitionKey: "p", owner: "consumer-b", ttlInMs: 1 }));
    expect(a.rowKey).not.toBe(b.rowKey);
    await new Promise((resolve) => setTimeout(resolve, 20)); // both claims have expired: both rows are purgeable

    const purged = await outer.purge();
    expect(purged).toMatchObject({ expired: 1, deleted: 1, failed: 0 });
    expect(await rowKeys(inbox)).toEqual([b.rowKey]);
    expect(await inner.purge()).toMatchObject({ expired: 1, deleted: 1 });
    expect(await rowKeys(inbox)).toEqual([]);
  });
});
