/**
 * Transactions whose answer is lost (the service applied them; the connection drops before the
 * answer, or a 500/504 comes back after the service applied them): the SDK's resend then meets the
 * transaction's own effect (409, 412), or the library sees only the error. Each write carries a write
 * id, and the read-back recognises it: applied once, reported as applied, never applied twice.
 */
import type { TableClient } from "@azure/data-tables";
import { fixedBackoff, SDK_SINGLE_ATTEMPT } from "../../../src/retry/index.js";
import {
  isTableTransactionError,
  multiIndexTable,
  writeAtomic,
  writeBatch,
  type TableTransactionError,
} from "../../../src/tables/index.js";
import type { FaultAction, FaultProxy } from "../../../src/testing/index.js";
import { faultProxyFor, tableClient, uniqueName } from "../../support/storage.js";

let proxy: FaultProxy;
let viaProxy: string;
beforeAll(async () => ({ proxy, connectionString: viaProxy } = await faultProxyFor("table")));
afterAll(() => proxy.close());

/** A fresh table, and clients on it: directly, through the proxy with SDK retries, and with none. */
async function tables(prefix: string) {
  const direct = tableClient(uniqueName(prefix));
  await direct.createTable();
  return {
    direct,
    retrying: tableClient(direct.tableName, viaProxy),
    single: tableClient(direct.tableName, viaProxy, { retryOptions: SDK_SINGLE_ATTEMPT.tables }),
  };
}

const onNextBatch = (action: FaultAction) => proxy.addRule({ method: "POST", path: /\$batch/, times: 1, action });
const dropNextBatch = () => onNextBatch({ type: "dropResponse" });

async function rowsOf(client: TableClient): Promise<Record<string, unknown>[]> {
  const rows: Record<string, unknown>[] = [];
  for await (const row of client.listEntities()) rows.push(row);
  return rows;
}

interface Lapper {
  bib: number;
  name: string;
  laps: number;
  [key: string]: unknown;
}
const lapOptions = {
  partitionKey: () => "race",
  indexes: { BIB: (r: Lapper) => String(r.bib).padStart(5, "0"), NAME: (r: Lapper) => r.name },
};

describe("a lost $batch answer, resent by the SDK", () => {
  it("multiIndexTable().modify() applies its change once", async () => {
    const { direct, retrying } = await tables("lostmodify");
    await multiIndexTable<Lapper>(direct, lapOptions).create({ bib: 1, name: "ada", laps: 0 });
    let calls = 0;
    dropNextBatch();
    const snapshot = await multiIndexTable<Lapper>(retrying, lapOptions).modify("race", "BIB", "00001", (r) => {
      calls += 1;
      return { ...r, laps: r.laps + 1 };
    });
    expect(calls).toBe(1);
    expect(snapshot?.record.laps).toBe(1);
    const stored = await multiIndexTable<Lapper>(direct, lapOptions).get("race", "BIB", "00001");
    expect(stored?.record.laps).toBe(1);
    expect(stored?.etags).toEqual(snapshot?.etags);
  });

  it("multiIndexTable().create() reports its own record as created, not as a taken key", async () => {
    const { direct, retrying } = await tables("lostcreate");
    dropNextBatch();
    const created = await multiIndexTable<Lapper>(retrying, lapOptions).create({ bib: 2, name: "bob", laps: 0 });
    const stored = await multiIndexTable<Lapper>(direct, lapOptions).get("race", "BIB", "00002");
    expect(stored?.version).toBe(created.version);
    expect(stored?.etags).toEqual(created.etags);
  });

  it("multiIndexTable().delete() reports its own delete as done", async () => {
    const { direct, retrying } = await tables("lostdelete");
    const table = multiIndexTable<Lapper>(retrying, lapOptions);
    const created = await table.create({ bib: 3, name: "cy", laps: 0 });
    dropNextBatch();
    await table.delete(created);
    expect(await multiIndexTable<Lapper>(direct, lapOptions).get("race", "BIB", "00003")).toBeUndefined();
  });

  it("writeAtomic() reports a committed transaction as committed", async () => {
    const { direct, retrying } = await tables("lostatomic");
    dropNextBatch();
    const result = await writeAtomic(retrying, [
      ["create", { partitionKey: "transfer-1", rowKey: "debit", amount: -25 }],
      ["create", { partitionKey: "transfer-1", rowKey: "credit", amount: 25 }],
    ]);
    const rows = await rowsOf(direct);
    expect(rows.map((r) => [r.rowKey, r.amount])).toEqual([
      ["credit", 25],
      ["debit", -25],
    ]);
    expect(result.etags).toEqual([rows[1]!.etag, rows[0]!.etag]);
  });

  it("writeBatch() reports a committed transaction as committed", async () => {
    const { direct, retrying } = await tables("lostbatch");
    dropNextBatch();
    const result = await writeBatch(retrying, [
      ["create", { partitionKey: "p", rowKey: "a" }],
      ["create", { partitionKey: "p", rowKey: "b" }],
    ]);
    expect(result).toMatchObject({ ok: true, committedActions: 2 });
    expect(await rowsOf(direct)).toHaveLength(2);
  });

  it("still reports a real conflict as a definite failure", async () => {
    const { direct, retrying } = await tables("realconflict");
    await direct.createEntity({ partitionKey: "p", rowKey: "taken", by: "someone else" });
    const error = (await writeAtomic(retrying, [
      ["create", { partitionKey: "p", rowKey: "fresh" }],
      ["create", { partitionKey: "p", rowKey: "taken" }],
    ]).catch((e: unknown) => e)) as TableTransactionError;
    expect(isTableTransactionError(error)).toBe(true);
    expect(error).toMatchObject({ statusCode: 409, failedActionIndex: 1, mayHaveBeenApplied: false });
    expect((await rowsOf(direct)).map((r) => r.rowKey)).toEqual(["taken"]);
  });
});

