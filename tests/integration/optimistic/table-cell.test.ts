/**
 * Table entity cells against Azurite: Replace and Merge, creation races, racing writers on several
 * clients, typed values, bad keys and oversized entities refused before any request (counted at the
 * network), conditional reads and last writer wins.
 */
import type { TableClient } from "@azure/data-tables";
import {
  fixedBackoff,
  isTableKeyError,
  isTableEntityTooLargeError,
  optimisticUpdate,
  readCell,
  tableEntityCell,
  writeLastWriterWins,
} from "../../../src/index.js";
import { faultProxyFor, tableClient, uniqueName } from "../../support/storage.js";

const quick = { backoff: fixedBackoff({ delayInMs: 2 }) };
const tableName = uniqueName("opttable");
let table: TableClient;

beforeAll(async () => {
  table = tableClient(tableName);
  await table.createTable();
});
afterAll(async () => {
  await table.deleteTable();
});

describe("table entity cells", () => {
  it("Replace removes properties left out; Merge keeps them", async () => {
    const replace = tableEntityCell<Record<string, unknown>>(table, "modes", "replace");
    await optimisticUpdate(replace, () => ({ a: 1, b: 2 }));
    await optimisticUpdate(replace, () => ({ a: 10 }), { skipReadAfterOwnWrite: false });
    expect(await table.getEntity("modes", "replace")).not.toHaveProperty("b");

    const merge = tableEntityCell<Record<string, unknown>>(table, "modes", "merge", { mode: "Merge" });
    await optimisticUpdate(merge, () => ({ a: 1, b: 2 }));
    await optimisticUpdate(merge, () => ({ a: 10 }));
    expect(await table.getEntity("modes", "merge")).toMatchObject({ a: 10, b: 2 });
    // the cached version after a Merge is what the service holds, so the next update sees `b`
    expect(await optimisticUpdate(merge, (current) => ({ ...current, c: 3 }))).toMatchObject({
      value: { a: 10, b: 2, c: 3 },
    });
  });

  it("keeps typed values (Date, Int64, binary, boolean) through an update", async () => {
    const cell = tableEntityCell<Record<string, unknown>>(table, "types", "1");
    const when = new Date("2024-05-06T07:08:09.000Z");
    await optimisticUpdate(cell, () => ({
      when,
      big: { value: "9007199254740993", type: "Int64" },
      blob: new Uint8Array([1, 2, 3]),
      ok: true,
      n: 1,
    }));
    await optimisticUpdate(cell, (current) => ({ ...current, n: (current!["n"] as number) + 1 }), {
      skipReadAfterOwnWrite: false,
    });
    const stored = await table.getEntity<Record<string, unknown>>("types", "1");
    expect(stored).toMatchObject({ when, big: 9007199254740993n, ok: true, n: 2 }); // Int64 comes back as a bigint
    expect([...(stored["blob"] as Uint8Array)]).toEqual([1, 2, 3]);
  });

  it("writers on several clients racing on one entity lose no update, creation race included", async () => {
    const clients = Array.from({ length: 6 }, () => tableClient(tableName));
    await Promise.all(
      clients.map(async (client) => {
        const cell = tableEntityCell<{ count: number }>(client, "race", "counter");
        for (let i = 0; i < 5; i++)
          await optimisticUpdate(cell, (c) => ({ count: (c?.count ?? 0) + 1 }), {
            ...quick,
            coalesce: false,
            maxAttempts: 100,
          });
      }),
    );
    expect(await table.getEntity("race", "counter")).toMatchObject({ count: 30 });
  });

  it("refuses keys the service forbids before any request", async () => {
    const { proxy, connectionString } = await faultProxyFor("table");
    await using _ = proxy;
    const client = tableClient(tableName, connectionString);
    for (const [pk, rk] of [
      ["a/b", "r"],
      ["p", "x#y"],
      ["p", "what?"],
      ["back\\slash", "r"],
      ["p", "tab\t"],
      ["p", "c1\u0085"],
    ] as const) {
      let error: unknown;
      try {
        tableEntityCell(client, pk, rk);
      } catch (e) {
        error = e;
      }
      expect(isTableKeyError(error)).toBe(true);
    }
    expect(proxy.requests).toHaveLength(0);
  });

  it("refuses an entity over 1 MiB, or with a value over 64 KiB, before writing anything", async () => {
    const { proxy, connectionString } = await faultProxyFor("table");
    await using _ = proxy;
    const client = tableClient(tableName, connectionString);
    const cell = tableEntityCell<Record<string, unknown>>(client, "big", "1");
    const huge: Record<string, string> = {};
    for (let i = 0; i < 20; i++) huge[`part${i}`] = "x".repeat(30_000);

    const lww = await writeLastWriterWins(cell, huge).catch((e: unknown) => e);
    expect(isTableEntityTooLargeError(lww)).toBe(true);
    expect(lww).toMatchObject({ code: "EntityTooLarge" });
    expect(proxy.requests).toHaveLength(0);

    const update = await optimisticUpdate(cell, () => huge).catch((e: unknown) => e);
    expect(update).toMatchObject({ code: "EntityTooLarge" });
    await expect(optimisticUpdate(cell, () => ({ text: "y".repeat(40_000) }))).rejects.toMatchObject({
      code: "PropertyValueTooLarge",
    });
    expect(proxy.requests.map((r) => r.method)).toEqual(["GET", "GET"]); // the reads, no write
    await expect(table.getEntity("big", "1")).rejects.toMatchObject({ statusCode: 404 });
  });

  it("refuses values that are not property bags, and the reserved property name", async () => {
    const cell = tableEntityCell<Record<string, unknown>>(table, "bad", "1");
    await expect(optimisticUpdate(cell, () => [1, 2] as never)).rejects.toThrow(/object of properties/);
    await expect(optimisticUpdate(cell, () => ({ nested: { deep: 1 } }))).rejects.toThrow(/cannot store/);
    await expect(optimisticUpdate(cell, () => ({ asc_optimistic: "x" }))).rejects.toThrow(/reserved/);
    await expect(optimisticUpdate(cell, () => ({ rowKey: "2" }))).rejects.toThrow(/cannot move an entity/);
  });

  it("readCell with ifNoneMatch; last writer wins, with and without mustExist", async () => {
    const cell = tableEntityCell<{ email: string }>(table, "customers", "42");
    expect(await readCell(cell)).toEqual({ exists: false, changed: true });
    await expect(writeLastWriterWins(cell, { email: "a@contoso.org" }, { mustExist: true })).rejects.toMatchObject({
      statusCode: 404,
    });
    const { etag } = await writeLastWriterWins(cell, { email: "a@contoso.org" });
    expect(await readCell(cell, { ifNoneMatch: etag })).toEqual({ exists: true, changed: false, etag });
    await table.updateEntity({ partitionKey: "customers", rowKey: "42", email: "b@contoso.org" }, "Replace", {
      etag: "*",
    });
    expect(await readCell(cell, { ifNoneMatch: etag })).toMatchObject({
      changed: true,
      value: { email: "b@contoso.org" },
    });
    const result = await optimisticUpdate(cell, (c) => ({ email: c!.email.toUpperCase() }), quick);
    expect(result).toMatchObject({ value: { email: "B@CONTOSO.ORG" } });
  });
});
