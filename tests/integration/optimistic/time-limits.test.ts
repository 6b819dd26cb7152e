/**
 * Every request of the optimistic engine has a client-side time limit (`requestTimeoutInMs`): its
 * reads and its conditional writes, not only the read-backs that settle a lost answer. Against
 * real Azurite behind the fault proxy, whose `hang` mode never answers (optionally after applying).
 * A write cut off by the limit is a lost answer, settled by reading back its write id: counted once
 * when it was applied, sent again with the same condition when it was not, never applied twice.
 *
 * Each test bounds what it waits for with `settles()`: a generous limit, far above the bound, that
 * turns "pending for ever" into a failure instead of a stuck test. No speed claim.
 */
import type { ContainerClient } from "@azure/storage-blob";
import type { TableClient } from "@azure/data-tables";
import { isStorageRequestError } from "../../../src/index.js";
import {
  blobJsonCell,
  optimisticUpdate,
  readCell,
  tableEntityCell,
  writeIfMatch,
  writeLastWriterWins,
} from "../../../src/optimistic/index.js";
import { blobService, faultProxyFor, tableClient, uniqueName } from "../../support/storage.js";
import { settles } from "../../support/settles.js";

const REQUEST_TIMEOUT_IN_MS = 300;

let direct: ContainerClient;
beforeAll(async () => {
  direct = blobService().getContainerClient(uniqueName("otl"));
  await direct.create();
});
afterAll(async () => {
  await direct.delete();
});

async function flakyBlob(name: string) {
  const { proxy, connectionString } = await faultProxyFor("blob");
  const flaky = blobService(connectionString).getContainerClient(direct.containerName);
  return { proxy, cell: blobJsonCell<{ n: number }>(flaky.getBlockBlobClient(name)) };
}

const read = async (name: string) => {
  const got = await readCell(blobJsonCell<{ n: number }>(direct.getBlockBlobClient(name)));
  return got.exists ? got.value.n : undefined;
};

describe("optimistic engine: client-side time limits [Azurite only]", () => {
  it("optimisticUpdate whose read never answers fails within the bound with the typed time-out error, nothing written", async () => {
    const name = uniqueName("read-hangs");
    await direct.getBlockBlobClient(name).upload('{"n":1}', 7);
    const { proxy, cell } = await flakyBlob(name);
    await using _ = proxy;
    proxy.addRule({ method: "GET", action: { type: "hang" } });
    const outcome = await settles(
      optimisticUpdate(cell, (v) => ({ n: (v?.n ?? 0) + 1 }), { requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS }),
    );
    expect(outcome.settled).toBe("rejected");
    expect(isStorageRequestError(outcome.error)).toBe(true);
    expect(outcome.error).toMatchObject({ code: "RequestTimedOut", transient: true });
    expect(await read(name)).toBe(1);
  });

  it("optimisticUpdate whose write is applied and its answer held back counts it once (recognised by its write id)", async () => {
    const name = uniqueName("write-applied");
    await direct.getBlockBlobClient(name).upload('{"n":1}', 7);
    const { proxy, cell } = await flakyBlob(name);
    await using _ = proxy;
    proxy.addRule({ method: "PUT", times: 1, action: { type: "hang", afterApply: true } });
    const outcome = await settles(
      optimisticUpdate(cell, (v) => ({ n: (v?.n ?? 0) + 1 }), {
        requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS,
        coalesce: false,
      }),
    );
    expect(outcome).toMatchObject({ settled: "resolved", value: { written: true, recoveredLostResponse: true } });
    expect(await read(name)).toBe(2);
  });

  it("optimisticUpdate whose write never reached the service sends it again with the same condition: applied once", async () => {
    const name = uniqueName("write-lost");
    await direct.getBlockBlobClient(name).upload('{"n":1}', 7);
    const { proxy, cell } = await flakyBlob(name);
    await using _ = proxy;
    proxy.addRule({ method: "PUT", times: 1, action: { type: "hang" } });
    const outcome = await settles(
      optimisticUpdate(cell, (v) => ({ n: (v?.n ?? 0) + 1 }), {
        requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS,
        coalesce: false,
      }),
    );
    expect(outcome).toMatchObject({ settled: "resolved", value: { written: true } });
    expect(await read(name)).toBe(2);
    expect(proxy.requests.filter((r) => r.method === "PUT")).toHaveLength(2);
  });

  it("readCell, writeIfMatch and writeLastWriterWins end within the bound when nothing answers", async () => {
    const name = uniqueName("all-hang");
    const created = await direct.getBlockBlobClient(name).upload('{"n":1}', 7);
    const { proxy, cell } = await flakyBlob(name);
    await using _ = proxy;
    proxy.addRule({ action: { type: "hang" } });
    const limits = { requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS, recoveryTimeoutInMs: REQUEST_TIMEOUT_IN_MS };
    const outcomes = await Promise.all([
      settles(readCell(cell, limits)),
      settles(writeIfMatch(cell, created.etag!, { n: 5 }, limits)),
      settles(writeLastWriterWins(cell, { n: 6 }, limits)),
    ]);
    for (const outcome of outcomes) expect(outcome.settled).toBe("rejected");
    expect(outcomes[0].error).toMatchObject({ code: "RequestTimedOut" });
    expect(await read(name)).toBe(1);
  });

  it("a table entity's conditional write applied with its answer held back is counted once", async () => {
    const tableName = uniqueName("otl");
    const table: TableClient = tableClient(tableName);
    await table.createTable();
    try {
      const { proxy, connectionString } = await faultProxyFor("table");
      await using _ = proxy;
      const cell = tableEntityCell<{ n: number }>(tableClient(tableName, connectionString), "p", "r");
      await optimisticUpdate(cell, () => ({ n: 1 }));
      proxy.addRule({ method: ["PUT", "MERGE", "PATCH"], times: 1, action: { type: "hang", afterApply: true } });
      const outcome = await settles(
        optimisticUpdate(cell, (v) => ({ n: (v?.n ?? 0) + 1 }), {
          requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS,
          coalesce: false,
          skipReadAfterOwnWrite: false,
        }),
      );
      expect(outcome).toMatchObject({ settled: "resolved", value: { written: true, recoveredLostResponse: true } });
      const stored = await readCell(tableEntityCell<{ n: number }>(table, "p", "r"));
      expect(stored.exists && stored.value.n).toBe(2);
    } finally {
      await table.deleteTable();
    }
  });

  it("refuses a bad requestTimeoutInMs before sending anything", async () => {
    const cell = blobJsonCell(direct.getBlockBlobClient("never"));
    await expect(optimisticUpdate(cell, () => 1, { requestTimeoutInMs: 0 })).rejects.toThrow(/requestTimeoutInMs/);
    await expect(readCell(cell, { requestTimeoutInMs: Number.NaN })).rejects.toThrow(/requestTimeoutInMs/);
  });
});
