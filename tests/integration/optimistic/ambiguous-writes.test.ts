/**
 * Writes whose outcome the answer alone does not tell, against Azurite through a fault proxy: a
 * refusal of the one request sent against one that may answer the SDK's resend, 5xx answers, lost
 * answers on last-writer-wins writes, a raw writer that drops the write history, and two cells on one
 * blob. Regression tests of issue 11 (defects 4, 6, 8, 9 and the explorer's last-writer-wins finding),
 * and the SDK behaviour the send count relies on.
 */
import type { BlobClient, ContainerClient } from "@azure/storage-blob";
import {
  blobBytesCell,
  blobJsonCell,
  blobTextCell,
  isOptimisticOutcomeUnknownError,
  optimisticUpdate,
  tableEntityCell,
  writeLastWriterWins,
} from "../../../src/optimistic/index.js";
import { fixedBackoff } from "../../../src/retry/index.js";
import { formatWriteLog, nextWriteLog, parseWriteLog } from "../../../src/optimistic/write-log.js";
import type { FaultProxy } from "../../../src/testing/index.js";
import { blobService, faultProxyFor, tableClient, uniqueName } from "../../support/storage.js";

const quick = { backoff: fixedBackoff({ delayInMs: 2 }) };
const noSdkRetries = { retryOptions: { maxTries: 1 } };
let container: ContainerClient;

beforeAll(async () => {
  container = blobService().getContainerClient(uniqueName("optambig"));
  await container.create();
});
afterAll(async () => {
  await container.delete();
});

const put = (name: string) => (info: { method: string; path: string }) =>
  info.method === "PUT" && info.path.split("?")[0]!.endsWith(`/${name}`);

async function storedJson(name: string): Promise<unknown> {
  return JSON.parse((await container.getBlockBlobClient(name).downloadToBuffer()).toString()) as unknown;
}

/**
 * The next Put Blob of `name` is applied and its answer lost; the SDK's resend is held back for a
 * while. Resolves once the resend has arrived (and is being held).
 */
function loseAnswerAndHoldResend(proxy: FaultProxy, name: string): Promise<void> {
  let arrived = false;
  proxy.addRule({ times: 1, when: put(name), action: { type: "dropResponse" } });
  proxy.addRule({
    times: 1,
    when: (info) => put(name)(info) && (arrived = true),
    action: { type: "delay", delayInMs: 800 },
  });
  return (async () => {
    while (!arrived) await new Promise((resolve) => setTimeout(resolve, 5));
  })();
}

/** `count` other writer slots write one after another, each on top of the last, keeping the history. */
async function otherSlotsWrite(blob: BlobClient, count: number): Promise<void> {
  const properties = await blob.getProperties();
  let etag = properties.etag!;
  let log = properties.metadata?.["asc_optimistic"];
  let value = JSON.parse((await blob.downloadToBuffer()).toString()) as number;
  for (let i = 0; i < count; i++) {
    log = formatWriteLog(nextWriteLog({ etag, log }, { slot: `other${i}`, id: "w" }));
    const body = JSON.stringify((value += 1));
    const written = await blob
      .getBlockBlobClient()
      .upload(body, body.length, { metadata: { asc_optimistic: log }, conditions: { ifMatch: etag } });
    etag = written.etag!;
  }
}

describe("a refusal of the one request sent is a plain conflict (defect 4)", () => {
  it("after more writers than the history keeps, from the write-skip cache and from a read", async () => {
    const blob = container.getBlobClient("many-writers.json");
    const cell = blobJsonCell<number>(container.getBlockBlobClient("many-writers.json"));
    await optimisticUpdate(cell, () => 1); // this process wrote last: the next update skips its read
    await otherSlotsWrite(blob, 34);
    expect(parseWriteLog((await blob.getProperties()).metadata?.["asc_optimistic"])!.pruned).toBeGreaterThan(0);
    expect(await optimisticUpdate(cell, (n) => n! + 1, quick)).toMatchObject({ written: true, value: 36, attempts: 2 });

    // No cache: 34 writers write between this update's read and its write.
    const result = await optimisticUpdate(
      cell,
      async (n, { attempt }) => {
        if (attempt === 1) await otherSlotsWrite(blob, 34);
        return n! + 1;
      },
      { ...quick, skipReadAfterOwnWrite: false },
    );
    expect(result).toMatchObject({ written: true, value: 71, attempts: 2 });
    expect(await storedJson("many-writers.json")).toBe(71);
  });
});

