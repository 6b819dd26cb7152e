/**
 * File and share leases in the lease lock engine (fileLock, shareLock), through the real SDK: on the
 * Files responder by default, on a real account under `npm run test:live`. The parts that need the
 * responder's hooks (a hand-driven clock, a fault proxy) are responder only.
 */
import { randomUUID } from "node:crypto";
import { ShareServiceClient, type ShareClient, type ShareFileClient } from "@azure/storage-file-share";
import {
  fileCodecs,
  isFileLeaseConflictError,
  readFileContent,
  updateFileUnderLease,
  writeFileLastWriterWins,
  writeFileUnderLease,
} from "../../../src/files/index.js";
import {
  fileLock,
  isLeaseLostError,
  isLeaseTargetNotFoundError,
  isLockTimeoutError,
  LeaseLock,
  LOCK_METADATA,
  shareLeasable,
  shareLock,
  type Leasable,
  type LockHandle,
} from "../../../src/lease/index.js";
import { SDK_SINGLE_ATTEMPT } from "../../../src/retry/index.js";
import { serviceCodeOf, statusOf } from "../../../src/error-codes.js";
import { buildConnectionString, createFaultProxy, type FaultProxy } from "../../../src/testing/index.js";
import { describeFiles, describeResponderOnly, openFilesTarget, type FilesTarget } from "../../support/files.js";

const counter = fileCodecs.json<{ n: number }>();

async function newFile(
  share: ShareClient,
  name: string,
  content: string,
  metadata: Record<string, string> = {},
): Promise<ShareFileClient> {
  const file = share.rootDirectoryClient.getFileClient(name);
  await writeFileLastWriterWins(file, content, { metadata });
  return file;
}

/** Resolves when the handle's signal has aborted (it may already have). */
function lost(handle: LockHandle): Promise<unknown> {
  if (handle.signal.aborted) return Promise.resolve(handle.signal.reason);
  return new Promise((resolve) =>
    handle.signal.addEventListener("abort", () => resolve(handle.signal.reason), { once: true }),
  );
}

/** `direct`'s file through `proxy`, the SDK making one attempt per call. */
function throughProxy(proxy: FaultProxy, direct: ShareFileClient): ShareFileClient {
  return ShareServiceClient.fromConnectionString(buildConnectionString({ fileEndpoint: proxy.endpoint }), {
    retryOptions: SDK_SINGLE_ATTEMPT.storage,
  })
    .getShareClient(direct.shareName)
    .rootDirectoryClient.getFileClient(direct.path);
}

