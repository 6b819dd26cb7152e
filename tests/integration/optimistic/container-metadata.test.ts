/**
 * Container metadata cells against Azurite. The service has no If-Match for Set Container Metadata,
 * so writers are serialised with a short container lease: these tests check that racing writers lose
 * nothing, that the lease is released after each write, and how a lease held by someone else is met.
 */
import { randomUUID } from "node:crypto";
import { StorageRetryPolicyType, type ContainerClient } from "@azure/storage-blob";
import {
  containerMetadataCell,
  isOptimisticConflictError,
  isOptimisticOutcomeUnknownError,
  optimisticUpdate,
  readCell,
  writeLastWriterWins,
} from "../../../src/optimistic/index.js";
import { fixedBackoff } from "../../../src/retry/index.js";
import { isStorageRequestError } from "../../../src/index.js";
import { blobService, faultProxyFor, uniqueName } from "../../support/storage.js";

const quick = { backoff: fixedBackoff({ delayInMs: 5 }) };
let container: ContainerClient;

beforeEach(async () => {
  container = blobService().getContainerClient(uniqueName("optmeta"));
  await container.create({ metadata: { owner: "ada" } });
});
afterEach(async () => {
  await container
    .getBlobLeaseClient()
    .breakLease(0)
    .catch(() => undefined);
  await container.delete().catch(() => undefined);
});

