/**
 * Claims about several processes, each a real child process on the shared Azurite:
 * mutual exclusion, takeover after a holder is SIGKILLed, a holder frozen past its lease is refused,
 * and a table read-modify-write under a table lock loses no update.
 *
 * Also the renewal fault test (one process, but it waits for a lease to expire too).
 * The tests that wait for a 15 s lease to expire run concurrently to keep the wall time down.
 */
import { blobLock, isLeaseLostError, tableLock } from "../../../src/lease/index.js";
import { spawnWorker, type WorkerProcess } from "../../support/processes.js";
import { blobService, faultProxyFor, tableClient, uniqueName } from "../../support/storage.js";

const WORKERS = "tests/integration/lease/workers";
type Section = { start: number; end: number; token: number; pid: number };

async function finish(worker: WorkerProcess): Promise<void> {
  const { code } = await worker.exited;
  if (code !== 0) throw new Error(`worker exited with ${code}:\n${worker.stderr()}`);
}

describe("lease locks across processes", () => {
  it("mutual exclusion: three processes taking one lock never overlap, and no unprotected update is lost", async () => {
    const container = blobService().getContainerClient(uniqueName("mx"));
    await container.create();
    await container.getBlockBlobClient("counter").upload("0", 1);
    const iterations = 8;
    const workers = [1, 2, 3].map(() =>
      spawnWorker(`${WORKERS}/mutex-worker.ts`, [container.containerName, "lock", "counter", String(iterations), "15"]),
    );
    await Promise.all(workers.map(finish));

    const sections = workers.flatMap((w) => w.messages as Section[]).filter((m) => "start" in m);
    expect(sections).toHaveLength(3 * iterations);
    sections.sort((a, b) => a.start - b.start);
    for (let i = 1; i < sections.length; i++) {
      expect(sections[i]!.start).toBeGreaterThanOrEqual(sections[i - 1]!.end); // no two critical sections overlap
      expect(sections[i]!.token).toBeGreaterThan(sections[i - 1]!.token); // fencing tokens follow the order of holding
    }
    expect(new Set(sections.map((s) => s.pid)).size).toBe(3);
    expect(Number((await container.getBlockBlobClient("counter").downloadToBuffer()).toString())).toBe(3 * iterations);
  }, 90_000);

  it("a table read-modify-write under a table lock across processes loses no update", async () => {
    const table = tableClient(uniqueName("tl"));
    await table.createTable();
    await table.createEntity({ partitionKey: "p", rowKey: "counter", count: 0 });
    const locks = uniqueName("tlk");
    const iterations = 6;
    const workers = [1, 2, 3].map(() =>
      spawnWorker(`${WORKERS}/table-worker.ts`, [locks, table.tableName, "p", "counter", String(iterations)]),
    );
    await Promise.all(workers.map(finish));
    const entity = await table.getEntity<{ count: number; lockFencingToken: number }>("p", "counter");
    expect(entity.count).toBe(3 * iterations);
    expect(entity.lockFencingToken).toBe(3 * iterations); // stamped by the last of 18 acquisitions
  }, 90_000);

  it.concurrent(
    "a holder killed with SIGKILL keeps the lock until its lease expires; then another process takes over",
    async () => {
      const container = blobService().getContainerClient(uniqueName("kill"));
      const holder = spawnWorker(`${WORKERS}/holder-worker.ts`, [container.containerName, "lock"]);
      const { token } = await holder.waitFor<{ acquired?: boolean; token: number }>((m) => m.acquired === true);
      await holder.kill("SIGKILL");

      const lock = blobLock(container, "lock", { durationInSeconds: 15, holderName: "successor" });
      expect(await lock.tryAcquire()).toBeUndefined(); // the dead holder's lease is still there
      const info = await lock.inspect();
      expect(info.holder).toMatchObject({ name: "doomed", pid: holder.child.pid });

      const handle = await lock.acquire({ timeoutInMs: 40_000 });
      expect(handle.fencingToken).toBe(token + 1);
      expect((await lock.inspect()).holder).toMatchObject({ name: "successor", pid: process.pid });
      await handle.release();
    },
    60_000,
  );

  it.concurrent(
    "a holder frozen (SIGSTOP) past its lease is refused when it wakes; its successor's write stands",
    async () => {
      const table = tableClient(uniqueName("st"));
      await table.createTable();
      await table.createEntity({ partitionKey: "p", rowKey: "r", owner: "nobody" });
      const locks = uniqueName("stk");
      const stale = spawnWorker(`${WORKERS}/paused-worker.ts`, [locks, table.tableName, "p", "r"]);
      const { token } = await stale.waitFor<{ ready?: boolean; token: number }>((m) => m.ready === true);
      stale.child.kill("SIGSTOP");
      try {
        const successor = tableLock(blobService().getContainerClient(locks), table, {
          scope: { partitionKey: "p" },
          durationInSeconds: 15,
        });
        await successor.withLock(
          async (guarded) => {
            expect(guarded.handle.fencingToken).toBe(token + 1);
            const entity = await guarded.getEntity<{ owner: string }>("p", "r");
            await guarded.updateEntity({ ...entity, owner: "successor" }, "Replace", { etag: entity.etag });
          },
          { timeoutInMs: 40_000 },
        );
      } finally {
        stale.child.kill("SIGCONT");
      }
      const outcome = await stale.waitFor<{ refused?: string; written?: boolean }>(
        (m) => m.refused !== undefined || m.written === true,
      );
      expect(outcome).toEqual({ refused: "LockNotHeldError", code: "LockNotHeld" });
      await finish(stale);
      expect((await table.getEntity<{ owner: string }>("p", "r")).owner).toBe("successor");
    },
    60_000,
  );

  it.concurrent(
    "renewals blocked: the holder's signal aborts before the service lease expires, and the successor starts after that",
    async () => {
      const { proxy, connectionString } = await faultProxyFor("blob");
      await using _ = proxy;
      const name = uniqueName("blk");
      const events: string[] = [];
      const holderLock = blobLock(blobService(connectionString).getContainerClient(name), "lock", {
        durationInSeconds: 15,
        renewIntervalInMs: 3_000,
      });
      const successorLock = blobLock(blobService().getContainerClient(name), "lock", { durationInSeconds: 15 });
      const handle = await holderLock.acquire();
      // From now on every renewal is answered 503 ServerBusy (the SDK retries, then the engine does).
      proxy.addRule({ when: (r) => r.headers["x-ms-lease-action"] === "renew", action: { type: "serverBusy" } });

      const stateAtAbort = new Promise<string>((resolve) =>
        handle.abortSignal.addEventListener("abort", () => {
          events.push("holder aborted");
          void successorLock.inspect().then((info) => resolve(info.state));
        }),
      );
      const successor = successorLock.acquire({ timeoutInMs: 40_000 }).then((h) => {
        events.push("successor acquired");
        return h;
      });
      expect(await stateAtAbort).toBe("leased"); // the service still held the lease for the old holder
      const next = await successor;
      expect(events).toEqual(["holder aborted", "successor acquired"]);
      expect(isLeaseLostError(handle.abortSignal.reason)).toBe(true);
      expect(handle.abortSignal.reason).toMatchObject({ reason: "expiry-guard" });
      expect(proxy.requests.filter((r) => r.outcome === "serverBusy").length).toBeGreaterThan(1);
      expect(next.fencingToken).toBe(handle.fencingToken! + 1);
      await next.release();
      await handle.release();
    },
    60_000,
  );
});
