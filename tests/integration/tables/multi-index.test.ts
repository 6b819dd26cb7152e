/**
 * Multi-index rows against a real Azurite: the marathon record kept under BIB: and AGE: RowKeys,
 * written, moved and deleted together with ETag checks, and consistent when several processes
 * change it at once.
 */
import type { TableClient } from "@azure/data-tables";
import { decorrelatedJitterBackoff, type BackoffStrategy } from "../../../src/retry/index.js";
import {
  isMultiIndexConflictError,
  isTransactionRefusedError,
  type MultiIndexConflictError,
} from "../../../src/tables/index.js";
import { spawnWorker } from "../../support/processes.js";
import { tableClient, uniqueName } from "../../support/storage.js";
import { runners, type Runner } from "./workers/runners.js";

const PARTITION = "2011 New York City Marathon__Full";
const john: Runner = { race: "2011 New York City Marathon", bib: 1234, name: "John", gender: "M", age: 55, count: 0 };

async function newTable(prefix: string): Promise<TableClient> {
  const client = tableClient(uniqueName(prefix));
  await client.createTable();
  return client;
}

async function rows(client: TableClient): Promise<Record<string, unknown>[]> {
  const all: Record<string, unknown>[] = [];
  for await (const row of client.listEntities()) all.push(row);
  return all;
}

