import { judgeExistingRecord } from "../../../src/idempotency/store.js";
import { buildPoisonMessageText, MAX_MESSAGE_TEXT_LENGTH, siblingQueueUrl } from "../../../src/queue/poison.js";
import { MemoryIdempotencyStore, parsePoisonMessage, poisonQueueNameOf } from "../../../src/index.js";
import { fakeClock } from "../../support/fake-clock.js";

describe("poison messages", () => {
  const message = {
    messageId: "m-1",
    messageText: 'body "quoted"',
    dequeueCount: 5,
    insertedOn: new Date("2025-01-02T03:04:05Z"),
  };

  it("wrap the original text with the reason, and read back", () => {
    const { text, enveloped } = buildPoisonMessageText(message, "orders", "boom", "Oops");
    expect(enveloped).toBe(true);
    expect(parsePoisonMessage(text)).toMatchObject({
      reason: "boom",
      errorCode: "Oops",
      messageText: 'body "quoted"',
      messageId: "m-1",
      dequeueCount: 5,
      sourceQueue: "orders",
      insertedOn: "2025-01-02T03:04:05.000Z",
    });
    expect(parsePoisonMessage("plain text")).toBeUndefined();
    expect(parsePoisonMessage('{"kind":"other"}')).toBeUndefined();
  });

  it("keep a message too large for the envelope as it was, and cut very long reasons", () => {
    const big = { ...message, messageText: "x".repeat(MAX_MESSAGE_TEXT_LENGTH - 10) };
    expect(buildPoisonMessageText(big, "orders", "boom", undefined)).toEqual({
      text: big.messageText,
      enveloped: false,
    });
    const long = parsePoisonMessage(buildPoisonMessageText(message, "orders", "r".repeat(5_000), undefined).text)!;
    expect(long.reason.length).toBeLessThan(2_100);
  });

  it("go to <queue>-poison next to the queue, keeping the query string", () => {
    expect(poisonQueueNameOf("orders")).toBe("orders-poison");
    expect(siblingQueueUrl("http://127.0.0.1:10001/devstoreaccount1/orders", "orders-poison")).toBe(
      "http://127.0.0.1:10001/devstoreaccount1/orders-poison",
    );
    expect(siblingQueueUrl("https://acct.queue.core.windows.net/orders/?sv=1&sig=x", "orders-poison")).toBe(
      "https://acct.queue.core.windows.net/orders-poison/?sv=1&sig=x",
    );
  });
});

describe("claims on an existing record", () => {
  const request = { key: "k", owner: "b", messageId: "m-1", dequeueCount: 2, ttlInMs: 1_000 };
  it.each([
    ["done is done", { status: "done", messageId: "m-1", dequeueCount: 1, expiresOnMs: 2_000 }, "done"],
    [
      "an expired claim is taken over",
      { status: "claimed", messageId: "m-9", dequeueCount: 1, expiresOnMs: 1_000 },
      "take-over",
    ],
    [
      "a live claim for another message is busy",
      { status: "claimed", messageId: "m-9", dequeueCount: 1, expiresOnMs: 2_000 },
      "busy",
    ],
    [
      "a live claim for an earlier delivery of this message is taken over",
      { status: "claimed", messageId: "m-1", dequeueCount: 1, expiresOnMs: 2_000 },
      "take-over",
    ],
    [
      "a live claim for this very delivery is busy",
      { status: "claimed", messageId: "m-1", dequeueCount: 2, expiresOnMs: 2_000 },
      "busy",
    ],
  ] as const)("%s", (_name, record, verdict) => {
    expect(judgeExistingRecord(record, request, 1_000)).toBe(verdict);
  });

  it("the memory store lets a claim expire on its clock, and runs effects with the done mark", async () => {
    let now = 0;
    const store = new MemoryIdempotencyStore({ now: () => now });
    const first = await store.claim({ ...request, owner: "a", dequeueCount: 1 });
    expect(first.status).toBe("claimed");
    now = 999;
    expect(await store.claim({ ...request, messageId: "m-2" })).toMatchObject({ status: "busy", owner: "a" });
    now = 1_000;
    const second = await store.claim({ ...request, messageId: "m-2" });
    expect(second).toMatchObject({ status: "claimed", claim: { takenOverFrom: "a" } });
    const applied: string[] = [];
    if (second.status === "claimed")
      await store.complete(second.claim, { result: 1, effects: [() => applied.push("effect")] });
    expect(applied).toEqual(["effect"]);
    if (first.status === "claimed")
      await expect(store.complete(first.claim, { effects: [() => applied.push("stale")] })).rejects.toThrow(
        /took it over/,
      );
    expect(applied).toEqual(["effect"]);
  });

  it("the memory store drops expired records by itself, once a minute of its clock at most, without purge()", async () => {
    const time = fakeClock();
    const store = new MemoryIdempotencyStore({ now: time.clock.wall, retentionInMs: 3_600_000 });
    for (let i = 0; i < 100; i += 1) {
      const outcome = await store.claim({ ...request, key: `done-${i}`, messageId: `m-${i}` });
      if (outcome.status === "claimed") await store.complete(outcome.claim, { result: { i } });
    }
    await store.claim({ ...request, key: "abandoned", ttlInMs: 30_000 }); // never completed
    expect(store.size).toBe(101);
    time.advance(3_600_000 - 1); // the claim expired long ago; the done records' retention ends in 1 ms
    await store.claim({ ...request, key: "fresh", messageId: "m-fresh" });
    expect(store.inspect("abandoned")).toBeUndefined();
    expect(store.size).toBe(101); // 100 done records and the fresh claim
    time.advance(30_000); // retention over, but not a minute since the last sweep: not dropped yet
    await store.claim({ ...request, key: "later", messageId: "m-later" });
    expect(store.size).toBe(102);
    time.advance(30_000);
    await store.claim({ ...request, key: "last", messageId: "m-last" });
    expect(store.inspect("done-0")).toBeUndefined();
    expect(store.size).toBe(1); // everything else had expired (the claims last 1 s)
  });
});
