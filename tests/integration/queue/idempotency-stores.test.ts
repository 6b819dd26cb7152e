/**
 * The idempotency store contract, against the Table store on a real Azurite and against the
 * memory store; then what only the Table store does (entity group transactions, ETag races between
 * stores, responses lost on the wire).
 */
import type { TransactionAction } from "@azure/data-tables";
import {
  isIdempotencyClaimLostError,
  MemoryIdempotencyStore,
  TableIdempotencyStore,
  type ClaimRequest,
  type IdempotencyClaim,
  type IdempotencyStore,
} from "../../../src/idempotency/index.js";
import { faultProxyFor, tableClient } from "../../support/storage.js";
import { newInbox as newInboxTable } from "./consumer-support.js";

const newInbox = () => newInboxTable("inbox");

const request = (overrides: Partial<ClaimRequest> = {}): ClaimRequest => ({
  key: "order-1",
  owner: "consumer-a",
  messageId: "m-1",
  dequeueCount: 1,
  ttlInMs: 30_000,
  ...overrides,
});

async function expectClaimLost(promise: Promise<unknown>): Promise<void> {
  const error = await promise.then(
    () => new Error("expected IdempotencyClaimLostError, but it resolved"),
    (e: unknown) => e,
  );
  expect(isIdempotencyClaimLostError(error) ? "IdempotencyClaimLostError" : error).toBe("IdempotencyClaimLostError");
}

async function claimed<E>(store: IdempotencyStore<E>, r: ClaimRequest): Promise<IdempotencyClaim> {
  const outcome = await store.claim(r);
  if (outcome.status !== "claimed") throw new Error(`expected a claim, got ${outcome.status}`);
  return outcome.claim;
}

const stores: [string, () => Promise<IdempotencyStore<never>>][] = [
  ["TableIdempotencyStore", async () => new TableIdempotencyStore(await newInbox())],
  ["MemoryIdempotencyStore", async () => new MemoryIdempotencyStore()],
];

describe.each(stores)("%s contract", (_name, create) => {
  it("claims an absent key, says busy to a different message, done after completion with the result", async () => {
    const store = await create();
    const claim = await claimed(store, request());
    expect(await store.claim(request({ owner: "consumer-b", messageId: "m-2" }))).toMatchObject({
      status: "busy",
      owner: "consumer-a",
    });
    await store.complete(claim, { result: { receipt: 42 } });
    expect(await store.claim(request({ owner: "consumer-b", messageId: "m-2" }))).toMatchObject({
      status: "done",
      result: { receipt: 42 },
    });
    // Also for a later delivery of the same message.
    expect(await store.claim(request({ dequeueCount: 2 }))).toMatchObject({ status: "done" });
  });

  it("takes over an expired claim, and the old holder can no longer extend or complete it", async () => {
    const store = await create();
    const old = await claimed(store, request({ ttlInMs: 1 }));
    await new Promise((resolve) => setTimeout(resolve, 20));
    const taken = await claimed(store, request({ owner: "consumer-b", messageId: "m-2" }));
    expect(taken.takenOverFrom).toBe("consumer-a");
    await expectClaimLost(store.extend(old, 30_000));
    await expectClaimLost(store.complete(old, { result: "stale" }));
    await store.complete(taken, { result: "fresh" });
    expect(await store.claim(request({ messageId: "m-3" }))).toMatchObject({ status: "done", result: "fresh" });
  });

  it("lets a later delivery of the same message take over a live claim (its previous holder lost the message)", async () => {
    const store = await create();
    const first = await claimed(store, request());
    const second = await claimed(store, request({ owner: "consumer-b", dequeueCount: 2 }));
    expect(second.takenOverFrom).toBe("consumer-a");
    await expectClaimLost(store.complete(first));
    // An older delivery cannot take it back.
    expect(await store.claim(request({ owner: "consumer-c", dequeueCount: 1 }))).toMatchObject({
      status: "busy",
      owner: "consumer-b",
    });
  });

  it("extends a claim's expiry, and a released claim can be claimed again at once", async () => {
    const store = await create();
    const claim = await claimed(store, request({ ttlInMs: 1_000 }));
    const extended = await store.extend(claim, 60_000);
    expect(extended.expiresOn.getTime()).toBeGreaterThan(claim.expiresOn.getTime());
    await store.release(extended);
    await claimed(store, request({ owner: "consumer-b", messageId: "m-2" }));
    await store.release(extended); // no longer held: nothing happens
    expect(await store.claim(request({ owner: "consumer-c", messageId: "m-3" }))).toMatchObject({
      status: "busy",
      owner: "consumer-b",
    });
  });

  it("writes nothing for a first-delivery claim, and creates the record with the done mark", async () => {
    const store = await create();
    const first = await claimed(store, request({ firstDelivery: true }));
    expect(first.etag).toBeUndefined();
    await store.release(first); // nothing to release
    const extended = await store.extend(first, 60_000);
    await store.complete(extended, { result: "first" });
    expect(await store.claim(request({ dequeueCount: 2 }))).toMatchObject({ status: "done", result: "first" });
  });

  it("lets a redelivery overtake a first-delivery claim: the first can then neither extend nor complete", async () => {
    const store = await create();
    const first = await claimed(store, request({ firstDelivery: true }));
    const redelivery = await claimed(store, request({ owner: "consumer-b", dequeueCount: 2 }));
    await expectClaimLost(store.extend(first, 60_000));
    await expectClaimLost(store.complete(first, { result: "first" }));
    await store.complete(redelivery, { result: "second" });
    expect(await store.claim(request({ dequeueCount: 3 }))).toMatchObject({ status: "done", result: "second" });
  });

  it("refuses a result that is too large for a done mark, before writing", async () => {
    const store = await create();
    const claim = await claimed(store, request());
    await expect(store.complete(claim, { result: "x".repeat(40_000) })).rejects.toThrow(RangeError);
    await store.complete(claim, { result: "small" });
  });
});

