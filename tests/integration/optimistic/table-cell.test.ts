/**
 * Table entity cells against Azurite: Replace and Merge, creation races, racing writers on several
 * clients, typed values, bad keys and oversized entities refused before any request (counted at the
 * network), conditional reads and last writer wins.
 */
import type { TableClient } from "@azure/data-tables";
import { fixedBackoff } from "../../../src/retry/index.js";
import { isTableKeyError } from "../../../src/tables/index.js";
import {
  isTableEntityTooLargeError,
  optimisticUpdate,
  readCell,
  tableEntityCell,
  writeLastWriterWins,
} from "../../../src/optimistic/index.js";
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

  it("refuses keys the service forbids before any request [Azurite only]", async () => {
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

  it("refuses an entity over 1 MiB, or with a value over 64 KiB, before writing anything [Azurite only]", async () => {
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

describe("issue 11 regressions: Merge mode and cell identity", () => {
  it("Merge mode with coalescing: every caller's partial value is stored, each is handed the whole entity (defect 1)", async () => {
    await table.createEntity({ partitionKey: "merge-coalesce", rowKey: "1", a: 0, b: 0, counter: 7 });
    const cell = tableEntityCell<{ a?: number; b?: number; counter?: number }>(table, "merge-coalesce", "1", {
      mode: "Merge",
    });
    const seen: unknown[] = [];
    const results = await Promise.all([
      optimisticUpdate(cell, () => ({ a: 1 })),
      optimisticUpdate(cell, (current) => {
        seen.push(current);
        return { counter: current!.counter! + 1 };
      }),
      optimisticUpdate(cell, (current) => {
        seen.push(current);
        return { b: 2 };
      }),
    ]);
    expect(results.map((r) => [r.written, r.coalesced])).toEqual([
      [true, 3],
      [true, 3],
      [true, 3],
    ]);
    expect(seen).toEqual([
      { a: 1, b: 0, counter: 7 },
      { a: 1, b: 0, counter: 8 },
    ]);
    expect(await table.getEntity("merge-coalesce", "1")).toMatchObject({ a: 1, b: 2, counter: 8 });
    // ... and the cache holds the whole entity: the next update (skipping its read) sees every property
    await optimisticUpdate(cell, (current) => {
      seen.push(current);
      return { counter: current!.counter! + 1 };
    });
    expect(seen.at(-1)).toEqual({ a: 1, b: 2, counter: 8 });
    expect(await table.getEntity("merge-coalesce", "1")).toMatchObject({ a: 1, b: 2, counter: 9 });
  });

  it("last writer wins on a Merge cell leaves no partial value for the next update to start from (defect 2)", async () => {
    await table.createEntity({ partitionKey: "merge-lww", rowKey: "1", counter: 41, email: "old@contoso.org" });
    const cell = tableEntityCell<{ counter?: number; email?: string }>(table, "merge-lww", "1", { mode: "Merge" });
    await writeLastWriterWins(cell, { email: "new@contoso.org" }); // Insert or Merge: counter stays 41
    let seen: unknown;
    await optimisticUpdate(cell, (current) => {
      seen = current;
      return { ...current, counter: (current?.counter ?? 0) + 1 };
    });
    expect(seen).toEqual({ counter: 41, email: "new@contoso.org" });
    expect(await table.getEntity("merge-lww", "1")).toMatchObject({ counter: 42, email: "new@contoso.org" });
  });

  it("a Replace and a Merge cell on one entity never share a round: each write keeps its own mode", async () => {
    await table.createEntity({ partitionKey: "modes-together", rowKey: "1", a: 0, b: 0 });
    const replace = tableEntityCell<Record<string, unknown>>(table, "modes-together", "1");
    const merge = tableEntityCell<Record<string, unknown>>(table, "modes-together", "1", { mode: "Merge" });
    await Promise.all([
      optimisticUpdate(replace, (current) => ({ ...current, a: 1 }), quick),
      optimisticUpdate(merge, () => ({ b: 2 }), quick),
    ]);
    expect(await table.getEntity("modes-together", "1")).toMatchObject({ a: 1, b: 2 });
  });

  it("keys with the separator in them name different cells (defect 12): no shared round, no shared cache", async () => {
    const first = tableEntityCell<{ owner: string }>(table, "a|b", "c");
    const second = tableEntityCell<{ owner: string }>(table, "a", "b|c");
    expect(first.key).not.toBe(second.key);
    await Promise.all([
      optimisticUpdate(first, () => ({ owner: "first" })),
      optimisticUpdate(second, () => ({ owner: "second" })),
    ]);
    expect(await table.getEntity("a|b", "c")).toMatchObject({ owner: "first" });
    expect(await table.getEntity("a", "b|c")).toMatchObject({ owner: "second" });
    await optimisticUpdate(first, (current) => ({ owner: `${current!.owner}!` }));
    await optimisticUpdate(second, (current) => ({ owner: `${current!.owner}?` }));
    expect(await table.getEntity("a|b", "c")).toMatchObject({ owner: "first!" });
    expect(await table.getEntity("a", "b|c")).toMatchObject({ owner: "second?" });
  });
});
