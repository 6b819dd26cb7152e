/**
 * The claimless path of `idempotency.effects: "tables-only"` (issue 27), as pure decisions: when a
 * message's key is claimed only with its done mark, what a failed insert of the done mark means
 * (the key done by another delivery: a duplicate; anything else: the claim is lost), and the memory
 * store's same rule. The Table store against Azurite: tests/integration/queue/tables-only.test.ts.
 */
import type { QueueClient } from "@azure/storage-queue";
import { claimIsDeferred } from "../../../src/queue/claim.js";
import { lostToRow, type InboxEntity } from "../../../src/idempotency/table-rows.js";
import {
  isIdempotencyClaimLostError,
  MemoryIdempotencyStore,
  type IdempotencyClaim,
} from "../../../src/idempotency/index.js";
import { QueueConsumer, type QueueConsumerOptions } from "../../../src/queue/index.js";

describe("a key claimed only with its done mark", () => {
  const work = (dequeueCount: number, carriedKey?: string, payloadGone = false) => ({
    message: { dequeueCount },
    carriedKey,
    payloadGone,
  });
  const byMessageId = { keyIsMessageId: true, tablesOnlyEffects: false };
  const keyed = { keyIsMessageId: false, tablesOnlyEffects: false };
  const keyedTablesOnly = { keyIsMessageId: false, tablesOnlyEffects: true };

  it.each([
    ["message id, first delivery", byMessageId, work(1), true],
    ["message id, redelivery", byMessageId, work(2), false],
    [
      "a key the message carries (an outbox relay may send it twice), effects any",
      byMessageId,
      work(1, "row-7"),
      false,
    ],
    ["a key from the body, effects any", keyed, work(1), false],
    ["a key from the body, tables-only, first delivery", keyedTablesOnly, work(1), true],
    ["a carried key, tables-only", { ...byMessageId, tablesOnlyEffects: true }, work(1, "row-7"), true],
    ["tables-only, redelivery (a done key is recognised without running the handler)", keyedTablesOnly, work(2), false],
    [
      "tables-only, its claim-check payload gone (only the store can settle it)",
      keyedTablesOnly,
      work(1, "k", true),
      false,
    ],
  ] as const)("%s", (_name, idempotency, w, deferred) => {
    expect(claimIsDeferred(idempotency, w)).toBe(deferred);
  });
});

describe("a done mark's insert that found a record (Table store)", () => {
  const now = Date.parse("2026-01-01T00:00:00Z");
  const deferred = {
    key: "order-1",
    partitionKey: "order-1",
    rowKey: "inbox:order-1",
    etag: undefined,
    expiresOn: new Date(now + 30_000),
    owner: "me",
    messageId: "m-1",
    dequeueCount: 1,
  } as IdempotencyClaim;
  const conflict = Object.assign(new Error("EntityAlreadyExists"), { statusCode: 409 });
  const row = (fields: Record<string, unknown>) =>
    ({ partitionKey: "order-1", rowKey: "inbox:order-1", etag: "e", ...fields }) as InboxEntity;

  it("done by another delivery, within its retention: key-done, with that delivery's result", () => {
    const done = row({ Status: "done", MessageId: "m-2", Result: '{"charged":42}', ExpiresOn: new Date(now + 60_000) });
    const error = lostToRow(deferred, "complete", conflict, done, now);
    expect(error.reason).toBe("key-done");
    expect(error.result).toEqual({ charged: 42 });
    expect(error.statusCode).toBe(409);
    expect(error.message).toMatch(/marked done by another delivery \(message 'm-2'\)/);
  });

  it.each([
    [
      "a live claim of another consumer (it may still fail)",
      row({ Status: "claimed", ClaimExpiresOn: new Date(now + 60_000) }),
    ],
    ["a done record past its retention (the key counts as new)", row({ Status: "done", ExpiresOn: new Date(now - 1) })],
    ["no row (deleted in between)", undefined],
    [
      "done by a later delivery of this same message (the queue handed it out again: this delivery lost it)",
      row({ Status: "done", MessageId: "m-1", DequeueCount: 2, ExpiresOn: new Date(now + 60_000) }),
    ],
  ])("%s: the claim is lost, not a duplicate", (_name, current) => {
    expect(lostToRow(deferred, "complete", conflict, current, now).reason).toBe("record-changed");
  });

  it("a claim that wrote its record is lost to any change, never told key-done", () => {
    const done = row({ Status: "done", ExpiresOn: new Date(now + 60_000) });
    expect(lostToRow({ ...deferred, etag: "W/1" }, "complete", conflict, done, now).reason).toBe("record-changed");
  });
});

describe("the memory store's deferred claims", () => {
  const request = (messageId: string) => ({
    key: "order-1",
    owner: "me",
    messageId,
    dequeueCount: 1,
    ttlInMs: 30_000,
    firstDelivery: true,
  });

  it("of two deliveries of one key, the first done mark wins; the other's effects never run", async () => {
    const store = new MemoryIdempotencyStore();
    const a = await store.claim(request("m-1"));
    const b = await store.claim(request("m-2"));
    if (a.status !== "claimed" || b.status !== "claimed") throw new Error("not claimed");
    const applied: string[] = [];
    await store.complete(b.claim, { result: "by b", effects: [() => applied.push("b")] });
    const lost = await store
      .complete(a.claim, { result: "by a", effects: [() => applied.push("a")] })
      .catch((e: unknown) => e);
    expect(isIdempotencyClaimLostError(lost) && lost.reason).toBe("key-done");
    expect(isIdempotencyClaimLostError(lost) && lost.result).toBe("by b");
    expect(applied).toEqual(["b"]);
    expect(store.inspect("order-1")).toMatchObject({ status: "done", result: "by b" });
  });

  it("a done record past its retention is not a duplicate's proof: the claim is lost", async () => {
    let now = 0;
    const store = new MemoryIdempotencyStore({ now: () => now, retentionInMs: 1_000 });
    const a = await store.claim(request("m-1"));
    const b = await store.claim(request("m-2"));
    if (a.status !== "claimed" || b.status !== "claimed") throw new Error("not claimed");
    await store.complete(b.claim);
    now = 2_000;
    const lost = await store.complete(a.claim).catch((e: unknown) => e);
    expect(isIdempotencyClaimLostError(lost) && lost.reason).toBe("record-changed");
  });
});

describe("the option", () => {
  const queue = {
    name: "orders",
    url: "http://127.0.0.1:10001/devstoreaccount1/orders",
    receiveMessages: async () => ({ receivedMessageItems: [] }),
  } as unknown as QueueClient;
  const handler = async () => undefined;

  it.each(["any", "tables-only", undefined])("accepts %s", (effects) => {
    const options = { idempotency: { store: new MemoryIdempotencyStore(), effects } } as QueueConsumerOptions<string>;
    expect(() => new QueueConsumer(queue, handler, options)).not.toThrow();
  });

  it("refuses anything else by name, with the two choices", () => {
    const options = {
      idempotency: { store: new MemoryIdempotencyStore(), effects: "tables" },
    } as unknown as QueueConsumerOptions<string>;
    expect(() => new QueueConsumer(queue, handler, options)).toThrow(
      /`idempotency.effects` must be "any" .* or "tables-only" .*; got "tables"/,
    );
  });
});