describe("answers that leave the outcome open", () => {
  it("500 after applying and 504 are settled by reading back, with the SDK's retries off (defect 8)", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    const viaProxy = blobService(connectionString, noSdkRetries).getContainerClient(container.containerName);
    const cell = blobJsonCell<number>(viaProxy.getBlockBlobClient("five-hundreds.json"));
    await writeLastWriterWins(blobJsonCell<number>(container.getBlockBlobClient("five-hundreds.json")), 0);

    proxy.addRule({
      times: 1,
      when: put("five-hundreds.json"),
      action: { type: "statusAfterApply", statusCode: 500, serviceCode: "OperationTimedOut" },
    });
    expect(await optimisticUpdate(cell, (n) => n! + 1)).toMatchObject({ value: 1, recoveredLostResponse: true });

    // A gateway timeout answered before the service saw it: not applied so far, so the same write is sent again.
    proxy.clearLog();
    proxy.addRule({
      times: 1,
      when: put("five-hundreds.json"),
      action: { type: "status", statusCode: 504, serviceCode: "GatewayTimeout" },
    });
    expect(await optimisticUpdate(cell, (n) => n! + 1, { skipReadAfterOwnWrite: false })).toMatchObject({
      written: true,
      value: 2,
    });
    expect(proxy.requests.map((r) => `${r.method} ${r.statusCode}`)).toEqual([
      "GET 200",
      "PUT 504",
      "GET 200",
      "PUT 201",
    ]);
    expect(await storedJson("five-hundreds.json")).toBe(2);
  });

  it("a raw writer rewrites a value holding this process's unacknowledged write without its history: unknown, never applied twice (defect 9)", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    const name = "raw-rewrite.json";
    const cell = blobJsonCell<{ n: number; raw?: boolean }>(
      blobService(connectionString).getContainerClient(container.containerName).getBlockBlobClient(name),
    );
    await writeLastWriterWins(blobJsonCell(container.getBlockBlobClient(name)), { n: 0 });
    const resendHeld = loseAnswerAndHoldResend(proxy, name);
    const update = optimisticUpdate(cell, (v) => ({ n: v!.n + 1 }), { ...quick, skipReadAfterOwnWrite: false }).catch(
      (e: unknown) => e,
    );
    await resendHeld;
    // The SDK's resend is held back. A writer outside the library reads the value (holding the
    // increment whose answer was lost), changes it and writes it back without the history.
    const seen = (await storedJson(name)) as { n: number };
    const body = JSON.stringify({ ...seen, raw: true });
    await container.getBlockBlobClient(name).upload(body, body.length);
    const outcome = await update;
    expect(isOptimisticOutcomeUnknownError(outcome)).toBe(true);
    expect(await storedJson(name)).toEqual({ n: 1, raw: true }); // the increment once, not twice
  });

  it("a write in doubt that reading back finds superseded by another writer's is a conflict: read again and retry, not a failure", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    const name = "superseded.json";
    const cell = blobJsonCell<number>(
      blobService(connectionString, noSdkRetries).getContainerClient(container.containerName).getBlockBlobClient(name),
    );
    await optimisticUpdate(blobJsonCell<number>(container.getBlockBlobClient(name)), () => 0);
    // The first Put Blob gets a 504 before the service saw it (the outcome is in doubt); meanwhile
    // another writer writes, before the read-back (held back 500 ms) looks.
    let otherWrite: Promise<void> | undefined;
    proxy.addRule({
      times: 1,
      when: (info) => put(name)(info) && (otherWrite = otherSlotsWrite(container.getBlobClient(name), 1)) !== undefined,
      action: { type: "status", statusCode: 504, serviceCode: "GatewayTimeout" },
    });
    proxy.addRule({
      times: 1,
      when: (info) =>
        otherWrite !== undefined && info.method === "GET" && info.path.split("?")[0]!.endsWith(`/${name}`),
      action: { type: "delay", delayInMs: 500 },
    });
    const result = await optimisticUpdate(cell, (n) => n! + 1, { ...quick, skipReadAfterOwnWrite: false });
    await otherWrite;
    expect(result).toMatchObject({ written: true, value: 2, attempts: 2 });
    expect(await storedJson(name)).toBe(2); // the other writer's increment and this one, each once
  });

  it("writeLastWriterWins with the SDK's retries off: a lost answer, a 500 after applying and a reset are not failures", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    const name = "lww.json";
    const cell = blobJsonCell<string>(
      blobService(connectionString, noSdkRetries).getContainerClient(container.containerName).getBlockBlobClient(name),
    );
    const faults = [
      { type: "dropResponse" },
      { type: "statusAfterApply", statusCode: 500, serviceCode: "OperationTimedOut" },
      { type: "reset" },
    ] as const;
    for (const action of faults) {
      proxy.addRule({ times: 1, when: put(name), action });
      const { etag } = await writeLastWriterWins(cell, action.type);
      expect(await storedJson(name)).toBe(action.type);
      expect((await container.getBlobClient(name).getProperties()).etag).toBe(etag);
    }
  });

  it("two cells on one blob write as different writer slots: a lost response is not applied again (defect 6)", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    const name = "two-cells.json";
    const target = blobService(connectionString).getContainerClient(container.containerName).getBlockBlobClient(name);
    const json = blobJsonCell<{ n: number }>(target);
    const text = blobTextCell(target);
    await optimisticUpdate(json, () => ({ n: 0 }));
    const resendHeld = loseAnswerAndHoldResend(proxy, name);
    const first = optimisticUpdate(json, (v) => ({ n: v!.n + 1 }), { skipReadAfterOwnWrite: false, coalesce: false });
    await resendHeld;
    // The first write is applied, its answer lost, the SDK's resend held back; the text cell writes on top.
    await optimisticUpdate(text, (t) => JSON.stringify({ n: (JSON.parse(t!) as { n: number }).n + 1 }), {
      skipReadAfterOwnWrite: false,
      coalesce: false,
    });
    expect(await first).toMatchObject({ recoveredLostResponse: true });
    expect(await storedJson(name)).toEqual({ n: 2 });
  });
});