describe("a 500 or 504 answer to a transaction", () => {
  it.each([
    [500, "OperationTimedOut"],
    [504, "GatewayTimeout"],
  ])("after the service applied it (%d): the read-back finds it applied", async (statusCode, serviceCode) => {
    const { direct, single } = await tables(`applied${statusCode}`);
    onNextBatch({ type: "statusAfterApply", statusCode, serviceCode });
    const result = await writeAtomic(single, [["create", { partitionKey: "p", rowKey: "a", n: 1 }]]);
    const rows = await rowsOf(direct);
    expect(rows).toHaveLength(1);
    expect(result.etags).toEqual([rows[0]!.etag]);
  });

  it("that the service did not apply: may still land, so it is reported as may-have-been-applied", async () => {
    const { direct, single } = await tables("timeout504");
    onNextBatch({ type: "status", statusCode: 504, serviceCode: "GatewayTimeout" });
    const error = (await writeAtomic(single, [["create", { partitionKey: "p", rowKey: "a" }]]).catch(
      (e: unknown) => e,
    )) as TableTransactionError;
    expect(isTableTransactionError(error)).toBe(true);
    expect(error).toMatchObject({ statusCode: 504, mayHaveBeenApplied: true });
    expect(await rowsOf(direct)).toHaveLength(0);
  });

  it("a modify() whose answer was a 500 after the service applied it is applied once", async () => {
    const { direct, single } = await tables("modify500");
    await multiIndexTable<Lapper>(direct, lapOptions).create({ bib: 1, name: "ada", laps: 0 });
    onNextBatch({ type: "statusAfterApply", statusCode: 500, serviceCode: "OperationTimedOut" });
    const snapshot = await multiIndexTable<Lapper>(single, lapOptions).modify("race", "BIB", "00001", (r) => ({
      ...r,
      laps: r.laps + 1,
    }));
    expect(snapshot?.record.laps).toBe(1);
    expect((await multiIndexTable<Lapper>(direct, lapOptions).get("race", "BIB", "00001"))?.record.laps).toBe(1);
  });
});

describe("another writer between the lost answer and the resend", () => {
  it("multi-index: a write made on top of the lost one still shows it (history), so modify() applies once", async () => {
    const { direct, retrying } = await tables("lostcontended");
    await multiIndexTable<Lapper>(direct, lapOptions).create({ bib: 1, name: "ada", laps: 0 });
    const increment = (r: Lapper) => ({ ...r, laps: r.laps + 1 });
    // Before the SDK resends the (applied) transaction, another writer reads the record and changes it.
    beforeSecondBatch(retrying, () =>
      multiIndexTable<Lapper>(direct, lapOptions).modify("race", "BIB", "00001", increment),
    );
    dropNextBatch();
    let calls = 0;
    const mine = await multiIndexTable<Lapper>(retrying, lapOptions).modify("race", "BIB", "00001", (r) => {
      calls += 1;
      return increment(r);
    });
    expect(calls).toBe(1);
    expect(mine?.record.laps).toBe(1);
    expect((await multiIndexTable<Lapper>(direct, lapOptions).get("race", "BIB", "00001"))?.record.laps).toBe(2);
  });

  it("writeAtomic with the library's retry: says it may have been applied, never that nothing was", async () => {
    const { direct, single } = await tables("lostatomiccontended");
    const start = await direct.createEntity({ partitionKey: "p", rowKey: "counter", n: 0 });
    // Before the library's retry, another writer reads the counter (the lost write's n: 1) and adds one.
    beforeSecondBatch(single, async () => {
      const read = await direct.getEntity<{ n: number }>("p", "counter");
      await writeAtomic(direct, [
        ["update", { partitionKey: "p", rowKey: "counter", n: read.n + 1 }, "Replace", { etag: read.etag }],
      ]);
    });
    dropNextBatch();
    const error = (await writeAtomic(
      single,
      [["update", { partitionKey: "p", rowKey: "counter", n: 1 }, "Replace", { etag: start.etag! }]],
      { retry: { maxRetries: 2, backoff: fixedBackoff({ delayInMs: 1 }) } },
    ).catch((e: unknown) => e)) as TableTransactionError;
    expect(isTableTransactionError(error)).toBe(true);
    expect(error).toMatchObject({ statusCode: 412, mayHaveBeenApplied: true, attempts: 2 });
    expect(error.message).toMatch(/another write changed its entity/);
    expect((await direct.getEntity<{ n: number }>("p", "counter")).n).toBe(2);
  });
});

/** Runs `write` (another writer) just before `client` sends its second $batch request. */
function beforeSecondBatch(client: TableClient, write: () => Promise<unknown>): void {
  let sends = 0;
  client.pipeline.addPolicy(
    {
      name: "another-writer-first",
      async sendRequest(request, next) {
        if (request.url.includes("$batch") && ++sends === 2) await write();
        return next(request);
      },
    },
    { afterPhase: "Retry" },
  );
}
