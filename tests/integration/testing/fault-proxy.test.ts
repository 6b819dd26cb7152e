import { classifyError } from "../../../src/retry/index.js";
import { readRestError } from "../../../src/error-codes.js";
import { createFaultProxy, seededRandom } from "../../../src/testing/index.js";
import { blobService, faultProxyFor, tableClient, uniqueName } from "../../support/storage.js";

const oneTry = { retryOptions: { maxTries: 1 } };

describe("fault proxy in front of Azurite", () => {
  it("forwards untouched when no rule matches, and logs every request", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    const container = blobService(connectionString).getContainerClient(uniqueName("fwd"));
    await container.create();
    await container.getBlockBlobClient("a").upload("hello", 5);
    await container.getBlockBlobClient("a").getProperties();
    expect(proxy.requests.map((r) => [r.method, r.outcome, r.statusCode])).toEqual([
      ["PUT", "forwarded", 201],
      ["PUT", "forwarded", 201],
      ["HEAD", "forwarded", 200],
    ]);
  });

  it("dropResponse: the service applies the write, the client never hears back", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    const name = uniqueName("drop");
    const direct = blobService().getContainerClient(name);
    await direct.create();
    proxy.addRule({ method: "PUT", action: { type: "dropResponse" }, times: 1 });

    const viaProxy = blobService(connectionString, oneTry).getContainerClient(name).getBlockBlobClient("b");
    const error = await viaProxy.upload("applied", 7).catch((e: unknown) => e);
    expect(classifyError(error)).toMatchObject({ kind: "network", transient: true });
    // Applied all the same:
    expect((await direct.getBlockBlobClient("b").downloadToBuffer()).toString()).toBe("applied");
    expect(proxy.requests[0]).toMatchObject({ outcome: "dropResponse", statusCode: 201 });
  });

  it("serverBusy answers 503 ServerBusy without forwarding", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob", {
      rules: [{ action: { type: "serverBusy", retryAfterInMs: 123 } }],
    });
    await using _ = proxy;
    const name = uniqueName("busy");
    const error = await blobService(connectionString, oneTry)
      .getContainerClient(name)
      .create()
      .catch((e: unknown) => e);
    expect(classifyError(error)).toMatchObject({
      kind: "throttled",
      statusCode: 503,
      serviceCode: "ServerBusy",
      retryAfterInMs: 123,
    });
    expect(await blobService().getContainerClient(name).exists()).toBe(false);
  });

  it("status answers any error; reset cuts the connection without forwarding", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    const name = uniqueName("status");
    proxy.addRule({ times: 1, action: { type: "status", statusCode: 500, serviceCode: "InternalError" } });
    proxy.addRule({ times: 1, action: { type: "reset" } });
    const client = blobService(connectionString, oneTry).getContainerClient(name);
    expect(classifyError(await client.create().catch((e: unknown) => e))).toMatchObject({
      kind: "server",
      statusCode: 500,
    });
    expect(classifyError(await client.create().catch((e: unknown) => e))).toMatchObject({ kind: "network" });
    expect(await blobService().getContainerClient(name).exists()).toBe(false);
    await client.create(); // rules retired after `times`
    expect(proxy.requests.map((r) => r.outcome)).toEqual(["status", "reset", "forwarded"]);
  });

  it("statusAfterApply: the service applies the write, the client hears an error instead", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    const name = uniqueName("after");
    proxy.addRule({
      times: 1,
      action: { type: "statusAfterApply", statusCode: 500, serviceCode: "OperationTimedOut" },
    });
    const error = await blobService(connectionString, oneTry)
      .getContainerClient(name)
      .create()
      .catch((e: unknown) => e);
    expect(readRestError(error)).toMatchObject({ statusCode: 500, serviceCode: "OperationTimedOut" });
    expect(await blobService().getContainerClient(name).exists()).toBe(true);
    expect(proxy.requests[0]).toMatchObject({ outcome: "statusAfterApply", statusCode: 201 });
  });

  it("hang never answers, before or after the service applied the request, until the client gives up", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    const before = uniqueName("hang");
    const after = uniqueName("hang");
    proxy.addRule({ times: 1, action: { type: "hang" } });
    proxy.addRule({ times: 1, action: { type: "hang", afterApply: true } });
    const service = blobService(connectionString, oneTry);
    for (const name of [before, after]) {
      const error = await service
        .getContainerClient(name)
        .create({ abortSignal: AbortSignal.timeout(300) })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ name: "AbortError" });
    }
    expect(await blobService().getContainerClient(before).exists()).toBe(false);
    expect(await blobService().getContainerClient(after).exists()).toBe(true);
    expect(proxy.requests.map((r) => [r.outcome, r.statusCode])).toEqual([
      ["hang", undefined],
      ["hang", 201],
    ]);
  });

  it("delay holds the request, then forwards it", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob", {
      rules: [{ action: { type: "delay", delayInMs: 50 } }],
    });
    await using _ = proxy;
    await blobService(connectionString).getContainerClient(uniqueName("delay")).create();
    expect(proxy.requests[0]).toMatchObject({ outcome: "delay", statusCode: 201, delayedInMs: 50 });
  });

  it("delay with jitter holds each request for its own time around the mean", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob", {
      rules: [{ action: { type: "delay", delayInMs: 10, jitterInMs: 4 } }],
      random: seededRandom(3),
    });
    await using _ = proxy;
    const container = blobService(connectionString).getContainerClient(uniqueName("jitter"));
    await container.create();
    for (let i = 0; i < 10; i++) await container.getBlockBlobClient(`b${i}`).upload("x", 1);
    const delays = proxy.requests.map((r) => r.delayedInMs!);
    expect(delays).toHaveLength(11);
    for (const delay of delays) {
      expect(delay).toBeGreaterThanOrEqual(6);
      expect(delay).toBeLessThanOrEqual(14);
    }
    expect(new Set(delays).size).toBeGreaterThan(5);
    expect(() => proxy.addRule({ action: { type: "delay", delayInMs: 10, jitterInMs: -1 } })).toThrow(
      /`action.jitterInMs`/,
    );
  });

  it("delay with jitter forwards every request; a jitter above the delay is refused before any request", async () => {
    await expect(
      createFaultProxy({
        target: "http://127.0.0.1:1",
        rules: [{ action: { type: "delay", delayInMs: 5, jitterInMs: 6 } }],
      }),
    ).rejects.toThrow(/`action\.jitterInMs`/);
    const { proxy, connectionString } = await faultProxyFor("blob", {
      random: seededRandom(3),
      rules: [{ action: { type: "delay", delayInMs: 10, jitterInMs: 10 } }],
    });
    await using _ = proxy;
    const container = blobService(connectionString).getContainerClient(uniqueName("jitter"));
    await container.create();
    await Promise.all(["a", "b", "c"].map((name) => container.getBlockBlobClient(name).upload(name, 1)));
    expect(proxy.requests.map((r) => [r.outcome, r.statusCode])).toEqual([
      ["delay", 201],
      ["delay", 201],
      ["delay", 201],
      ["delay", 201],
    ]);
  });

  it("probabilistic faults are repeatable with a seeded random source", async () => {
    const pattern = async () => {
      const { proxy, connectionString } = await faultProxyFor("blob", {
        random: seededRandom(7),
        rules: [{ method: "HEAD", probability: 0.5, action: { type: "serverBusy" } }],
      });
      await using _ = proxy;
      const blob = blobService(connectionString, oneTry).getContainerClient(uniqueName("seed")).getBlobClient("x");
      for (let i = 0; i < 20; i++) await blob.exists().catch(() => undefined);
      return proxy.requests.map((r) => r.outcome).join(",");
    };
    const first = await pattern();
    expect(first).toContain("serverBusy");
    expect(first).toContain("forwarded");
    expect(await pattern()).toBe(first);
  });

  it("speaks the tables dialect: a JSON OData error the tables SDK can read", async () => {
    const { proxy, connectionString } = await faultProxyFor("table");
    await using _ = proxy;
    const table = tableClient(uniqueName("t"), connectionString, { retryOptions: { maxRetries: 0 } });
    await table.createTable();
    proxy.addRule({ times: 1, action: { type: "serverBusy" } });
    const error = await table.createEntity({ partitionKey: "p", rowKey: "r" }).catch((e: unknown) => e);
    expect(readRestError(error)).toMatchObject({ statusCode: 503, serviceCode: "ServerBusy" });
    await table.createEntity({ partitionKey: "p", rowKey: "r" });
    expect((await table.getEntity("p", "r")).rowKey).toBe("r");
  });

  it("rejects malformed rules", async () => {
    const { proxy } = await faultProxyFor("blob");
    await using _ = proxy;
    expect(() => proxy.addRule({ action: { type: "explode" } } as never)).toThrow(/action.type/);
    expect(() => proxy.addRule({ probability: 2, action: { type: "reset" } })).toThrow(/`probability`/);
  });
});
