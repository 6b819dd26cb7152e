/**
 * SMB clients holding files: the responder's simulation (409 SharingViolation, 409 DeletePending
 * until the last handle closes, then 404) and the SMB retry preset that waits them out. Responder
 * only: a test cannot make an SMB client hold a file on a real account.
 */
import type { ShareClient, ShareFileClient } from "@azure/storage-file-share";
import { classifyError, fixedBackoff } from "../../../src/retry/index.js";
import { fileLock } from "../../../src/lease/index.js";
import {
  isSmbConflictError,
  readFileContent,
  retryWhileSmbLocked,
  writeFileUnderLease,
} from "../../../src/files/index.js";
import { isStorageRequestError } from "../../../src/index.js";
import { serviceCodeOf, statusOf } from "../../../src/error-codes.js";
import { SmbSharingViolationError } from "../../../src/testing/index.js";
import { describeResponderOnly, openFilesTarget, type FilesTarget } from "../../support/files.js";

const quick = { backoff: fixedBackoff({ delayInMs: 20 }) };

describeResponderOnly("SMB clients holding files (responder simulation + retry preset)", () => {
  let target: FilesTarget;
  let share: ShareClient;
  let legacy: FilesTarget;
  beforeAll(async () => {
    target = await openFilesTarget();
    share = await target.newShare("smb");
    legacy = await openFilesTarget({ deletePendingErrorCode: "SMBDeletePending" });
  });
  afterAll(async () => {
    await target.close();
    await legacy.close();
  });

  async function file(name: string, on: ShareClient = share): Promise<ShareFileClient> {
    const client = on.rootDirectoryClient.getFileClient(name);
    await client.create(5, { content: Buffer.from("hello"), contentLength: 5 });
    return client;
  }
  const smbPath = (f: ShareFileClient) => `${f.shareName}/${f.path}`;

  it("a handle sharing nothing: reads, writes and deletes get 409 SharingViolation; properties do not", async () => {
    const f = await file("locked.txt");
    const handle = target.responder!.smb.openFile(smbPath(f));
    const errors = await Promise.all(
      [f.downloadToBuffer(), f.uploadRange(Buffer.from("x"), 0, 1), f.delete()].map((p) => p.catch((e: unknown) => e)),
    );
    for (const error of errors) {
      expect([statusOf(error), serviceCodeOf(error), classifyError(error).kind]).toEqual([
        409,
        "SharingViolation",
        "smb-sharing-violation",
      ]);
    }
    await expect(f.getProperties()).resolves.toMatchObject({ contentLength: 5 });
    handle.close();
    expect((await f.downloadToBuffer()).toString()).toBe("hello");
  });

  it("a handle's share mode decides: shared read lets REST read but not write", async () => {
    const f = await file("shared-read.txt");
    const handle = target.responder!.smb.openFile(smbPath(f), { share: { read: true } });
    expect((await f.downloadToBuffer()).toString()).toBe("hello");
    expect(serviceCodeOf(await f.uploadRange(Buffer.from("x"), 0, 1).catch((e: unknown) => e))).toBe(
      "SharingViolation",
    );
    handle.close();
  });

  it("delete-on-close: every REST call gets 409 DeletePending until the last handle closes, then 404", async () => {
    const f = await file("pending.txt");
    const first = target.responder!.smb.openFile(smbPath(f), { share: { read: true, write: true, delete: true } });
    const second = target.responder!.smb.openFile(smbPath(f), { share: { read: true, write: true, delete: true } });
    first.deleteOnClose();
    for (const call of [f.getProperties(), f.downloadToBuffer(), f.getShareLeaseClient().acquireLease()]) {
      const error = await call.catch((e: unknown) => e);
      expect([statusOf(error), serviceCodeOf(error), classifyError(error).kind]).toEqual([
        409,
        "DeletePending",
        "smb-delete-pending",
      ]);
    }
    first.close();
    expect(serviceCodeOf(await f.getProperties().catch((e: unknown) => e))).toBe("DeletePending");
    second.close();
    expect(statusOf(await f.getProperties().catch((e: unknown) => e))).toBe(404);
  });

  it("can answer with the older code SMBDeletePending", async () => {
    const legacyShare = await legacy.newShare("smblegacy");
    const f = await file("old.txt", legacyShare);
    const handle = legacy.responder!.smb.openFile(smbPath(f), { share: { delete: true } });
    handle.deleteOnClose();
    const error = await f.getProperties().catch((e: unknown) => e);
    expect([serviceCodeOf(error), classifyError(error).kind]).toEqual(["SMBDeletePending", "smb-delete-pending"]);
    handle.close();
  });

  it("retryWhileSmbLocked waits until the SMB client closes the file, then succeeds", async () => {
    const f = await file("wait.txt");
    const handle = target.responder!.smb.openFile(smbPath(f));
    let retries = 0;
    const reading = retryWhileSmbLocked(({ abortSignal }) => f.downloadToBuffer(0, undefined, { abortSignal }), {
      ...quick,
      onRetry: () => {
        retries += 1;
        if (retries === 3) handle.close(); // the SMB client closes the file after a while
      },
    });
    expect((await reading).toString()).toBe("hello");
    expect(retries).toBe(3);
  });

  it("gives up at its deadline with an SmbConflictError that says an SMB client holds the file", async () => {
    const f = await file("stuck.txt");
    const handle = target.responder!.smb.openFile(smbPath(f));
    const error = await retryWhileSmbLocked(() => f.downloadToBuffer(), {
      ...quick,
      maxRetries: 4,
      operationName: "read 'stuck.txt'",
    }).catch((e: unknown) => e);
    handle.close();
    expect(isSmbConflictError(error)).toBe(true);
    expect(error).toMatchObject({
      code: "SmbFileLocked",
      statusCode: 409,
      serviceCode: "SharingViolation",
      attempts: 5,
    });
    expect((error as Error).message).toMatch(
      /^Could not read 'stuck.txt': an SMB client holds the file open \(409 SharingViolation/,
    );
  });

  it("a pending SMB delete: waits, and ends in the 404 once the handle closes (not an SMB error)", async () => {
    const f = await file("going.txt");
    const handle = target.responder!.smb.openFile(smbPath(f), { share: { delete: true } });
    handle.deleteOnClose();
    let retries = 0;
    const error = await retryWhileSmbLocked(() => f.getProperties(), {
      ...quick,
      onRetry: () => {
        if (++retries === 2) handle.close();
      },
    }).catch((e: unknown) => e);
    expect(isStorageRequestError(error) && error.statusCode).toBe(404);
    expect(isSmbConflictError(error)).toBe(false);
  });

  it("waitForDeletePending: false gives up at once with code SmbDeletePending", async () => {
    const f = await file("no-wait.txt");
    const handle = target.responder!.smb.openFile(smbPath(f), { share: { delete: true } });
    handle.deleteOnClose();
    const error = await retryWhileSmbLocked(() => f.getProperties(), { ...quick, waitForDeletePending: false }).catch(
      (e: unknown) => e,
    );
    handle.close();
    expect(error).toMatchObject({ name: "SmbConflictError", code: "SmbDeletePending", attempts: 1 });
  });

  it("other failures are not retried, and cancelling stops the waiting with the signal's reason", async () => {
    const missing = share.rootDirectoryClient.getFileClient("missing.txt");
    let calls = 0;
    const notFound = await retryWhileSmbLocked(() => {
      calls += 1;
      return missing.getProperties();
    }, quick).catch((e: unknown) => e);
    expect([calls, statusOf(notFound)]).toEqual([1, 404]);

    const f = await file("cancel.txt");
    const handle = target.responder!.smb.openFile(smbPath(f));
    const controller = new AbortController();
    const reason = new Error("user gave up");
    const waiting = retryWhileSmbLocked(() => f.downloadToBuffer(), {
      ...quick,
      abortSignal: controller.signal,
      onRetry: () => controller.abort(reason),
    });
    await expect(waiting).rejects.toBe(reason);
    handle.close();
  });

  it("the Files helpers wait out SMB clients by default, and fail at once with smbRetry: false", async () => {
    const f = await file("helpers.txt");
    const lease = f.getShareLeaseClient();
    await lease.acquireLease();
    // A leased file can still be opened for read over SMB; sharing nothing, it refuses Create File.
    expect(() => target.responder!.smb.openFile(smbPath(f))).toThrow(SmbSharingViolationError);
    const handle = target.responder!.smb.openFile(smbPath(f), { access: { read: true, write: false } });
    const error = await writeFileUnderLease(f, lease.leaseId, "new", { smbRetry: false }).catch((e: unknown) => e);
    expect(serviceCodeOf(error)).toBe("SharingViolation");
    setTimeout(() => handle.close(), 50);
    await writeFileUnderLease(f, lease.leaseId, "new", { smbRetry: quick });
    expect((await readFileContent(f)).content.toString()).toBe("new");
    await lease.releaseLease();
  });

  describe("fileLock on a file an SMB client holds open (Lease File acquire answers 409 SharingViolation)", () => {
    const acquireRequests = (f: ShareFileClient) =>
      target.responder!.requests.filter(
        (r) => r.method === "PUT" && r.url.includes(f.path) && r.url.includes("comp=lease"),
      ).length;

    it("acquire and tryAcquire end in SmbConflictError, not in 'held by someone else', and take no lease", async () => {
      const f = await file("smb-held.json");
      const handle = target.responder!.smb.openFile(smbPath(f)); // read/write access, sharing nothing
      const lock = fileLock(f, { smbRetry: { ...quick, maxRetries: 3 } });
      const viaAcquire = await lock.acquire({ timeoutInMs: 20_000 }).catch((e: unknown) => e);
      expect(viaAcquire).toMatchObject({
        name: "SmbConflictError",
        code: "SmbFileLocked",
        statusCode: 409,
        serviceCode: "SharingViolation",
        attempts: 4,
      });
      expect((viaAcquire as Error).message).toMatch(
        /^Could not take the lease on file '.*smb-held\.json': an SMB client holds/,
      );
      const viaTry = await lock.tryAcquire().catch((e: unknown) => e);
      expect(isSmbConflictError(viaTry) && viaTry.code).toBe("SmbFileLocked");
      expect(
        await fileLock(f, { smbRetry: false })
          .tryAcquire()
          .catch((e: unknown) => e),
      ).toMatchObject({
        name: "SmbConflictError",
        attempts: 1,
      });
      handle.close();
      expect((await f.getProperties()).leaseState).toBe("available");
    });

    it("when acquire's timeoutInMs ends the wait first, the SmbConflictError says why, after a few requests, not one per poll", async () => {
      const f = await file("smb-timeout.json");
      const handle = target.responder!.smb.openFile(smbPath(f));
      const before = acquireRequests(f);
      const error = await fileLock(f)
        .acquire({ timeoutInMs: 1_500 })
        .catch((e: unknown) => e);
      handle.close();
      expect(error).toMatchObject({ name: "SmbConflictError", code: "SmbFileLocked", serviceCode: "SharingViolation" });
      // The SMB preset's backoff (0.35 s, 0.85 s, ...) rather than the lock's 100 ms polling.
      expect(acquireRequests(f) - before).toBeLessThanOrEqual(4);
      expect((await f.getProperties()).leaseState).toBe("available");
    });

    it("waits while the SMB client has the file open, and takes the lock once it closes it", async () => {
      const f = await file("smb-then-free.json");
      const handle = target.responder!.smb.openFile(smbPath(f));
      let retries = 0;
      const lock = fileLock(f, { smbRetry: { ...quick, onRetry: () => void (++retries === 2 && handle.close()) } });
      await using held = await lock.acquire({ timeoutInMs: 20_000 });
      expect([retries, held.fencingToken, (await f.getProperties()).leaseState]).toEqual([2, 1, "leased"]);
    });

    it("a handle that only reads and shares read, write and delete does not stand in the way", async () => {
      const f = await file("smb-reader.json");
      const handle = target.responder!.smb.openFile(smbPath(f), {
        access: { read: true, write: false },
        share: { read: true, write: true, delete: true },
      });
      const held = await fileLock(f, { smbRetry: false }).tryAcquire();
      expect(held?.fencingToken).toBe(1);
      await held?.release();
      handle.close();
    });

    it("bad smbRetry is refused before any request", () => {
      expect(() => fileLock(share.rootDirectoryClient.getFileClient("x"), { smbRetry: "no" as never })).toThrow(
        TypeError,
      );
    });
  });
});
