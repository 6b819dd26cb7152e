/**
 * The throttling model (the fault proxy's `throttling` mode) against Azurite, through the real SDK
 * clients: the answers have the service's shape per service (checked against the recorded answers
 * in tests/unit/conformance), each partition and the account are counted apart, a transaction
 * counts its operations, rates change at run time, and a 500 OperationTimedOut may be applied.
 *
 * Rates are tiny (0.01 per second: one request, then none for 100 s) or huge, never in between, so
 * that no outcome depends on how fast this machine is.
 */
import {
  AdaptiveRateLimiter,
  classifyError,
  readRestError,
  RetryBudget,
  throttleScopeOf,
  throttlingPolicy,
  writeBatch,
} from "../../../src/index.js";
import { blobService, faultProxyFor, queueService, tableClient, uniqueName } from "../../support/storage.js";
import { AZURITE_ONLY } from "../../support/target.js";

const SLOW = { partitionRatePerSec: 0.01, burstInMs: 1 }; // one request per partition, then refusals
const oneTry = { retryOptions: { maxTries: 1 } };
const answerOf = (error: unknown) =>
  (error as { response: { headers: { get(n: string): string | undefined }; bodyAsText?: string } }).response;

describe(`throttling model ${AZURITE_ONLY}`, () => {
  it("Blob: 503 ServerBusy in x-ms-error-code and an XML body past a blob's rate; another blob is its own partition", async () => {
    const name = uniqueName("model");
    await blobService().getContainerClient(name).create();
    const { proxy, connectionString } = await faultProxyFor("blob", { throttling: SLOW });
    await using _ = proxy;
    const container = blobService(connectionString, oneTry).getContainerClient(name);
    await container.getBlockBlobClient("a").upload("1", 1);
    const error = await container
      .getBlockBlobClient("a")
      .upload("2", 1)
      .catch((e: unknown) => e);
    expect(classifyError(error)).toMatchObject({ kind: "throttled", statusCode: 503, serviceCode: "ServerBusy" });
    expect(answerOf(error).headers.get("x-ms-error-code")).toBe("ServerBusy");
    expect(answerOf(error).bodyAsText).toMatch(/<Code>ServerBusy<\/Code><Message>The server is currently unable to receive requests\. Please retry your request\.\nRequestId:/); // prettier-ignore
    await container.getBlockBlobClient("b").upload("1", 1); // another partition
    expect(proxy.throttling!.stats()).toMatchObject({
      admitted: 2,
      serverBusy: 1,
      partitions: { [`blob:devstoreaccount1/${name}/a`]: { admitted: 1, refused: 1 } },
    });
    expect(proxy.requests.map((r) => r.outcome)).toEqual(["forwarded", "throttled", "forwarded"]);
  });

  it("Table: the code in the JSON body only; a transaction is one partition and counts its operations", async () => {
    const name = uniqueName("model");
    await tableClient(name).createTable();
    const { proxy, connectionString } = await faultProxyFor("table", {
      throttling: { partitionRatePerSec: 0.01, burstInMs: 300_000 }, // 3 tokens per partition
    });
    await using _ = proxy;
    const table = tableClient(name, connectionString, { retryOptions: { maxRetries: 0 } });
    const batch = await writeBatch(table, [
      ["upsert", { partitionKey: "p", rowKey: "1" }],
      ["upsert", { partitionKey: "p", rowKey: "2" }],
      ["upsert", { partitionKey: "p", rowKey: "3" }],
    ]);
    expect(batch.ok).toBe(true); // 3 operations: the partition's 3 tokens
    const error = await table.upsertEntity({ partitionKey: "p", rowKey: "4" }).catch((e: unknown) => e);
    expect(readRestError(error)).toMatchObject({ statusCode: 503, serviceCode: "ServerBusy" });
    expect(answerOf(error).headers.get("x-ms-error-code")).toBeUndefined();
    expect(JSON.parse(answerOf(error).bodyAsText!)).toMatchObject({ "odata.error": { code: "ServerBusy" } });
    await table.upsertEntity({ partitionKey: "q", rowKey: "1" }); // another partition
    expect(proxy.throttling!.stats().partitions).toEqual({
      [`table:devstoreaccount1/${name}/p`]: { admitted: 1, refused: 1 },
      [`table:devstoreaccount1/${name}/q`]: { admitted: 1, refused: 0 },
    });
  });

  it("Queue and the account: an account-level 503 says so, and the limiter cuts the account, not the queue", async () => {
    const name = uniqueName("model");
    await queueService().getQueueClient(name).create();
    const { proxy, connectionString } = await faultProxyFor("queue", {
      throttling: { partitionRatePerSec: 1e6, accountRatePerSec: 0.01, burstInMs: 1 },
    });
    await using _ = proxy;
    const queue = queueService(connectionString, oneTry).getQueueClient(name);
    const limiter = new AdaptiveRateLimiter();
    const scope = throttleScopeOf(queue.url, { service: "queue" });
    await limiter.run(scope, () => queue.sendMessage("1"));
    const error = await limiter.run(scope, () => queue.sendMessage("2")).catch((e: unknown) => e);
    expect(readRestError(error)).toMatchObject({ statusCode: 503, serviceCode: "ServerBusy" });
    expect(answerOf(error).bodyAsText).toContain("Operations per second is over the account limit.");
    expect(limiter.stateOf(scope.account)?.limited).toBe(true);
    expect(limiter.stateOf(scope.partition!)?.limited).toBe(false);
    expect(proxy.throttling!.stats().accountRefusals).toBe(1);
  });

  it("changes its rates at run time, and answers 500 OperationTimedOut applied when asked", async () => {
    const name = uniqueName("model");
    await tableClient(name).createTable();
    const { proxy, connectionString } = await faultProxyFor("table", {
      throttling: { ...SLOW, operationTimedOutShare: 1, timedOutAfterApply: true },
    });
    await using _ = proxy;
    const table = tableClient(name, connectionString, { retryOptions: { maxRetries: 0 } });
    await table.upsertEntity({ partitionKey: "p", rowKey: "1" });
    const error = await table.upsertEntity({ partitionKey: "p", rowKey: "2" }).catch((e: unknown) => e);
    expect(classifyError(error)).toMatchObject({ statusCode: 500, serviceCode: "OperationTimedOut" });
    await expect(tableClient(name).getEntity("p", "2")).resolves.toBeDefined(); // applied all the same
    proxy.throttling!.setRates({ partitionRatePerSec: 1e6 });
    await table.upsertEntity({ partitionKey: "p", rowKey: "3" });
    expect(proxy.throttling!.rates.partitionRatePerSec).toBe(1e6);
  });

  it("throttlingPolicy on a TableClient: the SDK's retries are paid from the budget, and stop typed when it is empty", async () => {
    const name = uniqueName("model");
    await tableClient(name).createTable();
    const { proxy, connectionString } = await faultProxyFor("table", { throttling: SLOW });
    await using _ = proxy;
    const rateLimiter = new AdaptiveRateLimiter({ minRatePerSec: 1000 });
    const budget = new RetryBudget({ maxTokens: 1 });
    const table = tableClient(name, connectionString, {
      additionalPolicies: [{ policy: throttlingPolicy({ rateLimiter, budget }), position: "perRetry" }],
    });
    await table.upsertEntity({ partitionKey: "p", rowKey: "1" });
    const error = await table.upsertEntity({ partitionKey: "p", rowKey: "2" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "RetryBudgetExhausted", statusCode: 503, serviceCode: "ServerBusy" });
    expect(proxy.throttling!.stats().serverBusy).toBe(2); // the first try and one paid retry
    expect(rateLimiter.stateOf(throttleScopeOf(`${table.url}/${name}`, { service: "table", partitionKey: "p" }).partition!)).toMatchObject({ limited: true }); // prettier-ignore
  });
});
