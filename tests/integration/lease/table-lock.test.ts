/**
 * Blob-lease table locks: fenced writes stamp the token, refuse a stale holder whose successor
 * already wrote, check the scope and the time left.
 */
import {
  isFencedWriteOutcomeUnknownError,
  isFencedWriteRejectedError,
  isLockNotHeldError,
  tableLock,
  type GuardedTable,
} from "../../../src/lease/index.js";
import { SDK_SINGLE_ATTEMPT } from "../../../src/retry/index.js";
import { statusOf } from "../../../src/error-codes.js";
import { blobService, faultProxyFor, tableClient, uniqueName } from "../../support/storage.js";

async function setup() {
  const table = tableClient(uniqueName("tg"));
  await table.createTable();
  const locks = blobService().getContainerClient(uniqueName("tgl"));
  const lock = () => tableLock(locks, table, { scope: { partitionKey: "p" }, durationInSeconds: 15 });
  return { table, locks, lock };
}

/** The table behind a fault proxy (SDK retries on, quick; or off), its lock, and the table read directly. */
async function flakySetup({ sdkRetries = true } = {}) {
  const { table, locks } = await setup();
  const { proxy, connectionString } = await faultProxyFor("table");
  const flaky = tableClient(
    table.tableName,
    connectionString,
    sdkRetries ? {} : { retryOptions: SDK_SINGLE_ATTEMPT.tables },
  );
  const lock = tableLock(locks, flaky, {
    scope: { partitionKey: "p" },
    durationInSeconds: 15,
    requestTimeoutInMs: 500,
  });
  const writes = () => proxy.requests.filter((r) => r.method !== "GET");
  return { table, proxy, lock, writes };
}