describe("TableIdempotencyStore", () => {
  it("of many stores racing to take over one expired claim, exactly one wins", async () => {
    const inbox = await newInbox();
    await claimed(new TableIdempotencyStore(inbox), request({ ttlInMs: 1 }));
    await new Promise((resolve) => setTimeout(resolve, 20));
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        new TableIdempotencyStore(tableClient(inbox.tableName)).claim(
          request({ owner: `racer-${i}`, messageId: `m-${i + 10}` }),
        ),
      ),
    );
    expect(outcomes.filter((o) => o.status === "claimed")).toHaveLength(1);
    expect(outcomes.filter((o) => o.status === "busy")).toHaveLength(7);
  });

  it("commits effects and the done mark in one entity group transaction, or neither", async () => {
    const inbox = await newInbox();
    const store = new TableIdempotencyStore(inbox);
    const effectsOf = (claim: IdempotencyClaim, tag: string): TransactionAction[] => [
      ["upsert", { partitionKey: claim.partitionKey, rowKey: "balance", amount: 10, tag }],
      ["create", { partitionKey: claim.partitionKey, rowKey: `ledger-${tag}`, amount: 10 }],
    ];
    // A stale holder's effects are not written at all.
    const stale = await claimed(store, request({ ttlInMs: 1 }));
    await new Promise((resolve) => setTimeout(resolve, 20));
    const fresh = await claimed(store, request({ owner: "consumer-b", messageId: "m-2" }));
    await expectClaimLost(store.complete(stale, { effects: effectsOf(stale, "stale") }));
    const rows = async () => {
      const found: Record<string, unknown>[] = [];
      for await (const e of inbox.listEntities()) found.push(e);
      return found;
    };
    expect((await rows()).map((r) => r.rowKey)).toEqual([fresh.rowKey]);

    // The holder's effects are written with the done mark.
    await store.complete(fresh, { result: "ok", effects: effectsOf(fresh, "fresh") });
    const after = await rows();
    expect(after.map((r) => r.rowKey).sort()).toEqual(["balance", fresh.rowKey, "ledger-fresh"].sort());
    expect(after.find((r) => r.rowKey === fresh.rowKey)).toMatchObject({
      Status: "done",
      Result: '"ok"',
      Key: "order-1",
    });
  });

  it("keeps the claim when an effect fails: the error is the effect's, nothing is written", async () => {
    const inbox = await newInbox();
    const store = new TableIdempotencyStore(inbox);
    const claim = await claimed(store, request());
    await inbox.createEntity({ partitionKey: claim.partitionKey, rowKey: "exists" });
    const effects: TransactionAction[] = [["create", { partitionKey: claim.partitionKey, rowKey: "exists" }]];
    const error = await store.complete(claim, { effects }).catch((e: unknown) => e);
    expect(isIdempotencyClaimLostError(error)).toBe(false);
    expect(error).toMatchObject({ statusCode: 409 });
    await store.complete(claim, { result: "second try" }); // still held
  });

  it("refuses effects outside the inbox row's partition, or too many, before any request", async () => {
    const inbox = await newInbox();
    const store = new TableIdempotencyStore(inbox);
    const claim = await claimed(store, request());
    await expect(
      store.complete(claim, { effects: [["upsert", { partitionKey: "elsewhere", rowKey: "x" }]] }),
    ).rejects.toThrow(/limited to one partition.*'order-1'/);
    const many = Array.from({ length: 100 }, (_, i): TransactionAction => [
      "upsert",
      { partitionKey: claim.partitionKey, rowKey: `r${i}` },
    ]);
    await expect(store.complete(claim, { effects: many })).rejects.toThrow(/at most 100 operations/);
    await expect(
      store.complete(claim, { effects: [["upsert", { partitionKey: claim.partitionKey, rowKey: claim.rowKey }]] }),
    ).rejects.toThrow(/overwrite the inbox row/);
    await store.complete(claim);
  });

  it("puts a partitioned key's record in that partition, and escapes characters tables forbid in keys", async () => {
    const inbox = await newInbox();
    const store = new TableIdempotencyStore(inbox);
    const odd = await claimed(store, request({ key: "a/b#c?d\\e%f\u0001:g", partitionKey: "tenant/7:x" }));
    // ':' is escaped after the prefix only (see rowKeyPrefix): a partition key keeps it.
    expect(odd).toMatchObject({ partitionKey: "tenant%2F7:x", rowKey: "inbox:a%2Fb%23c%3Fd%5Ce%25f%01%3Ag" });
    const plain = await claimed(store, request({ key: "a%2Fb#c?d\\e%f\u0001%3Ag", partitionKey: "tenant/7:x" }));
    expect(plain.rowKey).not.toBe(odd.rowKey);
    expect(store.rowOf("k")).toEqual({ partitionKey: "k", rowKey: "inbox:k" });
  });

  it("recognises its own claim when the insert was applied but its response was lost [Azurite only]", async () => {
    const inbox = await newInbox();
    const { proxy, connectionString } = await faultProxyFor("table");
    try {
      const store = new TableIdempotencyStore(tableClient(inbox.tableName, connectionString));
      proxy.addRule({ method: "POST", times: 1, action: { type: "dropResponse" } });
      const outcome = await store.claim(request());
      expect(outcome.status).toBe("claimed");
      expect(proxy.requests.filter((r) => r.method === "POST").length).toBe(2); // the SDK retried, got 409
      if (outcome.status === "claimed") await store.complete(outcome.claim, { result: 1 });
    } finally {
      await proxy.close();
    }
  });

  it("commits a first-delivery claim's effects with the row's creation, and none once a redelivery took the key", async () => {
    const inbox = await newInbox();
    const store = new TableIdempotencyStore(inbox);
    const first = await claimed(store, request({ firstDelivery: true }));
    const redelivery = await claimed(store, request({ owner: "consumer-b", dequeueCount: 2 }));
    await expectClaimLost(
      store.complete(first, { effects: [["create", { partitionKey: first.partitionKey, rowKey: "effect-1" }]] }),
    );
    await store.complete(redelivery, {
      effects: [["create", { partitionKey: redelivery.partitionKey, rowKey: "effect-2" }]],
    });
    const rows: string[] = [];
    for await (const e of inbox.listEntities()) rows.push(e.rowKey!);
    expect(rows.sort()).toEqual(["effect-2", redelivery.rowKey]);
  });

  it("recognises its own done mark when the transaction was applied but its response was lost [Azurite only]", async () => {
    const inbox = await newInbox();
    const { proxy, connectionString } = await faultProxyFor("table");
    try {
      const store = new TableIdempotencyStore(tableClient(inbox.tableName, connectionString));
      const claim = await claimed(store, request());
      proxy.addRule({ method: "POST", times: 1, action: { type: "dropResponse" } });
      await store.complete(claim, {
        result: "once",
        effects: [["create", { partitionKey: claim.partitionKey, rowKey: "effect" }]],
      });
      expect(await store.claim(request({ messageId: "m-2" }))).toMatchObject({ status: "done", result: "once" });
    } finally {
      await proxy.close();
    }
  });
});
