/**
 * Nothing the lock does on its own waits for ever, and waiting never fails silently: against a
 * real Azurite behind the fault proxy, whose `hang` mode never answers (optionally after applying).
 *
 * Each test bounds what it waits for with `settles()`: a generous limit (far above the bound the
 * docs state) that turns "pending for ever" into a failure instead of a stuck test. No speed claim.
 */
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { format } from "node:util";
import { AzureLogger, setLogLevel } from "@azure/logger";
import { expect } from "@jest/globals";
import { blobLock, isLeaseLostError, isLockTimeoutError, listLocks } from "../../../src/lease/index.js";
import { listSlots } from "../../../src/semaphore/index.js";
import { isStorageRequestError } from "../../../src/index.js";
import { SDK_SINGLE_ATTEMPT } from "../../../src/retry/index.js";
import { blobService, faultProxyFor, uniqueName } from "../../support/storage.js";
import { settles } from "../../support/settles.js";

const REQUEST_TIMEOUT_IN_MS = 300;

const isLeaseAction = (action: string) => (r: { headers: Record<string, unknown> }) =>
  r.headers["x-ms-lease-action"] === action;

async function flakyLock(name: string, options: Parameters<typeof blobLock>[2] = {}) {
  const { proxy, connectionString } = await faultProxyFor("blob");
  const direct = blobService().getContainerClient(uniqueName("tl"));
  const flaky = blobService(connectionString).getContainerClient(direct.containerName);
  const lock = blobLock(flaky, name, { durationInSeconds: 15, requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS, ...options });
  return { proxy, direct, lock, inspect: () => blobLock(direct, name).inspect() };
}

describe("lease lock: client-side time limits", () => {
  it("release() settles when the endpoint hangs: rejects after the time limit, the lease left to expire", async () => {
    const { proxy, lock, inspect } = await flakyLock("release-hangs");
    await using _ = proxy;
    const handle = await lock.acquire();
    proxy.addRule({ action: { type: "hang" } });
    const released = await settles(handle.release());
    expect(released).toMatchObject({ settled: "rejected", error: { name: "StorageRequestError", transient: true } });
    expect(handle.status).toBe("released");
    expect((await inspect()).state).toBe("leased"); // never reached the service: it expires on its own
  });

  it("release() whose answer never comes (applied, then held back) settles, and the lease is free", async () => {
    const { proxy, lock, inspect } = await flakyLock("release-applied");
    await using _ = proxy;
    const handle = await lock.acquire();
    proxy.addRule({ when: isLeaseAction("release"), action: { type: "hang", afterApply: true } });
    expect((await settles(handle.release())).settled).toBe("rejected");
    expect((await inspect()).state).toBe("available");
  });

  it("withLock resolves with the callback's result when only the release fails: the work is done, the lease expires by itself", async () => {
    const { proxy, lock, inspect } = await flakyLock("withlock-release-fails");
    await using _ = proxy;
    const outcome = await settles(
      lock.withLock(() => {
        proxy.addRule({ when: isLeaseAction("release"), action: { type: "hang" } });
        return "done";
      }),
    );
    expect(outcome).toMatchObject({ settled: "resolved", value: "done" });
    expect((await inspect()).state).toBe("leased"); // the release never reached the service
  });

  it("withLock settles after a loss while the endpoint hangs (renewals and the release never answer)", async () => {
    const { proxy, lock } = await flakyLock("withlock-hangs", { safetyMarginInMs: 14_000, renewIntervalInMs: 200 });
    await using _ = proxy;
    const outcome = await settles(
      lock.withLock(async (handle) => {
        proxy.addRule({ action: { type: "hang" } }); // from now on nothing answers
        await new Promise((resolve) => handle.abortSignal.addEventListener("abort", resolve, { once: true }));
        return "done";
      }),
    );
    expect(outcome.settled).toBe("rejected");
    expect(isLeaseLostError((outcome as { error: unknown }).error)).toBe(true);
    expect((outcome as { error: unknown }).error).toMatchObject({ reason: "expiry-guard" });
  });

  it("a hung renewal is abandoned at its time limit and another is sent: the lock stays held", async () => {
    const { proxy, lock, inspect } = await flakyLock("renewal-hangs", { renewIntervalInMs: 400 });
    await using _ = proxy;
    proxy.addRule({ times: 1, when: isLeaseAction("renew"), action: { type: "hang" } });
    const handle = await lock.acquire();
    // The hung renewal, then a later lease request (a renewal: nothing else is sent) answered 200.
    const renewedAfterTheHang = () => {
      const hung = proxy.requests.findIndex((r) => r.outcome === "hang");
      return (
        hung >= 0 && proxy.requests.slice(hung + 1).some((r) => r.path.includes("comp=lease") && r.statusCode === 200)
      );
    };
    const renewed = async () => {
      while (!renewedAfterTheHang()) await new Promise((resolve) => setTimeout(resolve, 20));
    };
    expect((await settles(renewed(), 8_000)).settled).toBe("resolved");
    expect(handle.status).toBe("held");
    expect((await inspect()).held).toBe(true);
    await handle.release();
  });
});