const isEntityWrite = { method: ["PUT", "MERGE", "PATCH", "POST", "DELETE"], path: /\(PartitionKey=|tg[0-9a-f]+\b/ };

describe("table locks", () => {
  it("writes stamp the fencing token; upsert creates, update and delete go through", async () => {
    const { table, lock } = await setup();
    await lock().withLock(async (guarded) => {
      await guarded.createEntity({ partitionKey: "p", rowKey: "a", n: 1 });
      await guarded.upsertEntity({ partitionKey: "p", rowKey: "b", n: 1 });
      await guarded.upsertEntity({ partitionKey: "p", rowKey: "b", n: 2 });
      await guarded.updateEntity({ partitionKey: "p", rowKey: "a", n: 3 });
    });
    expect(await table.getEntity("p", "a")).toMatchObject({ n: 3, lockFencingToken: 1 });
    expect(await table.getEntity("p", "b")).toMatchObject({ n: 2, lockFencingToken: 1 });
    await lock().withLock(async (guarded) => {
      await guarded.deleteEntity("p", "a");
      await guarded.updateEntity({ partitionKey: "p", rowKey: "b", n: 4 }, "Merge");
    });
    expect(await table.getEntity("p", "b")).toMatchObject({ n: 4, lockFencingToken: 2 });
    await expect(table.getEntity("p", "a")).rejects.toMatchObject({ statusCode: 404 });
  });

  it("a stale holder (its lease broken, its successor already wrote) is refused by the fence, with or without its ETag", async () => {
    const { table, lock } = await setup();
    await table.createEntity({ partitionKey: "p", rowKey: "r", owner: "nobody" });
    const stale = await lock().acquire();
    const read = await stale.getEntity<{ owner: string }>("p", "r");

    await lock().lock.break(); // an operator frees the lock; the stale holder has not renewed yet
    await lock().withLock(async (successor) => {
      const entity = await successor.getEntity<{ owner: string }>("p", "r");
      await successor.updateEntity({ ...entity, owner: "successor" }, "Replace", { etag: entity.etag });
    });

    expect(stale.handle.status).toBe("held"); // it does not know yet: only the fence can stop it
    const attempts: Array<[string, (g: GuardedTable) => Promise<unknown>]> = [
      ["update with its etag", (g) => g.updateEntity({ ...read, owner: "stale" }, "Replace", { etag: read.etag })],
      ["update", (g) => g.updateEntity({ partitionKey: "p", rowKey: "r", owner: "stale" })],
      ["upsert", (g) => g.upsertEntity({ partitionKey: "p", rowKey: "r", owner: "stale" }, "Replace")],
      ["delete", (g) => g.deleteEntity("p", "r")],
    ];
    for (const [what, attempt] of attempts) {
      const error = await attempt(stale).catch((e: unknown) => e);
      expect([what, isFencedWriteRejectedError(error)]).toEqual([what, true]);
      expect(error).toMatchObject({
        fencingToken: stale.handle.fencingToken,
        currentToken: stale.handle.fencingToken! + 1,
      });
    }
    expect(await table.getEntity("p", "r")).toMatchObject({ owner: "successor" });
    await stale.handle.release();
  });

  it("a write outside the lock's scope, or with too little time left, is refused before any request", async () => {
    const { lock } = await setup();
    const guarded = await lock().acquire();
    await expect(guarded.upsertEntity({ partitionKey: "other", rowKey: "r" })).rejects.toThrow(RangeError);
    const tooLittle = tableLock(blobService().getContainerClient(uniqueName("tgl")), guarded.table, {
      durationInSeconds: 15,
      minTimeLeftInMs: 20_000,
    });
    const short = await tooLittle.acquire();
    const error = await short.upsertEntity({ partitionKey: "p", rowKey: "r" }).catch((e: unknown) => e);
    expect(isLockNotHeldError(error)).toBe(true);
    expect(error).toMatchObject({ code: "LockNotHeld" });
    await short.handle.release();
    await guarded.handle.release();
    await expect(guarded.upsertEntity({ partitionKey: "p", rowKey: "r" })).rejects.toMatchObject({
      code: "LockNotHeld",
    });
  });

  it("bad scope options are refused", async () => {
    const { table, locks } = await setup();
    expect(() => tableLock(locks, table, { scope: { rowKey: "r" } })).toThrow(/partitionKey/);
    expect(() => tableLock(locks, table, { scope: { partitionKey: "" } })).toThrow(TypeError);
    expect(() => tableLock(locks, table, { minTimeLeftInMs: -1 })).toThrow(RangeError);
  });

  it("a stale holder that read its successor's entity and writes it back with that ETag is refused by the fence", async () => {
    const { table, lock } = await setup();
    await table.createEntity({ partitionKey: "p", rowKey: "r", amount: 0 });
    const stale = await lock().acquire();
    await lock().lock.break({ breakPeriodInSeconds: 0 });
    const successor = await lock().acquire({ timeoutInMs: 5_000 });
    await successor.upsertEntity({ partitionKey: "p", rowKey: "r", amount: 100 });

    expect(stale.handle.status).toBe("held"); // it does not know yet
    const current = await stale.getEntity<{ amount: number }>("p", "r"); // the successor's version, and its ETag
    const error = await stale
      .updateEntity({ ...current, amount: current.amount + 1 }, "Replace", { etag: current.etag })
      .catch((e: unknown) => e);
    expect(isFencedWriteRejectedError(error)).toBe(true);
    expect(error).toMatchObject({ currentToken: successor.handle.fencingToken, mayHaveBeenApplied: false });
    expect(await table.getEntity("p", "r")).toMatchObject({
      amount: 100,
      lockFencingToken: successor.handle.fencingToken,
    });
    await successor.handle.release();
    await stale.handle.release();
  });

  it.each([
    ["the SDK resends it, gets 412, and the read-back finds the write's own id", true, ["dropResponse", "forwarded"]],
    ["SDK retries off: the read-back finds the write's own id", false, ["dropResponse"]],
  ])(
    "a fenced update (caller's ETag) whose answer was lost is applied once and resolves: %s [Azurite only]",
    async (_, sdkRetries, sent) => {
      const { table, proxy, lock, writes } = await flakySetup({ sdkRetries });
      await using _proxy = proxy;
      await table.createEntity({ partitionKey: "p", rowKey: "counter", value: 0 });
      await lock.withLock(async (guarded) => {
        const counter = await guarded.getEntity<{ value: number }>("p", "counter");
        proxy.addRule({ ...isEntityWrite, times: 1, action: { type: "dropResponse" } });
        await guarded.updateEntity({ ...counter, value: counter.value + 1 }, "Replace", { etag: counter.etag });
      });
      expect(await table.getEntity("p", "counter")).toMatchObject({ value: 1, lockFencingToken: 1 });
      expect(writes().map((r) => r.outcome)).toEqual(sent);
    },
  );

  it("a fenced delete, create and upsert whose answers were lost resolve (no 404, no 409) [Azurite only]", async () => {
    const { table, proxy, lock } = await flakySetup();
    await using _proxy = proxy;
    await table.createEntity({ partitionKey: "p", rowKey: "gone", value: 0 });
    await lock.withLock(async (guarded) => {
      proxy.addRule({ ...isEntityWrite, times: 3, action: { type: "dropResponse" } });
      await guarded.deleteEntity("p", "gone");
      await guarded.createEntity({ partitionKey: "p", rowKey: "new", value: 1 });
      await guarded.upsertEntity({ partitionKey: "p", rowKey: "upserted", value: 2 });
    });
    expect(statusOf(await table.getEntity("p", "gone").catch((e: unknown) => e))).toBe(404);
    expect(await table.getEntity("p", "new")).toMatchObject({ value: 1, lockFencingToken: 1 });
    expect(await table.getEntity("p", "upserted")).toMatchObject({ value: 2, lockFencingToken: 1 });
    expect(proxy.requests.filter((r) => r.outcome === "dropResponse")).toHaveLength(3);
  });

  it("when neither the write nor the read-back gets an answer, the outcome is unknown and says which write id to look for [Azurite only]", async () => {
    const { table, proxy, lock } = await flakySetup({ sdkRetries: false });
    await using _proxy = proxy;
    await table.createEntity({ partitionKey: "p", rowKey: "r", value: 0 });
    const error = await lock
      .withLock(async (guarded) => {
        let dropped = false;
        const drop = () => (dropped = true);
        proxy.addRule({ ...isEntityWrite, times: 1, when: drop, action: { type: "dropResponse" } });
        proxy.addRule({ method: "GET", when: () => dropped, action: { type: "hang" } }); // then reads never answer
        await guarded.upsertEntity({ partitionKey: "p", rowKey: "r", value: 1 });
      })
      .catch((e: unknown) => e);
    expect(isFencedWriteOutcomeUnknownError(error)).toBe(true);
    const stored = await table.getEntity<{ value: number; lockWriteId: string }>("p", "r");
    expect(stored).toMatchObject({ value: 1, lockWriteId: (error as { writeId: string }).writeId }); // it was applied
  });

  it("fenced writes check the keys before sending anything [Azurite only]", async () => {
    const { proxy, lock } = await flakySetup();
    await using _proxy = proxy;
    const guarded = await lock.acquire();
    proxy.clearLog();
    for (const write of [
      () => guarded.updateEntity({ partitionKey: "p", rowKey: "a/b", n: 1 }),
      () => guarded.upsertEntity({ partitionKey: "p", rowKey: "a#b", n: 1 }),
      () => guarded.createEntity({ partitionKey: "p", rowKey: "x".repeat(513), n: 1 }),
      () => guarded.deleteEntity("p", "tab\there"),
    ]) {
      await expect(write()).rejects.toMatchObject({ name: "TableKeyError", keyName: "rowKey" });
    }
    expect(proxy.requests).toEqual([]);
    await guarded.handle.release();
  });
});
