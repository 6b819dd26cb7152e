/**
 * Blob-lease table locks: fenced writes stamp the token, refuse a stale holder whose successor
 * already wrote, check the scope and the time left.
 */
import { isFencedWriteRejectedError, isLockNotHeldError, tableLock, type GuardedTable } from "../../../src/index.js";
import { blobService, tableClient, uniqueName } from "../../support/storage.js";

async function setup() {
  const table = tableClient(uniqueName("tg"));
  await table.createTable();
  const locks = blobService().getContainerClient(uniqueName("tgl"));
  const lock = () => tableLock(locks, table, { scope: { partitionKey: "p" }, durationInSeconds: 15 });
  return { table, locks, lock };
}

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
});
