/**
 * The library's own send sites with a `rateLimiter` (issue 26), behind the throttling model: each
 * run starts on a partition that serves one request and then refuses everything, waits until the
 * limiter has learned (a cut), then gives the partition its capacity back. What is checked is what
 * storage holds (every update once, every message once) and that the limiter saw the requests: no
 * timing is asserted.
 */
import {
  AdaptiveRateLimiter,
  blobLock,
  fixedBackoff,
  multiIndexTable,
  optimisticUpdate,
  QueueConsumer,
  retry,
  tableEntityCell,
  throttleScopeOf,
  writeBatch,
} from "../../../src/index.js";
import type { FaultProxy } from "../../../src/testing/index.js";
import { blobService, faultProxyFor, queueService, tableClient, uniqueName } from "../../support/storage.js";
import { AZURITE_ONLY } from "../../support/target.js";

/** Refuses all but one request per partition until {@link recoverAfterCut} lifts it. */
const STARVED = { partitionRatePerSec: 0.01, burstInMs: 1 };

/** A limiter whose waits stay short (a high floor), so that the tests stay quick. */
const quickLimiter = () => new AdaptiveRateLimiter({ minRatePerSec: 200 });

/** Gives the partitions their capacity back once the limiter has cut `key`'s rate. */
async function recoverAfterCut(proxy: FaultProxy, limiter: AdaptiveRateLimiter, key: string): Promise<void> {
  for (let i = 0; i < 500 && !(limiter.stateOf(key)?.cuts ?? 0); i++) await new Promise((r) => setTimeout(r, 10));
  proxy.throttling!.setRates({ partitionRatePerSec: 1e6 });
}

const retried = { maxRetries: 20, backoff: fixedBackoff({ delayInMs: 20 }) };

describe(`the library's send sites with a rateLimiter ${AZURITE_ONLY}`, () => {
  it("optimisticUpdate: eight writers, one counter, every increment stored once through throttling", async () => {
    const name = uniqueName("sites");
    await tableClient(name).createTable();
    const { proxy, connectionString } = await faultProxyFor("table", { throttling: STARVED });
    await using _ = proxy;
    const table = tableClient(name, connectionString, { retryOptions: { maxRetries: 0 } });
    const rateLimiter = quickLimiter();
    const cell = tableEntityCell<{ n?: number }>(table, "hot", "counter", { mode: "Merge" });
    const writers = Array.from({ length: 8 }, async () => {
      for (let i = 0; i < 3; i++)
        await retry(() => optimisticUpdate(cell, (c) => ({ n: (c?.n ?? 0) + 1 }), { rateLimiter }), retried);
    });
    const key = throttleScopeOf(`${table.url}/${name}`, { service: "table", partitionKey: "hot" }).partition!;
    await recoverAfterCut(proxy, rateLimiter, key);
    await Promise.all(writers);
    expect((await tableClient(name).getEntity<{ n: number }>("hot", "counter")).n).toBe(24);
    expect(rateLimiter.stateOf(key)).toMatchObject({ limited: true });
    expect(proxy.throttling!.stats().serverBusy).toBeGreaterThan(0);
  });

  it("writeBatch and multiIndexTable: each transaction through its partition's key", async () => {
    const name = uniqueName("sites");
    await tableClient(name).createTable();
    const { proxy, connectionString } = await faultProxyFor("table", { throttling: STARVED });
    await using _ = proxy;
    const table = tableClient(name, connectionString, { retryOptions: { maxRetries: 0 } });
    const rateLimiter = quickLimiter();
    const rows = Array.from({ length: 6 }, (_, i) => ["upsert", { partitionKey: "b", rowKey: `r${i}`, i }] as const);
    const batch = writeBatch(table, rows, { maxOperationsPerTransaction: 2, rateLimiter, retry: retried });
    const key = throttleScopeOf(`${table.url}/${name}`, { service: "table", partitionKey: "b" }).partition!;
    await recoverAfterCut(proxy, rateLimiter, key);
    expect((await batch).committedActions).toBe(6);
    const runners = multiIndexTable<{ bib: number }>(table, {
      partitionKey: () => "race",
      indexes: { BIB: (r) => String(r.bib) },
      rateLimiter,
    });
    await runners.create({ bib: 7 });
    expect(rateLimiter.stateOf(key.replace(/\/b$/, "/race"))).toBeDefined();
  });

  it("QueueConsumer: receives and deletes through the queue's key; every message handled once", async () => {
    const name = uniqueName("sites");
    const direct = queueService().getQueueClient(name);
    await direct.create();
    // Served while the consumer checks its queues at start, starved after.
    const { proxy, connectionString } = await faultProxyFor("queue", { throttling: { ...STARVED, partitionRatePerSec: 1e6 } }); // prettier-ignore
    await using _ = proxy;
    const queue = queueService(connectionString, { retryOptions: { maxTries: 1 } }).getQueueClient(name);
    const rateLimiter = quickLimiter();
    const handled: string[] = [];
    await using consumer = new QueueConsumer(queue, async (body: string) => void handled.push(body), {
      rateLimiter,
      visibilityTimeoutInSeconds: 5,
      pollingBackoff: fixedBackoff({ delayInMs: 20 }),
    });
    consumer.on("error", () => undefined); // the 503s, reported while the queue is starved
    await consumer.start();
    proxy.throttling!.setRates({ partitionRatePerSec: 0.01 });
    for (const text of ["a", "b", "c", "d"]) await direct.sendMessage(text);
    await recoverAfterCut(proxy, rateLimiter, throttleScopeOf(queue.url, { service: "queue" }).partition!);
    for (let i = 0; i < 500 && handled.length < 4; i++) await new Promise((r) => setTimeout(r, 10));
    await consumer.stop();
    expect(handled.sort()).toEqual(["a", "b", "c", "d"]);
    expect((await direct.peekMessages()).peekedMessageItems).toEqual([]);
    expect(rateLimiter.stateOf(throttleScopeOf(queue.url, { service: "queue" }).partition!)?.cuts).toBeGreaterThan(0);
  });

  it("a lease lock's acquisition goes through the lock blob's key; renewals and releases do not wait", async () => {
    const container = blobService().getContainerClient(uniqueName("sites"));
    await container.create();
    const rateLimiter = quickLimiter();
    const lock = blobLock(container, "job", { rateLimiter });
    await lock.withLock(async () => undefined);
    expect(rateLimiter.stateOf(throttleScopeOf(container.getBlockBlobClient("job").url).partition!)).toBeDefined();
    expect(() => blobLock(container, "job", { rateLimiter: {} as never })).toThrow(/`rateLimiter` must be an AdaptiveRateLimiter/); // prettier-ignore
  });
});