describe("lock listings: client-side time limits", () => {
  it("listLocks and listSlots end within the bound with the typed time-out error when a page never comes, whatever the page runner", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    const direct = blobService().getContainerClient(uniqueName("tl"));
    await direct.create();
    try {
      await blobLock(direct, "listed").withLock(() => undefined);
      const flaky = blobService(connectionString).getContainerClient(direct.containerName);
      expect((await listLocks(flaky, undefined, { requestTimeoutInMs: 5_000 })).map((r) => r.name)).toEqual(["listed"]);
      proxy.addRule({ method: "GET", action: { type: "hang" } });
      const neverAborts = <T>(call: (signal: AbortSignal) => Promise<T>) => call(new AbortController().signal);
      const outcomes = await Promise.all([
        settles(listLocks(flaky, undefined, { requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS })),
        settles(listLocks(flaky, undefined, { requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS, runPage: neverAborts })),
        settles(listSlots(flaky, "sem", { requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS })),
      ]);
      for (const outcome of outcomes) {
        expect(outcome).toMatchObject({ settled: "rejected", error: { code: "RequestTimedOut", transient: true } });
      }
    } finally {
      await direct.delete();
    }
  });
});

describe("lease lock: waiting never fails silently", () => {
  const lines: string[] = [];
  const originalLog = AzureLogger.log;
  beforeEach(() => {
    lines.length = 0;
    AzureLogger.log = (...args: unknown[]) => void lines.push(format(...args));
    setLogLevel("warning");
  });
  afterEach(() => {
    AzureLogger.log = originalLog;
    setLogLevel(undefined);
  });

  it("transient failures while waiting are logged and become the LockTimeoutError's cause", async () => {
    const { proxy, lock } = await flakyLock("busy", { pollIntervalInMs: 20 });
    await using _ = proxy;
    proxy.addRule({ method: "HEAD", action: { type: "serverBusy" } });
    // Long enough for a HEAD to be answered 503 on a loaded machine (the first requests come before it).
    const error = await lock.acquire({ timeoutInMs: 2_000 }).catch((e: unknown) => e);
    expect(isLockTimeoutError(error)).toBe(true);
    expect((error as Error).cause).toMatchObject({ statusCode: 503 });
    expect((error as Error).message).toMatch(/failed \(503 ServerBusy\)/);
    expect(
      lines.some((line) => /warning waiting for the lock on blob .* failed transiently \(503 ServerBusy\)/.test(line)),
    ).toBe(true);
  });

  it("a refused connection ends the wait after `unreachableTimeoutInMs` with a StorageRequestError", async () => {
    const port = await closedPort();
    const unreachable = blobService(
      `DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:${port}/devstoreaccount1;`,
      { retryOptions: SDK_SINGLE_ATTEMPT.storage },
    ).getContainerClient("locks");
    const lock = blobLock(unreachable, "nowhere", { unreachableTimeoutInMs: 500, pollIntervalInMs: 20 });
    const outcome = await settles(lock.acquire());
    expect(outcome.settled).toBe("rejected");
    const error = (outcome as { error: unknown }).error;
    expect(isStorageRequestError(error)).toBe(true);
    expect(error).toMatchObject({ transient: true, serviceCode: "ECONNREFUSED" });
    expect((error as Error).message).toMatch(/no request got any answer from the service/);
    expect(
      lines.some((line) => /warning waiting for the lock .* failed transiently \(network ECONNREFUSED\)/.test(line)),
    ).toBe(true);
  });

  it("a hung endpoint ends the wait too: requests cut off by their time limit count as unanswered", async () => {
    const { proxy, lock } = await flakyLock("hung", { unreachableTimeoutInMs: 500, pollIntervalInMs: 20 });
    await using _ = proxy;
    proxy.addRule({ action: { type: "hang" } });
    const outcome = await settles(lock.acquire());
    expect(outcome).toMatchObject({
      settled: "rejected",
      error: { name: "StorageRequestError", serviceCode: "ClientTimeout" },
    });
  });

  it("a 403 ends the wait at once with a typed error; so does a missing blob with createIfMissing: false", async () => {
    const { proxy, lock } = await flakyLock("forbidden");
    await using _ = proxy;
    proxy.addRule({ action: { type: "status", statusCode: 403, serviceCode: "AuthorizationFailure" } });
    const forbidden = await settles(lock.acquire());
    expect(forbidden).toMatchObject({ settled: "rejected", error: { name: "StorageRequestError", statusCode: 403 } });
    const missing = await settles(
      blobLock(blobService().getContainerClient(uniqueName("tl")), "x", { createIfMissing: false }).acquire(),
    );
    expect(missing).toMatchObject({
      settled: "rejected",
      error: { name: "LeaseTargetNotFoundError", statusCode: 404 },
    });
  });
});

/** A local port on which nothing listens. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