describeFiles("file locks (fileLock)", () => {
  let target: FilesTarget;
  let share: ShareClient;
  beforeAll(async () => {
    target = await openFilesTarget();
    share = await target.newShare("flock");
  });
  afterAll(() => target.close());

  it("withLock + the helpers with the handle: the holder's record and the user's metadata survive every write; the next token follows on", async () => {
    const file = await newFile(share, "counter.json", '{"n":0}', { team: "ops" });
    const lock = fileLock(file, { holderName: "updater" });
    const inside = await lock.withLock(async (handle) => {
      expect(handle.fencingToken).toBe(1);
      await updateFileUnderLease(file, handle, (c) => ({ n: c.n + 1 }), { codec: counter });
      // An explicit metadata set without the lock's entries: the handle's record is added back.
      await writeFileUnderLease(file, handle, JSON.stringify({ n: 5 }), { metadata: { team: "ops", step: "2" } });
      await updateFileUnderLease(file, handle, (c) => ({ n: c.n + 1 }), {
        codec: counter,
        metadata: () => ({ team: "ops" }),
      });
      return lock.inspect();
    });
    expect(inside).toMatchObject({
      held: true,
      state: "leased",
      durationType: "infinite",
      fencingToken: 1,
      holder: { name: "updater", pid: process.pid, durationInSeconds: Infinity, renewIntervalInMs: 10_000 },
    });
    const after = await file.getProperties();
    expect(after.leaseState).toBe("available");
    expect(after.metadata).toMatchObject({
      team: "ops",
      [LOCK_METADATA.fencingToken]: "1",
      [LOCK_METADATA.name]: "updater",
    });
    expect(after.metadata?.step).toBeUndefined();
    expect(counter.decode((await readFileContent(file)).content)).toEqual({ n: 6 });
    const next = await fileLock(file).acquire();
    expect(next.fencingToken).toBe(2);
    await next.release();
  });

  it("while held, writers and deleters without the lease are refused, and other locks wait (naming the holder)", async () => {
    const file = await newFile(share, "guarded.txt", "original");
    const handle = await fileLock(file, { holderName: "first" }).acquire();
    try {
      const intruder = await writeFileLastWriterWins(file, "intruder").catch((e: unknown) => e);
      expect(isFileLeaseConflictError(intruder) && intruder.code).toBe("FileLeasedByAnother");
      expect(statusOf(await file.delete().catch((e: unknown) => e))).toBe(412);
      expect(await fileLock(file).tryAcquire()).toBeUndefined();
      const timeout = await fileLock(file, { pollIntervalInMs: 50 })
        .acquire({ timeoutInMs: 300 })
        .catch((e: unknown) => e);
      expect(isLockTimeoutError(timeout) && timeout.holder?.name).toBe("first");
      expect((await readFileContent(file)).content.toString()).toBe("original");
    } finally {
      await handle.release();
    }
    expect((await file.getProperties()).leaseState).toBe("available");
  });

  it("the periodic check aborts the handle's signal after an outside break; the handle's writes are then not sent; withLock rejects with the loss", async () => {
    const file = await newFile(share, "broken.json", '{"n":0}');
    const lock = fileLock(file, { renewIntervalInMs: 200 });
    let lateWrite: unknown;
    const outcome = await lock
      .withLock(async (handle) => {
        await file.getShareLeaseClient().breakLease(); // an operator's `lock break --file`
        const reason = await lost(handle);
        lateWrite = await writeFileUnderLease(file, handle, '{"n":99}').catch((e: unknown) => e);
        expect(lateWrite).toBe(reason);
        return "finished";
      })
      .catch((e: unknown) => e);
    expect(isLeaseLostError(outcome)).toBe(true);
    expect(outcome).toMatchObject({
      reason: "renewal-rejected",
      statusCode: 412,
      serviceCode: "LeaseNotPresentWithFileOperation",
    });
    expect((outcome as Error).message).toMatch(/periodic check found the lease no longer held/);
    expect(lateWrite).toBe(outcome);
    expect(counter.decode((await readFileContent(file)).content)).toEqual({ n: 0 });
  });

  it("the check also notices a lease that was broken and taken by someone else", async () => {
    const file = await newFile(share, "taken.txt", "x");
    const handle = await fileLock(file, { renewIntervalInMs: 200 }).acquire();
    await file.getShareLeaseClient().breakLease();
    const other = await fileLock(file).acquire();
    expect(await lost(handle)).toMatchObject({
      name: "LeaseLostError",
      statusCode: 412,
      serviceCode: "LeaseIdMismatchWithFileOperation",
    });
    await handle.release(); // nothing left to release: no error
    expect((await file.getProperties()).leaseState).toBe("leased"); // still the other holder's
    await other.release();
  });

  it("await using releases on dispose, also when the lease was broken meanwhile or the file deleted under it", async () => {
    const file = await newFile(share, "scoped.txt", "x");
    const lock = fileLock(file);
    {
      await using handle = await lock.acquire();
      expect([handle.status, (await file.getProperties()).leaseState]).toEqual(["held", "leased"]);
    }
    expect((await file.getProperties()).leaseState).toBe("available");
    {
      await using _handle = await lock.acquire();
      await file.getShareLeaseClient().breakLease();
    }
    // Lease File: a broken lease can still be released with its id, which dispose does.
    expect((await file.getProperties()).leaseState).toBe("available");
    {
      await using handle = await lock.acquire();
      await file.delete({ leaseAccessConditions: { leaseId: handle.leaseId } });
    }
    expect(await file.exists()).toBe(false);
  });

  it("impossible settings and bad input are refused before any request; a missing file is LeaseTargetNotFoundError", async () => {
    const file = await newFile(share, "input.txt", "x");
    expect(() => fileLock(file, { durationInSeconds: 30 })).toThrow(/only has infinite leases/);
    expect(() => fileLock({} as never)).toThrow(TypeError);
    await expect(fileLock(file).break({ breakPeriodInSeconds: 5 })).rejects.toThrow(/file leases take no break period/);
    expect((await file.getProperties()).leaseState).toBe("available");
    const missing = await fileLock(share.rootDirectoryClient.getFileClient("missing.txt"))
      .tryAcquire()
      .catch((e: unknown) => e);
    expect(isLeaseTargetNotFoundError(missing) && missing.statusCode).toBe(404);
    expect((missing as Error).message).toMatch(/does not exist; create it first/);
  });
});

