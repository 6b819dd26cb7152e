/**
 * The lease lock against a real Azurite, in one process: acquiring, waiting, releasing, fencing
 * tokens and holder records, losing the lock, lost responses, creation races and bad input.
 */
// The typed `expect` (the global one of @types/jest declares asymmetric matchers as `any`).
import { expect } from "@jest/globals";
import {
  blobLeasable,
  blobLock,
  containerLock,
  isLeaseLostError,
  isLeaseTargetNotFoundError,
  isLockNotHeldError,
  isLockTimeoutError,
  LeaseLock,
} from "../../../src/lease/index.js";
import { SDK_SINGLE_ATTEMPT } from "../../../src/retry/index.js";
import { statusOf } from "../../../src/error-codes.js";
import { blobService, faultProxyFor, uniqueName } from "../../support/storage.js";

const container = () => blobService().getContainerClient(uniqueName("lk"));
const aborted = (signal: AbortSignal) =>
  new Promise<unknown>((resolve) =>
    signal.aborted
      ? resolve(signal.reason)
      : signal.addEventListener("abort", () => resolve(signal.reason), { once: true }),
  );

describe("lease lock", () => {
  it("creates the lock blob and container on first use, then excludes a second holder until released", async () => {
    const c = container();
    const lock = blobLock(c, "jobs/nightly", { durationInSeconds: 15, holderName: "first" });
    const handle = await lock.acquire();
    expect(handle.status).toBe("held");
    expect(handle.fencingToken).toBe(1);
    expect(handle.timeLeftInMs()).toBeGreaterThan(0);
    expect(await lock.tryAcquire()).toBeUndefined();

    const info = await lock.inspect();
    expect(info).toMatchObject({ exists: true, state: "leased", held: true, durationType: "fixed", fencingToken: 1 });
    expect(info.holder).toMatchObject({
      pid: process.pid,
      name: "first",
      durationInSeconds: 15,
      renewIntervalInMs: 5000,
    });

    await handle.release();
    expect(handle.status).toBe("released");
    expect(handle.abortSignal.aborted).toBe(true);
    expect(isLeaseLostError(handle.abortSignal.reason)).toBe(false);
    expect(handle.signal).toBe(handle.abortSignal); // the deprecated name, until 1.0
    const second = await lock.tryAcquire();
    expect(second?.fencingToken).toBe(2);
    await second!.release();
    expect((await lock.inspect()).state).toBe("available");
    await handle.release(); // a second release is a no-op
  });

  it("acquire waits for a release (reading the lease state, not hammering acquire) and times out with the holder named [Azurite only]", async () => {
    const c = container();
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    const holder = await blobLock(c, "l", { durationInSeconds: 15, holderName: "holder-a" }).acquire();
    const waiting = blobLock(blobService(connectionString).getContainerClient(c.containerName), "l", {
      pollIntervalInMs: 50,
    });

    const timeout = await waiting.acquire({ timeoutInMs: 400 }).catch((e: unknown) => e);
    expect(isLockTimeoutError(timeout)).toBe(true);
    expect(timeout).toMatchObject({ code: "LockTimeout", holder: { name: "holder-a" } });
    const acquires = proxy.requests.filter((r) => r.path.includes("comp=lease") && r.method === "PUT").length;
    const heads = proxy.requests.filter((r) => r.method === "HEAD").length;
    expect(heads).toBeGreaterThan(2);
    // one acquire up front, then only HEADs while the lease is held; plus the release of the unused id
    expect(acquires).toBeLessThanOrEqual(2);

    const next = waiting.acquire({ timeoutInMs: 10_000 });
    setTimeout(() => void holder.release(), 100);
    const handle = await next;
    expect(handle.fencingToken).toBe(2);
    await handle.release();
  });

  it("withLock releases after the callback, also when it throws; await using releases at scope end", async () => {
    const c = container();
    const lock = blobLock(c, "scoped", { durationInSeconds: 15 });
    expect(await lock.withLock(async (h) => h.fencingToken)).toBe(1);
    await expect(lock.withLock(async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect((await lock.inspect()).state).toBe("available");
    {
      await using handle = await lock.acquire();
      expect(handle.fencingToken).toBe(3);
      expect((await lock.inspect()).held).toBe(true);
    }
    expect((await lock.inspect()).state).toBe("available");
  });

  it("writes to the leased blob itself need the lease id; keeping lockMetadata keeps the fencing counter", async () => {
    const c = container();
    const lock = blobLock(c, "data.json", { durationInSeconds: 15 });
    await lock.withLock(async (handle) => {
      const blob = c.getBlockBlobClient("data.json");
      const without = await blob.upload("x", 1).catch((e: unknown) => e);
      expect(statusOf(without)).toBe(412);
      await blob.upload("y", 1, {
        metadata: { ...handle.lockMetadata, mine: "1" },
        conditions: { leaseId: handle.leaseId },
      });
    });
    const next = await lock.acquire();
    expect(next.fencingToken).toBe(2);
    expect((await c.getBlockBlobClient("data.json").getProperties()).metadata).toMatchObject({ mine: "1" });
    await next.release();
  });

  it("a broken lease aborts the holder's signal with LeaseLostError at its next renewal", async () => {
    const c = container();
    const lock = blobLock(c, "broken", { durationInSeconds: 15, renewIntervalInMs: 200 });
    const handle = await lock.acquire();
    const reason = aborted(handle.abortSignal);
    await lock.break({ breakPeriodInSeconds: 0 });
    const lost = await reason;
    expect(isLeaseLostError(lost)).toBe(true);
    expect(lost).toMatchObject({ reason: "renewal-rejected", statusCode: 409, leaseId: handle.leaseId });
    expect(handle.status).toBe("lost");
    expect(() => handle.assertHeld()).toThrow(expect.objectContaining({ code: "LockNotHeld" }));
    await handle.release(); // nothing to release; resolves
  });

  it("an infinite lease is checked periodically: a break is noticed", async () => {
    const c = container();
    const lock = blobLock(c, "infinite", { durationInSeconds: Infinity, renewIntervalInMs: 150 });
    const handle = await lock.acquire();
    expect(handle.timeLeftInMs()).toBe(Infinity);
    expect((await lock.inspect()).durationType).toBe("infinite");
    const reason = aborted(handle.abortSignal);
    await lock.break();
    expect(await reason).toMatchObject({ name: "LeaseLostError", reason: "renewal-rejected" });
  });

  it("renew is told the duration the lease was acquired with (-1 for infinite), so an adapter that re-acquires can", async () => {
    for (const [durationInSeconds, expected] of [
      [15, 15],
      [Infinity, -1],
    ] as const) {
      const inner = blobLeasable(container(), "told");
      const told: (number | undefined)[] = [];
      const lock = new LeaseLock(
        {
          ...inner,
          renew: (leaseId, options) => (told.push(options?.durationInSeconds), inner.renew(leaseId, options)),
        },
        { durationInSeconds, renewIntervalInMs: 100 },
      );
      const handle = await lock.acquire();
      while (told.length < 2) await new Promise((resolve) => setTimeout(resolve, 20));
      await handle.release();
      expect(new Set(told)).toEqual(new Set([expected]));
    }
  });

  it("an infinite lease's loss says a check found it gone, not that it expired", async () => {
    const lock = blobLock(container(), "infinite-words", { durationInSeconds: Infinity, renewIntervalInMs: 100 });
    const handle = await lock.acquire();
    await lock.break();
    const reason = (await aborted(handle.abortSignal)) as Error;
    expect(reason.message).toMatch(/periodic check found the lease no longer held/);
    expect(reason.message).not.toMatch(/expired/);
  });

  it("withLock rejects with the LeaseLostError when the lock was lost while the callback ran", async () => {
    const c = container();
    const lock = blobLock(c, "lost-in-callback", { durationInSeconds: 15, renewIntervalInMs: 150 });
    const result = lock.withLock(async (handle) => {
      await lock.break();
      await aborted(handle.abortSignal);
      return "finished anyway";
    });
    await expect(result).rejects.toMatchObject({ name: "LeaseLostError" });
  });

  it("a lost acquire response is recognised by its proposed lease id: the lock is taken, nothing orphaned [Azurite only]", async () => {
    const c = container();
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    await blobLock(c, "lost-response").withLock(() => undefined); // create the blob first
    // One attempt per SDK call, so the engine itself sees the lost response.
    const flaky = blobService(connectionString, { retryOptions: SDK_SINGLE_ATTEMPT.storage }).getContainerClient(
      c.containerName,
    );
    proxy.addRule({
      times: 1,
      when: (r) => r.headers["x-ms-lease-action"] === "acquire",
      action: { type: "dropResponse" },
    });
    const handle = await blobLock(flaky, "lost-response", { durationInSeconds: 15, pollIntervalInMs: 20 }).acquire({
      timeoutInMs: 5_000,
    });
    const acquires = proxy.requests.filter((r) => r.path.includes("comp=lease") && r.method === "PUT");
    expect(acquires.map((r) => [r.outcome, r.statusCode])).toEqual([
      ["dropResponse", 201],
      ["forwarded", 201], // the same proposed id again: granted, not 409 LeaseAlreadyPresent
    ]);
    expect(handle.fencingToken).toBe(2);
    await handle.release();
    expect((await blobLock(c, "lost-response").inspect()).state).toBe("available");
  });

  it("tryAcquire asks again after a lost response; if that is lost too, it gives the lease back [Azurite only]", async () => {
    const c = container();
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    await blobLock(c, "lost-try").withLock(() => undefined);
    const flaky = blobService(connectionString, { retryOptions: SDK_SINGLE_ATTEMPT.storage }).getContainerClient(
      c.containerName,
    );
    const isAcquire = (r: { headers: Record<string, unknown> }) => r.headers["x-ms-lease-action"] === "acquire";

    proxy.addRule({ times: 1, when: isAcquire, action: { type: "dropResponse" } });
    const handle = await blobLock(flaky, "lost-try").tryAcquire();
    expect(handle?.fencingToken).toBe(2);
    await handle!.release();

    proxy.addRule({ times: 2, when: isAcquire, action: { type: "dropResponse" } });
    await expect(blobLock(flaky, "lost-try").tryAcquire()).rejects.toMatchObject({
      name: "StorageRequestError",
      transient: true,
      message: expect.stringContaining("Could not take the lock on blob"),
    });
    expect((await blobLock(c, "lost-try").inspect()).state).toBe("available");
  });

  it.each([
    ["on", {}],
    ["off", { retryOptions: SDK_SINGLE_ATTEMPT.storage }],
  ])(
    "a lost answer to the holder record's write advances the fencing token exactly once (SDK retries %s) [Azurite only]",
    async (_, options) => {
      const c = container();
      const { proxy, connectionString } = await faultProxyFor("blob");
      await using _proxy = proxy;
      await blobLock(c, "record").withLock(() => undefined); // token 1
      const flaky = blobService(connectionString, options).getContainerClient(c.containerName);
      proxy.addRule({ times: 1, path: /comp=metadata/, action: { type: "dropResponse" } });
      const handle = await blobLock(flaky, "record", { pollIntervalInMs: 20 }).acquire({ timeoutInMs: 10_000 });
      expect(proxy.requests.filter((r) => r.outcome === "dropResponse")).toHaveLength(1);
      expect(handle.fencingToken).toBe(2);
      expect((await blobLock(c, "record").inspect()).fencingToken).toBe(2);
      await handle.release();
    },
  );

  it("fencing tokens stay unique when someone takes and releases the lock between a waiter's look and its acquire [Azurite only]", async () => {
    const c = container();
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    const direct = blobLock(c, "race", { durationInSeconds: 15 });
    const holder = await direct.acquire(); // token 1
    const waiter = blobLock(blobService(connectionString).getContainerClient(c.containerName), "race", {
      pollIntervalInMs: 20,
    });
    const waiting = waiter.acquire({ timeoutInMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 100)); // its first try got 409; now it polls
    let intruder: Promise<void> | undefined;
    proxy.addRule({
      times: 1,
      when: (r) => {
        if (r.headers["x-ms-lease-action"] !== "acquire") return false;
        // The waiter saw the lease free and sent its acquire: someone else gets in first.
        intruder = direct.withLock((h) => void expect(h.fencingToken).toBe(2));
        return true;
      },
      action: { type: "delay", delayInMs: 400 },
    });
    await holder.release();
    const handle = await waiting;
    await intruder;
    expect(handle.fencingToken).toBe(3);
    expect(proxy.requests.some((r) => r.path.includes("comp=metadata") && r.statusCode === 412)).toBe(true);
    await handle.release();
  });

  it("many first users of a new container and blob race to create them: no errors, one holder", async () => {
    const c = container();
    const results = await Promise.all(
      Array.from({ length: 6 }, () => blobLock(blobService().getContainerClient(c.containerName), "new").tryAcquire()),
    );
    const held = results.filter((h) => h !== undefined);
    expect(held).toHaveLength(1);
    expect(held[0]!.fencingToken).toBe(1);
    await held[0]!.release();
  });

  it("a container lock makes deleting the container exclusive", async () => {
    const c = container();
    await c.create();
    const lock = containerLock(c, { durationInSeconds: 15 });
    const handle = await lock.acquire();
    expect(statusOf(await c.delete().catch((e: unknown) => e))).toBe(412);
    expect(await lock.inspect()).toMatchObject({ held: true, fencingToken: 1 });
    await c.delete({ conditions: { leaseId: handle.leaseId } });
    await handle.release(); // the container is gone: nothing to release, no error
  });

  it("cancelling a wait rejects with the signal's reason and leaves nothing held", async () => {
    const c = container();
    const lock = blobLock(c, "cancel", { durationInSeconds: 15 });
    const holder = await lock.acquire();
    const controller = new AbortController();
    const waiting = lock.acquire({ abortSignal: controller.signal });
    setTimeout(() => controller.abort(new Error("no longer needed")), 150);
    await expect(waiting).rejects.toThrow("no longer needed");
    await holder.release();
    expect((await lock.inspect()).state).toBe("available");
  });
});

describe("lease lock: bad input gets typed errors before any request", () => {
  const leasable = () => blobLeasable(container(), "x");

  it.each([[14], [61], [0], [-1], [20.5], [Number.NaN]])("durationInSeconds %p is refused", (durationInSeconds) => {
    expect(() => new LeaseLock(leasable(), { durationInSeconds })).toThrow(
      expect.objectContaining({ message: expect.stringContaining("`durationInSeconds`") }),
    );
  });

  it("a renewal cadence not shorter than the duration (minus the safety margin) is refused", () => {
    expect(() => new LeaseLock(leasable(), { durationInSeconds: 15, renewIntervalInMs: 15_000 })).toThrow(RangeError);
    expect(() => new LeaseLock(leasable(), { durationInSeconds: 15, renewIntervalInMs: 14_000 })).toThrow(
      /safety margin/,
    );
    expect(() => new LeaseLock(leasable(), { durationInSeconds: 15, renewIntervalInMs: 10_000 })).not.toThrow();
  });

  it("a missing container: a container lock, or a blob lock told not to create it, gives LeaseTargetNotFoundError", async () => {
    const missing = container();
    const viaContainer = await containerLock(missing)
      .tryAcquire()
      .catch((e: unknown) => e);
    expect(isLeaseTargetNotFoundError(viaContainer)).toBe(true);
    expect(viaContainer).toMatchObject({
      code: "LeaseTargetNotFound",
      statusCode: 404,
      serviceCode: "ContainerNotFound",
    });
    const viaBlob = await blobLock(missing, "x", { createIfMissing: false })
      .acquire()
      .catch((e: unknown) => e);
    expect(isLeaseTargetNotFoundError(viaBlob)).toBe(true);
    expect(await missing.exists()).toBe(false);
  });

  it("a lost handle refuses guarded work with LockNotHeldError", async () => {
    const lock = blobLock(container(), "guard", { durationInSeconds: 15 });
    const handle = await lock.acquire();
    await handle.release();
    const error = (() => {
      try {
        handle.assertHeld();
      } catch (e) {
        return e;
      }
    })();
    expect(isLockNotHeldError(error)).toBe(true);
  });
});