describe("container metadata cells", () => {
  it("updates the metadata, keeps the rest, and releases the lease it took", async () => {
    const cell = containerMetadataCell(container);
    const result = await optimisticUpdate(cell, (current) => ({ ...current, plan: "premium" }));
    expect(result).toMatchObject({ written: true, value: { owner: "ada", plan: "premium" } });
    const properties = await container.getProperties();
    expect(properties.metadata).toMatchObject({ owner: "ada", plan: "premium" });
    expect(properties.leaseState).toBe("available");
    expect(result.etag).toBe(properties.etag);
  });

  it("writers on several clients lose no update", async () => {
    const clients = Array.from({ length: 4 }, () => blobService().getContainerClient(container.containerName));
    await Promise.all(
      clients.map(async (client) => {
        const cell = containerMetadataCell(client);
        for (let i = 0; i < 4; i++) {
          await optimisticUpdate(cell, (m) => ({ ...m, count: String(Number(m?.["count"] ?? 0) + 1) }), {
            ...quick,
            coalesce: false,
            maxAttempts: 200,
          });
        }
      }),
    );
    expect((await container.getProperties()).metadata).toMatchObject({ count: "16", owner: "ada" });
  });

  it("a change made between the read and the write is detected under the lease (no lost update)", async () => {
    const cell = containerMetadataCell(container);
    let sneaked = false;
    const result = await optimisticUpdate(
      cell,
      async (m) => {
        if (!sneaked) {
          sneaked = true;
          await container.setMetadata({ ...m, owner: "grace" }); // another writer, after our read
        }
        return { ...m, plan: "basic" };
      },
      { ...quick, skipReadAfterOwnWrite: false },
    );
    expect(result.attempts).toBe(2);
    expect((await container.getProperties()).metadata).toMatchObject({ owner: "grace", plan: "basic" });
  });

  it("a lease held by someone else: conflicts until it is released; with its id, writes go through", async () => {
    const theirs = container.getBlobLeaseClient(randomUUID());
    await theirs.acquireLease(15);
    const blocked = await optimisticUpdate(containerMetadataCell(container), (m) => ({ ...m, x: "1" }), {
      ...quick,
      maxAttempts: 3,
    }).catch((e: unknown) => e);
    expect(isOptimisticConflictError(blocked)).toBe(true);
    expect(blocked).toMatchObject({ attempts: 3, serviceCode: "LeaseAlreadyPresent" });
    const withLease = containerMetadataCell(container, { leaseId: theirs.leaseId });
    expect(await optimisticUpdate(withLease, (m) => ({ ...m, x: "2" }))).toMatchObject({
      value: { owner: "ada", x: "2" },
    });
    expect((await container.getProperties()).leaseState).toBe("leased"); // their lease is left alone
    await theirs.releaseLease();
  });

  it("refuses names the service would not take, and the reserved name, before any request", async () => {
    const cell = containerMetadataCell(container);
    await expect(writeLastWriterWins(cell, { "not-valid": "x" })).rejects.toThrow(/C# identifiers/);
    await expect(writeLastWriterWins(cell, { asc_optimistic: "x" })).rejects.toThrow(/reserved/);
    await expect(writeLastWriterWins(cell, { note: "caf\u00e9" })).rejects.toThrow(/printable ASCII/);
    await expect(writeLastWriterWins(cell, { a: "x", A: "y" })).rejects.toThrow(/differ only in case/);
    await expect(writeLastWriterWins(cell, { big: "x".repeat(9000) })).rejects.toThrow(RangeError);
    expect((await container.getProperties()).metadata).toEqual({ owner: "ada" });
  });

  it("creates an absent container; last writer wins replaces without a lease", async () => {
    const absent = blobService().getContainerClient(uniqueName("optmetanew"));
    try {
      const cell = containerMetadataCell(absent);
      expect(await readCell(cell)).toEqual({ exists: false, changed: true });
      await optimisticUpdate(cell, () => ({ created: "yes" }));
      expect((await absent.getProperties()).metadata).toMatchObject({ created: "yes" });
      await writeLastWriterWins(cell, { replaced: "yes" });
      expect(await readCell(cell)).toMatchObject({ value: { replaced: "yes" } });
    } finally {
      await absent.deleteIfExists();
    }
  });

  it("why a lease: the SDK offers no If-Match for Set Container Metadata and refuses If-Unmodified-Since", async () => {
    await expect(container.setMetadata({ a: "1" }, { conditions: { ifUnmodifiedSince: new Date() } })).rejects.toThrow(
      RangeError,
    );
  });
});

describe("container metadata cells under faults (issue 11) [Azurite only]", () => {
  const viaProxy = (connectionString: string, retryOptions: object = { maxTries: 1 }) =>
    blobService(connectionString, { retryOptions }).getContainerClient(container.containerName);
  const isRead = (info: { method: string; path: string }) =>
    (info.method === "GET" || info.method === "HEAD") && !/comp=/.test(info.path);

  it("a write that was never sent is never 'unknown' (defect 10)", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    const cell = containerMetadataCell(viaProxy(connectionString));

    // The lease is refused (another writer holds it), then reading again fails: nothing was written.
    const theirs = container.getBlobLeaseClient(randomUUID());
    await theirs.acquireLease(15);
    let reads = 0;
    const removeRule = proxy.addRule({ when: (info) => isRead(info) && ++reads > 1, action: { type: "serverBusy" } });
    const refused = await optimisticUpdate(cell, (m) => ({ ...m, x: "1" }), { ...quick, maxAttempts: 3 }).catch(
      (e: unknown) => e,
    );
    expect(isOptimisticOutcomeUnknownError(refused)).toBe(false);
    expect(isStorageRequestError(refused)).toBe(true);
    expect((refused as Error).message).toMatch(/^Could not read metadata of container/);
    await theirs.releaseLease();
    removeRule();
  });

  it("an internal error type never reaches the caller (defect 10)", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    const cell = containerMetadataCell(viaProxy(connectionString));
    // Set Container Metadata answered 412 (our lease lost), and every read after it fails: the
    // outcome is open, and it is said in the documented type, not as a raw ConditionNotMet.
    let lost = false;
    proxy.addRule({
      times: 1,
      method: "PUT",
      when: (info) => /comp=metadata/.test(info.path) && (lost = true),
      action: { type: "status", statusCode: 412, serviceCode: "LeaseLost" },
    });
    proxy.addRule({ when: (info) => lost && isRead(info), action: { type: "serverBusy" } });
    const open = await optimisticUpdate(cell, (m) => ({ ...m, y: "1" }), quick).catch((e: unknown) => e);
    expect(open).not.toMatchObject({ code: "ConditionNotMet" });
    expect(isOptimisticOutcomeUnknownError(open)).toBe(true);
    expect((await container.getProperties()).metadata).toEqual({ owner: "ada" });
  });

  it("a write holds the lease for a bounded time: the SDK's back-off is cut short and the update goes through (defect 11)", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    // The SDK would wait two minutes before trying Set Container Metadata again, holding the lease.
    const patient = { retryPolicyType: StorageRetryPolicyType.FIXED, retryDelayInMs: 120_000, maxTries: 3 };
    const cell = containerMetadataCell(viaProxy(connectionString, patient), { requestTimeoutInMs: 500 });
    proxy.addRule({ times: 1, method: "PUT", path: /comp=metadata/, action: { type: "serverBusy" } });
    expect(await optimisticUpdate(cell, (m) => ({ ...m, plan: "basic" }), quick)).toMatchObject({ written: true });
    const properties = await container.getProperties();
    expect(properties.metadata).toMatchObject({ owner: "ada", plan: "basic" });
    expect(properties.leaseState).toBe("available");
  });

  it("a lease whose acquire got no clear answer is released (defect 12)", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    const cell = containerMetadataCell(viaProxy(connectionString), { requestTimeoutInMs: 500 });
    const acquire = (info: { headers: Record<string, unknown> }) => info.headers["x-ms-lease-action"] === "acquire";
    for (const action of [
      { type: "statusAfterApply", statusCode: 500, serviceCode: "OperationTimedOut" },
      { type: "hang", afterApply: true },
    ] as const) {
      proxy.addRule({ times: 1, method: "PUT", when: acquire, action });
      // The write was never sent; the next attempt takes the lease again, which a lease left held
      // for its 15 s would refuse (409) on every attempt.
      expect(await optimisticUpdate(cell, (m) => ({ ...m, z: action.type }), quick)).toMatchObject({ written: true });
      const properties = await container.getProperties();
      expect(properties.leaseState).toBe("available");
      expect(properties.metadata).toMatchObject({ owner: "ada", z: action.type });
    }
    // The caller cancels while the acquire (granted) has no answer yet: released all the same.
    proxy.addRule({ times: 1, method: "PUT", when: acquire, action: { type: "hang", afterApply: true } });
    const controller = new AbortController();
    const cancelled = optimisticUpdate(cell, (m) => ({ ...m, z: "cancelled" }), { abortSignal: controller.signal });
    while (!proxy.requests.some((r) => r.outcome === "hang")) await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort(new Error("the caller gave up"));
    await expect(cancelled).rejects.toThrow("the caller gave up");
    const properties = await container.getProperties();
    expect(properties.leaseState).toBe("available");
    expect(properties.metadata).toMatchObject({ owner: "ada", z: "hang" }); // nothing of the cancelled update
  });
});
