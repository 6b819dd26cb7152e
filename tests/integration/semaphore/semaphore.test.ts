/**
 * The blob-lease semaphore against a real Azurite, in one process: at most `maxCount` permits, each
 * on its own slot with a fencing token per slot that goes up; waiting, timing out and cancelling
 * without leaving anything held; the scoped forms; a lowered `maxCount`; a lost permit; and what
 * is refused before any request. (Several processes: ./processes.test.ts. Every fault at every
 * request: tests/integration/explorer/semaphore.test.ts.)
 */
import { expect } from "@jest/globals";
import {
  blobLock,
  blobSemaphore,
  isLeaseLostError,
  isLeaseTargetNotFoundError,
  isSemaphoreTimeoutError,
  type BlobSemaphoreOptions,
} from "../../../src/index.js";
import { countingContainer } from "../../../tools/bench/counting-client.js";
import { blobService, connectionString, uniqueName } from "../../support/storage.js";

const OPTIONS = { durationInSeconds: 15, pollIntervalInMs: 20 } as const;
const semaphore = (containerName: string, maxCount: number, options: Partial<BlobSemaphoreOptions> = {}) =>
  blobSemaphore(blobService().getContainerClient(containerName), "exports", { ...OPTIONS, ...options, maxCount });

describe("blob semaphore", () => {
  it("gives at most maxCount permits, each on its own slot, creating the container and slots on first use", async () => {
    const name = uniqueName("sem");
    const exports = semaphore(name, 3, { holderName: "exporter" });
    const permits = [await exports.tryAcquire(), await exports.tryAcquire(), await exports.tryAcquire()];
    expect(permits.map((p) => p?.slot).sort()).toEqual([0, 1, 2]);
    expect(permits.map((p) => p?.fencingToken)).toEqual([1, 1, 1]);
    expect(permits.map((p) => p?.status)).toEqual(["held", "held", "held"]);
    expect(await exports.tryAcquire()).toBeUndefined();
    expect(await semaphore(name, 3).tryAcquire()).toBeUndefined(); // another object, same semaphore

    const info = await exports.inspect();
    expect(info).toMatchObject({ description: `semaphore '${name}/exports'`, maxCount: 3, held: 3, available: 0 });
    expect(info.slots.map((s) => [s.slot, s.blobName, s.state, s.fencingToken])).toEqual([
      [0, "exports/slot-0", "leased", 1],
      [1, "exports/slot-1", "leased", 1],
      [2, "exports/slot-2", "leased", 1],
    ]);
    expect(info.slots[0]!.holder).toMatchObject({ name: "exporter", pid: process.pid });

    const freed = permits[1]!;
    await freed.release();
    expect(freed.status).toBe("released");
    expect(freed.abortSignal.aborted).toBe(true);
    // The freed slot is taken again by another object; its token goes up, the others' stay.
    const again = await semaphore(name, 3).tryAcquire();
    expect([again?.slot, again?.fencingToken]).toEqual([freed.slot, 2]);
    await Promise.all([...permits, again].map((p) => p?.release() ?? Promise.resolve()));
    expect((await exports.inspect()).held).toBe(0);
  });

  it("acquire waits for a release; timing out or cancelling leaves nothing held", async () => {
    const name = uniqueName("sem");
    const exports = semaphore(name, 2);
    const [a, b] = [await exports.acquire(), await exports.acquire()];
    const waiting = semaphore(name, 2).acquire({ timeoutInMs: 10_000 });
    setTimeout(() => void a.release(), 50);
    const c = await waiting;
    expect(c.slot).toBe(a.slot);
    expect(c.fencingToken).toBe(a.fencingToken! + 1);

    // Long enough for a look to be answered on a loaded machine: the message names the holders it saw.
    const timedOut = await semaphore(name, 2, { holderName: "late" })
      .acquire({ timeoutInMs: 1_000 })
      .catch((error: unknown) => error);
    expect(isSemaphoreTimeoutError(timedOut) && timedOut).toMatchObject({
      code: "SemaphoreTimeout",
      timeoutInMs: 1_000,
      maxCount: 2,
      message: expect.stringMatching(/within 1000 ms: held by .*\(pid \d+\)/),
    });
    const controller = new AbortController();
    const cancelled = semaphore(name, 2).acquire({ abortSignal: controller.signal });
    setTimeout(() => controller.abort(new Error("shutting down")), 50);
    await expect(cancelled).rejects.toThrow("shutting down");

    const info = await exports.inspect();
    expect(
      info.slots
        .filter((s) => s.held)
        .map((s) => s.slot)
        .sort(),
    ).toEqual([b.slot, c.slot].sort());
    await Promise.all([b.release(), c.release()]);
    expect((await exports.inspect()).held).toBe(0);
  });

  it("several waiters of one process share the looks (one listing per poll interval), and each gets a permit", async () => {
    const name = uniqueName("sem");
    const kinds: Record<string, number> = {};
    const counted = countingContainer(connectionString(), name, kinds);
    const holders = [await semaphore(name, 2).acquire(), await semaphore(name, 2).acquire()];
    const pollIntervalInMs = 200;
    const waiters = Array.from({ length: 4 }, () =>
      blobSemaphore(counted, "exports", { ...OPTIONS, pollIntervalInMs, maxCount: 2 })
        .acquire({ timeoutInMs: 20_000 })
        .then(async (permit) => (await permit.release(), permit.slot)),
    );
    const started = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const looks = kinds["list-200"] ?? 0;
    const elapsed = performance.now() - started;
    // At most one look per 0.5 x 0.75 x the interval for the process (a long waiting head), not one per waiter.
    expect(looks).toBeLessThanOrEqual(Math.ceil(elapsed / (0.375 * pollIntervalInMs)) + 1);
    expect(looks).toBeGreaterThan(0);
    for (const holder of holders) await holder.release();
    expect((await Promise.all(waiters)).every((slot) => slot === 0 || slot === 1)).toBe(true);
    const tokens = (await semaphore(name, 2).inspect()).slots.map((s) => s.fencingToken);
    expect(tokens[0]! + tokens[1]!).toBe(6); // 2 holders and 4 waiters, one token each
  });

  it("withPermit and await using always release; a callback's error passes through", async () => {
    const name = uniqueName("sem");
    const exports = semaphore(name, 1);
    expect(await exports.withPermit((permit) => `slot ${permit.slot}, token ${permit.fencingToken}`)).toBe(
      "slot 0, token 1",
    );
    await expect(
      exports.withPermit(() => {
        throw new Error("export failed");
      }),
    ).rejects.toThrow("export failed");
    {
      await using permit = await exports.acquire();
      expect(permit.fencingToken).toBe(3);
      expect((await exports.inspect()).held).toBe(1);
    }
    expect((await exports.inspect()).held).toBe(0);
    await expect(exports.withPermit("not a function" as never)).rejects.toThrow(TypeError);
  });

  it("a lowered maxCount never takes the slots above it; their holders keep them until they release", async () => {
    const name = uniqueName("sem");
    const old = semaphore(name, 3);
    const permits = [await old.acquire(), await old.acquire(), await old.acquire()];
    const high = permits.find((p) => p.slot === 2)!;
    await Promise.all(permits.filter((p) => p !== high).map((p) => p.release()));

    const lowered = semaphore(name, 2);
    expect(await lowered.inspect()).toMatchObject({ held: 0, available: 2, heldAboveMaxCount: 1 });
    const taken = [await lowered.tryAcquire(), await lowered.tryAcquire()];
    expect(taken.map((p) => p?.slot).sort()).toEqual([0, 1]);
    expect(await lowered.tryAcquire()).toBeUndefined();
    expect(high.status).toBe("held"); // still held: the lowered count leaves it alone
    await high.release();
    // Free now, but above the lowered count: never taken by it.
    expect(await lowered.tryAcquire()).toBeUndefined();
    expect(await lowered.acquire({ timeoutInMs: 100 }).catch((error: unknown) => error)).toMatchObject({
      code: "SemaphoreTimeout",
    });
    await Promise.all(taken.map((p) => p?.release() ?? Promise.resolve()));
  });

  it("a permit whose slot is broken is lost: its signal aborts with a LeaseLostError, and the slot goes on", async () => {
    const name = uniqueName("sem");
    const exports = semaphore(name, 1, { renewIntervalInMs: 100 });
    const permit = await exports.acquire();
    await blobLock(blobService().getContainerClient(name), permit.slotBlobName).break();
    await new Promise((resolve) => permit.abortSignal.addEventListener("abort", resolve, { once: true }));
    expect(permit.status).toBe("lost");
    const reason: unknown = permit.abortSignal.reason;
    expect(isLeaseLostError(reason) && reason.reason).toBe("renewal-rejected");
    await permit.release(); // nothing to release; resolves
    const next = await exports.acquire({ timeoutInMs: 5_000 });
    expect(next.fencingToken).toBe(2);
    await next.release();
  });

  it("with createIfMissing: false, a missing container is a LeaseTargetNotFoundError", async () => {
    const missing = semaphore(uniqueName("none"), 2, { createIfMissing: false });
    const error = await missing.acquire({ timeoutInMs: 5_000 }).catch((e: unknown) => e);
    expect(isLeaseTargetNotFoundError(error)).toBe(true);
    const tried = await missing.tryAcquire().catch((e: unknown) => e);
    expect(isLeaseTargetNotFoundError(tried)).toBe(true);
  });
});