describeFiles("share locks (shareLock)", () => {
  let target: FilesTarget;
  beforeAll(async () => {
    target = await openFilesTarget();
  });
  afterAll(() => target.close());

  /** A share leasable that counts successful renewals. */
  function counted(share: ShareClient): { leasable: Leasable; renewals: () => number } {
    const inner = shareLeasable(share);
    let renewals = 0;
    return {
      leasable: { ...inner, renew: async (...args) => (await inner.renew(...args), void (renewals += 1)) },
      renewals: () => renewals,
    };
  }

  it("a finite share lock renews while held, records its holder in the share's metadata, and guards Delete Share", async () => {
    const share = await target.newShare("slock");
    const { leasable, renewals } = counted(share);
    const lock = new LeaseLock(leasable, { durationInSeconds: 15, renewIntervalInMs: 200, holderName: "janitor" });
    const handle = await lock.acquire();
    while (renewals() < 3) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(handle.status).toBe("held");
    expect(await lock.inspect()).toMatchObject({
      held: true,
      durationType: "fixed",
      fencingToken: 1,
      holder: { name: "janitor", durationInSeconds: 15 },
    });
    expect((await share.getProperties()).metadata).toMatchObject({ [LOCK_METADATA.name]: "janitor" });
    expect(statusOf(await share.delete().catch((e: unknown) => e))).toBe(412);
    await share.delete({ leaseAccessConditions: { leaseId: handle.leaseId } });
    await handle.release(); // the share is gone: nothing to release, no error
    expect(await share.exists()).toBe(false);
  });

  it("while held, the share's own writes need the lease id (412 LeaseIdMissing), and the lock's own writes name it", async () => {
    const share = await target.newShare("swrites");
    await share.setMetadata({ team: "ops" });
    const lock = shareLock(share, { durationInSeconds: Infinity, holderName: "archiver" });
    await lock.withLock(
      async (handle) => {
        const refusals = await Promise.all([
          share.setMetadata({ team: "other" }).catch((e: unknown) => e),
          share.setProperties({ quotaInGB: 100 }).catch((e: unknown) => e),
        ]);
        expect(refusals.map((e) => [statusOf(e), serviceCodeOf(e)])).toEqual([
          [412, "LeaseIdMissing"],
          [412, "LeaseIdMissing"],
        ]);
        await share.setProperties({ quotaInGB: 100, leaseAccessConditions: { leaseId: handle.leaseId } });
      },
      { timeoutInMs: 10_000 },
    ); // a record write without the id would be refused, and the lock never taken
    // The lock wrote its record under the lease (merged with the share's metadata) and released it.
    expect((await share.getProperties()).metadata).toMatchObject({ team: "ops", [LOCK_METADATA.name]: "archiver" });
    expect(await lock.inspect()).toMatchObject({ held: false, fencingToken: 1 });
  });

  it("a renewal after the lease was broken at once does not take it back: the holder loses the lock, the lease stays broken", async () => {
    const share = await target.newShare("sbroken");
    const handle = await shareLock(share, { durationInSeconds: 15, renewIntervalInMs: 200 }).acquire();
    await share.getShareLeaseClient().breakLease({ breakPeriod: 0 } as never);
    const reason = await lost(handle);
    expect(isLeaseLostError(reason)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 300)); // a renewal would have run by now
    expect((await share.getProperties()).leaseState).toBe("broken");
    await handle.release();
  });

  it("an infinite share lock notices a break with a break period while the lease is still breaking", async () => {
    const share = await target.newShare("sbreaking");
    const lock = shareLock(share, { durationInSeconds: Infinity, renewIntervalInMs: 200 });
    const handle = await lock.acquire();
    expect(await lock.break({ breakPeriodInSeconds: 20 })).toBeGreaterThan(0);
    expect(isLeaseLostError(await lost(handle))).toBe(true);
    expect((await share.getProperties()).leaseState).toBe("breaking");
    await handle.release();
  });

  it("bad input is refused before any request", () => {
    expect(() => shareLock({} as never)).toThrow(TypeError);
    expect(() => shareLock(target.shares().getShareClient("any"), { durationInSeconds: 10 })).toThrow(/from 15 to 60/);
  });
});