describe("multi-index rows", () => {
  it("writes one record under both RowKeys in one transaction, and finds it by either", async () => {
    const client = await newTable("mirows");
    const table = runners(client);
    const created = await table.create(john);
    expect(created.rowKeys).toEqual({ BIB: "BIB:01234__John", AGE: "AGE:055__01234__John" });
    const stored = await rows(client);
    expect(stored.map((r) => r.rowKey).sort()).toEqual(["AGE:055__01234__John", "BIB:01234__John"]);
    expect(new Set(stored.map((r) => r._version)).size).toBe(1);
    expect(stored.every((r) => r.partitionKey === PARTITION && r.name === "John" && r.age === 55)).toBe(true);

    const byBib = await table.get(PARTITION, "BIB", "01234__John");
    const byAge = await table.get(PARTITION, "AGE", "055__01234__John");
    expect(byBib?.record).toEqual(john);
    expect(byAge?.etags).toEqual(byBib?.etags);
    expect(byBib?.etags.BIB).toBe(created.etags.BIB);
    expect(await table.get(PARTITION, "BIB", "09999__Nobody")).toBeUndefined();

    const fiftyFive = await table.list(PARTITION, "AGE", { keyPrefix: "055" });
    expect(fiftyFive.entries.map((e) => e.key)).toEqual(["055__01234__John"]);
    expect(fiftyFive.roundTrips).toBe(1);
  });

  it("moves a row whose key changes, and removes the old one", async () => {
    const client = await newTable("mimove");
    const table = runners(client);
    const created = await table.create(john);
    const older = await table.update(created, { ...john, age: 56 });
    expect(older.rowKeys.AGE).toBe("AGE:056__01234__John");
    const stored = await rows(client);
    expect(stored.map((r) => r.rowKey).sort()).toEqual(["AGE:056__01234__John", "BIB:01234__John"]);
    expect(stored.every((r) => r.age === 56 && r._version === older.version)).toBe(true);
    expect((await table.get(PARTITION, "AGE", "056__01234__John"))?.etags).toEqual(older.etags);
  });

  it("refuses a change based on a stale read, writing nothing", async () => {
    const client = await newTable("mistale");
    const table = runners(client);
    const created = await table.create(john);
    const winner = await table.update(created, { ...john, count: 1 });
    for (const attempt of [
      () => table.update(created, { ...john, count: 99 }), // same keys
      () => table.update(created, { ...john, age: 60 }), // moves the AGE row
      () => table.delete(created),
    ]) {
      const error = (await attempt().catch((e: unknown) => e)) as MultiIndexConflictError;
      expect(isMultiIndexConflictError(error)).toBe(true);
      expect(error).toMatchObject({
        code: "MultiIndexConflict",
        reason: "changed",
        partitionKey: PARTITION,
        statusCode: 412,
      });
    }
    const stored = await rows(client);
    expect(stored).toHaveLength(2);
    expect(stored.every((r) => r.count === 1 && r.age === 55 && r._version === winner.version)).toBe(true);
  });

  it("deletes every row together, and a later create reuses a tombstone left behind", async () => {
    const client = await newTable("midelete");
    const table = runners(client);
    const created = await table.create(john);
    await table.delete(created);
    expect(await rows(client)).toHaveLength(0);
    expect(await table.get(PARTITION, "BIB", "01234__John")).toBeUndefined();

    // A tombstone a crashed writer left under the AGE key does not block a new record.
    await client.createEntity({
      partitionKey: PARTITION,
      rowKey: "AGE:055__01234__John",
      _deleted: true,
      _version: "crashed",
    });
    expect(await table.get(PARTITION, "AGE", "055__01234__John")).toBeUndefined();
    const again = await table.create(john);
    expect((await rows(client)).every((r) => r._version === again.version && r._deleted === undefined)).toBe(true);
  });

  it("creates over a tombstone that another writer's purge removes meanwhile", async () => {
    const client = await newTable("mipurge");
    const table = runners(client);
    const created = await table.create(john);
    // The move leaves a tombstone at AGE:055 (its purge is held back, as if that writer were slow).
    const noPurge = Object.assign(Object.create(client) as TableClient, { deleteEntity: async () => ({}) });
    await runners(noPurge).update(created, { ...john, age: 56 });
    expect((await client.getEntity(PARTITION, "AGE:055__01234__John"))._deleted).toBe(true);
    // Another record takes the old keys; the slow writer's purge runs right after this create reads the tombstone.
    const racing = Object.assign(Object.create(client) as TableClient, {
      getEntity: async (partitionKey: string, rowKey: string, options?: object) => {
        const row = await client.getEntity(partitionKey, rowKey, options);
        if (row._deleted === true) await client.deleteEntity(partitionKey, rowKey, { etag: row.etag });
        return row;
      },
    });
    const other = { ...john, bib: 1234, name: "John", age: 55, gender: "F", count: 5 };
    await runners(client).delete((await table.get(PARTITION, "BIB", "01234__John"))!); // frees BIB:01234 too
    const again = await runners(racing).create(other);
    const stored = await table.get(PARTITION, "AGE", "055__01234__John");
    expect(stored?.version).toBe(again.version);
    expect(stored?.record.gender).toBe("F");
  });

  it("refuses a key held by another live record, and a move to another partition", async () => {
    const client = await newTable("mitaken");
    const table = runners(client);
    const created = await table.create(john);
    const clash = (await table.create({ ...john, gender: "F" }).catch((e: unknown) => e)) as MultiIndexConflictError; // same BIB and AGE keys
    expect(clash).toMatchObject({ reason: "exists", statusCode: 409 });
    expect(clash.rowKey).toMatch(/^(BIB|AGE):/);
    const moved = await table.update(created, { ...john, race: "2012 Boston Marathon" }).catch((e: unknown) => e);
    expect(isTransactionRefusedError(moved)).toBe(true);
    expect(moved).toMatchObject({ reason: "multiple-partitions" });
    expect(await rows(client)).toHaveLength(2);
  });

  it("refuses records with reserved properties or bad keys before sending", async () => {
    const client = await newTable("mibad");
    const table = runners(client);
    await expect(table.create({ ...john, _version: "mine" })).rejects.toThrow(/reserved/);
    await expect(table.create({ ...john, name: "J/ohn" })).resolves.toBeDefined(); // compositeKey escapes it
    await expect(table.create({ ...john, name: "x".repeat(600) })).rejects.toMatchObject({
      code: "InvalidTableKey",
      keyName: "rowKey",
      rule: "too-long",
    });
    await expect(table.get(PARTITION, "NOPE", "x")).rejects.toThrow(/unknown index/);
    expect(await rows(client)).toHaveLength(2); // only the J/ohn record
  });

  it("notices rows that disagree, instead of returning a mixed record", async () => {
    const client = await newTable("mimixed");
    const table = runners(client);
    await table.create(john);
    await client.updateEntity(
      { partitionKey: PARTITION, rowKey: "AGE:055__01234__John", _version: "someone-else" },
      "Merge",
    );
    await expect(table.get(PARTITION, "BIB", "01234__John")).rejects.toMatchObject({
      code: "MultiIndexConflict",
      reason: "changed",
    });
  });

  it("stays consistent while two processes and two in-process writers change it at once", async () => {
    const client = await newTable("miconc");
    const table = runners(client);
    const ann: Runner = { race: "2011 New York City Marathon", bib: 7, name: "Ann", gender: "F", age: 30, count: 0 };
    await table.create(ann);
    const perProcess = 15;
    const perLocal = 10;
    const processes = [1, 2].map((id) =>
      spawnWorker("tests/integration/tables/workers/multi-index-worker.ts", [
        client.tableName,
        PARTITION,
        String(perProcess),
        String(id),
      ]),
    );
    await Promise.all(
      processes.map((p) => p.waitFor((m) => typeof m === "object" && m !== null && "ready" in m, 60_000)),
    );
    await client.createEntity({ partitionKey: "control", rowKey: "go" }); // every writer starts now
    let localConflicts = 0;
    const inner = decorrelatedJitterBackoff({ baseInMs: 5, maxInMs: 200 });
    const counting: BackoffStrategy = {
      name: "counting",
      delayInMs: (retry, previous) => (localConflicts++, inner.delayInMs(retry, previous)),
    };
    const local = [1, 2].map(async () => {
      for (let i = 0; i < perLocal; i++) {
        await table.modify(
          PARTITION,
          "BIB",
          "00007__Ann",
          (r) => ({ ...r, count: r.count + 1, age: i % 2 ? 30 + ((r.count + 1) % 4) : r.age }),
          {
            maxAttempts: 100,
            backoff: counting,
          },
        );
      }
    });
    const reports = await Promise.all(
      processes.map((p) =>
        p.waitFor<{ done: number; conflicts: number }>(
          (m) => typeof m === "object" && m !== null && "done" in m,
          90_000,
        ),
      ),
    );
    await Promise.all(local);
    await Promise.all(processes.map((p) => p.exited));
    expect(reports.map((r) => r.done)).toEqual([perProcess, perProcess]);

    const final = await table.get(PARTITION, "BIB", "00007__Ann");
    expect(final?.record.count).toBe(2 * perProcess + 2 * perLocal); // no increment lost
    const stored = (await rows(client)).filter((r) => r.partitionKey === PARTITION);
    expect(stored).toHaveLength(2); // one BIB row, one AGE row; every vacated AGE row was removed
    expect(stored.map((r) => r.rowKey).sort()).toEqual([
      `AGE:${String(final!.record.age).padStart(3, "0")}__00007__Ann`,
      "BIB:00007__Ann",
    ]);
    expect(new Set(stored.map((r) => JSON.stringify([r._version, r.count, r.age]))).size).toBe(1);
    // The writers did collide: the ETag checks turned the collisions into retries, not lost updates.
    expect(reports.reduce((sum, r) => sum + r.conflicts, localConflicts)).toBeGreaterThan(0);
  }, 120_000);
});
