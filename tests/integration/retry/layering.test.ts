/**
 * One failing operation is retried in exactly one place. Counted at the network level: a fault
 * proxy answers every request with 503 ServerBusy and logs what reaches it.
 */
import { fixedBackoff, noBackoff, retry, SDK_SINGLE_ATTEMPT, type RetryEvent } from "../../../src/retry/index.js";
import { isStorageRequestError } from "../../../src/index.js";
import { blobService, faultProxyFor, quickSdkRetries, tableClient, uniqueName } from "../../support/storage.js";

const alwaysBusy = [{ action: { type: "serverBusy" as const } }];

describe("retry layering, counted in HTTP requests", () => {
  it("SDK retries alone: one operation = the SDK's maxTries requests", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob", { rules: alwaysBusy });
    await using _ = proxy;
    const container = blobService(connectionString, { retryOptions: quickSdkRetries.storage }).getContainerClient(
      uniqueName("l"),
    );
    await expect(container.create()).rejects.toMatchObject({ statusCode: 503 });
    expect(proxy.requests).toHaveLength(quickSdkRetries.storage.maxTries);
  });

  it("library retries alone (SDK_SINGLE_ATTEMPT): one operation = 1 + maxRetries requests", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob", { rules: alwaysBusy });
    await using _ = proxy;
    const container = blobService(connectionString, { retryOptions: SDK_SINGLE_ATTEMPT.storage }).getContainerClient(
      uniqueName("l"),
    );
    const error = await retry(({ abortSignal }) => container.create({ abortSignal }), {
      maxRetries: 3,
      backoff: fixedBackoff({ delayInMs: 5 }),
      operationName: "create the container",
    }).catch((e: unknown) => e);
    expect(isStorageRequestError(error)).toBe(true);
    expect(error).toMatchObject({ attempts: 4, statusCode: 503, serviceCode: "ServerBusy", transient: true });
    expect(proxy.requests).toHaveLength(4);
  });

  it("both layers multiply (the thing not to do): 4 SDK tries x 4 attempts = 16 requests", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob", { rules: alwaysBusy });
    await using _ = proxy;
    const container = blobService(connectionString, { retryOptions: quickSdkRetries.storage }).getContainerClient(
      uniqueName("l"),
    );
    await expect(retry(() => container.create(), { maxRetries: 3, backoff: noBackoff() })).rejects.toMatchObject({
      attempts: 4,
    });
    expect(proxy.requests).toHaveLength(16);
  });

  it("tables: SDK_SINGLE_ATTEMPT.tables makes the tables SDK try once, so retry() is the one place", async () => {
    const { proxy, connectionString } = await faultProxyFor("table");
    await using _ = proxy;
    const table = tableClient(uniqueName("l"), connectionString, { retryOptions: SDK_SINGLE_ATTEMPT.tables });
    await table.createTable();
    proxy.clearLog();
    proxy.addRule({ action: { type: "serverBusy" } });
    await expect(
      retry(() => table.createEntity({ partitionKey: "p", rowKey: "r" }), { maxRetries: 2, backoff: noBackoff() }),
    ).rejects.toMatchObject({ attempts: 3, serviceCode: "ServerBusy" });
    expect(proxy.requests).toHaveLength(3);
  });

  it("a transient failure that clears is ridden out; a non-transient one is not retried", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    const container = blobService(connectionString, { retryOptions: SDK_SINGLE_ATTEMPT.storage }).getContainerClient(
      uniqueName("l"),
    );
    proxy.addRule({ times: 2, action: { type: "serverBusy", retryAfterInMs: 30 } });
    const events: RetryEvent[] = [];
    await retry(() => container.create(), { backoff: noBackoff(), onRetry: (e) => events.push(e) });
    expect(events.map((e) => e.delayInMs)).toEqual([30, 30]); // Retry-After honoured
    expect(proxy.requests.map((r) => r.outcome)).toEqual(["serverBusy", "serverBusy", "forwarded"]);

    proxy.clearLog();
    await expect(retry(() => container.create(), { backoff: noBackoff() })).rejects.toMatchObject({
      statusCode: 409,
      serviceCode: "ContainerAlreadyExists",
      attempts: 1,
    });
    expect(proxy.requests).toHaveLength(1);
  });
});
