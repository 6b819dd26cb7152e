/**
 * Every request the tables toolkit and the outbox send has a client-side time limit: against real
 * Azurite behind the fault proxy, whose `hang` mode never answers (optionally after applying it).
 * A transaction cut off by the limit is a lost answer: read back by its write id, reported committed
 * when it was, or failed with `mayHaveBeenApplied: true`, never applied twice. Queries fail with the
 * typed time-out error.
 *
 * Each test bounds what it waits for with `settles()`: a generous limit, far above the bound, that
 * turns "pending for ever" into a failure instead of a stuck test. No speed claim.
 */
import type { TableClient } from "@azure/data-tables";
import {
  isStorageConcurrencyError,
  isStorageRequestError,
  queryEntities,
  TableOutbox,
  writeAtomic,
  writeBatch,
} from "../../../src/index.js";
import type { FaultProxy } from "../../../src/testing/index.js";
import { faultProxyFor, tableClient, uniqueName } from "../../support/storage.js";
import { settles } from "../../support/settles.js";

const REQUEST_TIMEOUT_IN_MS = 300;

const isBatch = (r: { path: string; method: string }) => r.method === "POST" && r.path.includes("$batch");

let direct: TableClient;
let proxy: FaultProxy;
let flaky: TableClient;

beforeAll(async () => {
  const name = uniqueName("tl");
  direct = tableClient(name);
  await direct.createTable();
  const through = await faultProxyFor("table");
  proxy = through.proxy;
  flaky = tableClient(name, through.connectionString);
});
afterAll(async () => {
  await proxy.close();
  await direct.deleteTable();
});
afterEach(() => proxy.clearRules());

async function rows(partitionKey: string) {
  const found: Record<string, unknown>[] = [];
  for await (const row of direct.listEntities({ queryOptions: { filter: `PartitionKey eq '${partitionKey}'` } }))
    found.push(row);
  return found;
}

describe("tables: client-side time limits [Azurite only]", () => {
  it("writeAtomic whose transaction never gets an answer (not applied) fails with mayHaveBeenApplied, nothing written", async () => {
    const pk = uniqueName("a");
    proxy.addRule({ when: isBatch, action: { type: "hang" } });
    const outcome = await settles(
      writeAtomic(flaky, [["create", { partitionKey: pk, rowKey: "r", n: 1 }]], {
        requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS,
      }),
    );
    expect(outcome.settled).toBe("rejected");
    expect(isStorageConcurrencyError(outcome.error, "TransactionFailed")).toBe(true);
    expect(outcome.error).toMatchObject({ mayHaveBeenApplied: true, transient: true });
    expect(String((outcome.error as Error).message)).toMatch(/no answer/);
    expect(await rows(pk)).toEqual([]);
  });

  it("writeAtomic whose transaction was applied and its answer held back resolves as committed, once", async () => {
    const pk = uniqueName("b");
    proxy.addRule({ when: isBatch, times: 1, action: { type: "hang", afterApply: true } });
    const outcome = await settles(
      writeAtomic(flaky, [["create", { partitionKey: pk, rowKey: "r", n: 1 }]], {
        requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS,
        retry: { maxRetries: 2 }, // a resend would meet its own entity (409): the read-back decides
      }),
    );
    expect(outcome.settled).toBe("resolved");
    expect(await rows(pk)).toHaveLength(1);
  });

  it("writeBatch reports a hung transaction as failed with mayHaveBeenApplied, and goes on with the other partitions", async () => {
    const [hung, fine] = [uniqueName("c"), uniqueName("d")];
    proxy.addRule({ when: isBatch, times: 1, action: { type: "hang" } });
    const outcome = await settles(
      writeBatch(
        flaky,
        [
          ["create", { partitionKey: hung, rowKey: "r" }],
          ["create", { partitionKey: fine, rowKey: "r" }],
        ],
        { requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS, maxConcurrency: 1 },
      ),
    );
    expect(outcome.settled).toBe("resolved");
    const [first, second] = outcome.value!.transactions;
    expect(first).toMatchObject({ partitionKey: hung, status: "failed", error: { mayHaveBeenApplied: true } });
    expect(second).toMatchObject({ partitionKey: fine, status: "committed" });
    expect(await rows(hung)).toEqual([]);
  });

  it("queryEntities fails with the typed time-out error when a page never comes", async () => {
    proxy.addRule({ method: "GET", action: { type: "hang" } });
    const outcome = await settles(queryEntities(flaky, { requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS }));
    expect(outcome.settled).toBe("rejected");
    expect(isStorageRequestError(outcome.error)).toBe(true);
    expect(outcome.error).toMatchObject({ code: "RequestTimedOut", transient: true });
  });

  it("queryEntities follows continuation tokens page by page (one request each)", async () => {
    const pk = uniqueName("e");
    await writeBatch(
      direct,
      Array.from({ length: 5 }, (_, i) => ["create", { partitionKey: pk, rowKey: `r${i}` }] as const),
    );
    const result = await queryEntities(flaky, { filter: `PartitionKey eq '${pk}'`, pageSize: 2 });
    expect(result.entities.map((e) => e.rowKey)).toEqual(["r0", "r1", "r2", "r3", "r4"]);
    expect(result.roundTrips).toBe(3);
  });

  it("TableOutbox.write whose transaction never answers fails with mayHaveBeenApplied, and is not sent again", async () => {
    const pk = uniqueName("f");
    const outbox = new TableOutbox(flaky, { requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS });
    proxy.addRule({ when: isBatch, action: { type: "hang" } });
    const before = proxy.requests.filter(isBatch).length;
    const outcome = await settles(
      outbox.write([["create", { partitionKey: pk, rowKey: "order" }]], [{ body: "placed", id: `${pk}-placed` }]),
    );
    expect(outcome.settled).toBe("rejected");
    expect(outcome.error).toMatchObject({ code: "TransactionFailed", mayHaveBeenApplied: true });
    expect(proxy.requests.filter(isBatch).length - before).toBe(1); // no second send with another sequence
    expect(await rows(pk)).toEqual([]);
  });

  it("TableOutbox.write whose transaction was applied and its answer held back resolves, one row per message", async () => {
    const pk = uniqueName("g");
    const outbox = new TableOutbox(flaky, { requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS });
    proxy.addRule({ when: isBatch, times: 1, action: { type: "hang", afterApply: true } });
    const outcome = await settles(
      outbox.write([["create", { partitionKey: pk, rowKey: "order" }]], [{ body: "placed", id: `${pk}-placed` }]),
    );
    expect(outcome.settled).toBe("resolved");
    expect(outcome.value).toMatchObject({ ids: [`${pk}-placed`], sequences: [1] });
    const stored = await rows(pk);
    expect(stored.filter((r) => String(r.rowKey).startsWith("~outbox:default:"))).toHaveLength(1);
    expect(stored.some((r) => r.rowKey === "order")).toBe(true);
  });

  it("refuses a bad requestTimeoutInMs before sending anything", async () => {
    await expect(
      writeAtomic(flaky, [["create", { partitionKey: "p", rowKey: "r" }]], { requestTimeoutInMs: 0 }),
    ).rejects.toThrow(/requestTimeoutInMs/);
    await expect(queryEntities(flaky, { requestTimeoutInMs: -1 })).rejects.toThrow(/requestTimeoutInMs/);
  });
});