describeResponderOnly("file and share leases: lost responses and lease timing (responder only)", () => {
  let now = Date.UTC(2030, 0, 1);
  let target: FilesTarget;
  beforeAll(async () => {
    target = await openFilesTarget({ now: () => now });
  });
  afterAll(() => target.close());

  it("shareLeasable.renew restarts a finite lease's clock, and refuses (412) after a break or when another id holds the share", async () => {
    const share = await target.newShare("srenew");
    const leasable = shareLeasable(share);
    const id = randomUUID();
    await leasable.acquire(15, id);
    now += 10_000;
    await leasable.renew(id, { durationInSeconds: 15 });
    now += 10_000; // 20 s after the acquire: only the renewal keeps it
    expect((await share.getProperties()).leaseState).toBe("leased");
    await leasable.breakLease(0);
    expect(statusOf(await leasable.renew(id, { durationInSeconds: 15 }).catch((e: unknown) => e))).toBe(412);
    expect((await share.getProperties()).leaseState).toBe("broken");
    await leasable.acquire(15, randomUUID());
    expect(statusOf(await leasable.renew(id, { durationInSeconds: 15 }).catch((e: unknown) => e))).toBe(412);
  });

  it("a file lock whose acquire response is lost still takes the lock, once: the retry with the same lease id is granted", async () => {
    const share = await target.newShare("flost");
    const direct = await newFile(share, "lost-ack.txt", "x");
    await using proxy = await createFaultProxy({ target: target.responder!.endpoint });
    const file = throughProxy(proxy, direct);
    proxy.addRule({ method: "PUT", path: /comp=lease/, times: 1, action: { type: "dropResponse" } });
    const handle = await fileLock(file).acquire({ timeoutInMs: 10_000 });
    expect(proxy.requests.filter((r) => /comp=lease/.test(r.path)).map((r) => r.outcome)).toEqual([
      "dropResponse",
      "forwarded",
    ]);
    expect(await fileLock(direct).tryAcquire()).toBeUndefined();
    await handle.release();
    expect((await direct.getProperties()).leaseState).toBe("available");
  });
  /** A file lock whose requests pass a fault proxy (the SDK making one attempt per call). */
  async function lockedViaProxy(name: string, attemptTimeoutInMs?: number) {
    const share = await target.newShare("frelease");
    const direct = await newFile(share, name, "x");
    const proxy = await createFaultProxy({ target: target.responder!.endpoint });
    const file = throughProxy(proxy, direct);
    const handle = await fileLock(file, attemptTimeoutInMs === undefined ? {} : { attemptTimeoutInMs }).acquire();
    const release = (r: { method: string; path: string }) => r.method === "PUT" && /comp=lease/.test(r.path);
    return { direct, proxy, handle, release };
  }

  it("a file lock's release that gets no answer is sent again: an infinite lease is not left held by one lost answer", async () => {
    const { direct, proxy, handle, release } = await lockedViaProxy("release-reset.txt");
    await using _ = proxy;
    proxy.addRule({ method: "PUT", path: /comp=lease/, times: 1, action: { type: "reset" } });
    await handle.release();
    expect(proxy.requests.filter(release).map((r) => r.outcome)).toEqual(["forwarded", "reset", "forwarded"]);
    expect((await direct.getProperties()).leaseState).toBe("available");
  });

  it("a release applied whose answer was lost is sent again and answered 409: released, without an error", async () => {
    const { direct, proxy, handle, release } = await lockedViaProxy("release-drop.txt");
    await using _ = proxy;
    proxy.addRule({ method: "PUT", path: /comp=lease/, times: 1, action: { type: "dropResponse" } });
    await handle.release();
    expect(proxy.requests.filter(release).map((r) => `${r.outcome} ${r.statusCode}`)).toEqual([
      "forwarded 201",
      "dropResponse 200",
      "forwarded 409",
    ]);
    expect((await direct.getProperties()).leaseState).toBe("available");
  });

  it("a release that hangs is ended by its client-side time limit (attemptTimeoutInMs) and sent again", async () => {
    const { direct, proxy, handle, release } = await lockedViaProxy("release-hang.txt", 200);
    await using _ = proxy;
    proxy.addRule({ method: "PUT", path: /comp=lease/, times: 1, action: { type: "hang" } });
    // Without a client-side limit the release waits for ever: bound the wait to tell.
    const hung = new Promise<"hung">((resolve) => setTimeout(() => resolve("hung"), 10_000).unref());
    expect(await Promise.race([handle.release(), hung])).toBeUndefined();
    expect(proxy.requests.filter(release).map((r) => r.outcome)).toEqual(["forwarded", "hang", "forwarded"]);
    expect((await direct.getProperties()).leaseState).toBe("available");
  });

  it("the lock's periodic check that hangs is ended by its time limit, so a later check still notices a break", async () => {
    const share = await target.newShare("fcheck");
    const direct = await newFile(share, "check-hang.txt", "x");
    await using proxy = await createFaultProxy({ target: target.responder!.endpoint });
    const file = throughProxy(proxy, direct);
    proxy.addRule({
      method: "HEAD",
      when: (r) => r.headers["x-ms-lease-id"] !== undefined,
      times: 1,
      action: { type: "hang" },
    });
    const handle = await fileLock(file, { renewIntervalInMs: 100, attemptTimeoutInMs: 200 }).acquire();
    await direct.getShareLeaseClient().breakLease();
    const hung = new Promise<"hung">((resolve) => setTimeout(() => resolve("hung"), 10_000).unref());
    expect(isLeaseLostError(await Promise.race([lost(handle), hung]))).toBe(true);
    await handle.release();
  });

  it("bad attemptTimeoutInMs is refused before any request", () => {
    const file = target.shares().getShareClient("any").rootDirectoryClient.getFileClient("f");
    expect(() => fileLock(file, { attemptTimeoutInMs: 0 })).toThrow(/attemptTimeoutInMs/);
    expect(() => shareLock(target.shares().getShareClient("any"), { attemptTimeoutInMs: -1 })).toThrow(
      /attemptTimeoutInMs/,
    );
  });
});