describe("what the send count relies on", () => {
  it("the SDKs report upload progress once per try, even for an empty body: a resend counts twice", async () => {
    const blobs = await faultProxyFor("blob");
    await using _blobs = blobs.proxy;
    const cell = blobBytesCell(
      blobService(blobs.connectionString).getContainerClient(container.containerName).getBlockBlobClient("count.bin"),
    );
    for (const [content, dropped] of [
      [Buffer.alloc(0), false],
      [Buffer.alloc(0), true],
      [Buffer.from("abc"), true],
    ] as const) {
      if (dropped) blobs.proxy.addRule({ times: 1, when: put("count.bin"), action: { type: "dropResponse" } });
      let sends = 0;
      const options = { condition: { lastWriterWins: true, mustExist: false } as const, log: "x", base: undefined };
      await cell.write(content, { ...options, onSend: () => void sends++ });
      expect(sends).toBe(dropped ? 2 : 1);
    }

    const tables = await faultProxyFor("table");
    await using _tables = tables.proxy;
    const name = uniqueName("optcount");
    await tableClient(name).createTable();
    try {
      const entity = tableEntityCell<{ n: number }>(tableClient(name, tables.connectionString), "p", "r");
      tables.proxy.addRule({ times: 1, method: ["POST", "PUT", "PATCH", "MERGE"], action: { type: "dropResponse" } });
      let sends = 0;
      await entity.write(
        { n: 1 },
        {
          condition: { lastWriterWins: true, mustExist: false },
          log: "x",
          base: undefined,
          onSend: () => void sends++,
        },
      );
      expect(sends).toBe(2);
    } finally {
      await tableClient(name).deleteTable();
    }
  });
});
