/**
 * The Files responder answers the real `@azure/storage-file-share` client as the service does.
 * Under `npm run test:live` the same assertions run against a real account, which is how the
 * responder's fidelity is checked (the responder-only parts need its SMB and clock hooks).
 */
import { request as httpRequest } from "node:http";
import type { ShareClient, ShareFileClient } from "@azure/storage-file-share";
import { classifyError } from "../../../src/retry/index.js";
import { serviceCodeOf, statusOf } from "../../../src/error-codes.js";
import { describeFiles, describeResponderOnly, openFilesTarget, type FilesTarget } from "../../support/files.js";

async function failure(promise: Promise<unknown>): Promise<{ status: number | undefined; code: string | undefined }> {
  const error = await promise.then(
    () => {
      throw new Error("expected the call to fail");
    },
    (e: unknown) => e,
  );
  return { status: statusOf(error), code: serviceCodeOf(error) };
}

async function newFile(share: ShareClient, name: string, content = "hello"): Promise<ShareFileClient> {
  const file = share.rootDirectoryClient.getFileClient(name);
  await file.create(Buffer.byteLength(content), {
    content: Buffer.from(content),
    contentLength: Buffer.byteLength(content),
  });
  return file;
}

describeFiles("Files REST: shares, directories, files", () => {
  let target: FilesTarget;
  let share: ShareClient;
  beforeAll(async () => {
    target = await openFilesTarget();
    share = await target.newShare("files");
  });
  afterAll(() => target.close());

  it("creates directories and files, and answers the documented codes for what exists or not", async () => {
    expect((await share.createIfNotExists()).succeeded).toBe(false);
    const dir = share.getDirectoryClient("reports");
    expect((await dir.createIfNotExists()).succeeded).toBe(true);
    expect((await dir.createIfNotExists()).succeeded).toBe(false);
    await expect(failure(share.getDirectoryClient("missing/child").create())).resolves.toEqual({
      status: 404,
      code: "ParentNotFound",
    });
    const file = dir.getFileClient("q1 summary.txt");
    await file.create(11, { content: Buffer.from("hello world"), contentLength: 11, metadata: { Owner: "tests" } });
    const properties = await file.getProperties();
    expect(properties.contentLength).toBe(11);
    expect(properties.metadata).toEqual({ owner: "tests" });
    expect((await file.downloadToBuffer()).toString()).toBe("hello world");
    expect((await file.downloadToBuffer(6, 5)).toString()).toBe("world");
    await expect(failure(dir.getFileClient("nope").getProperties())).resolves.toMatchObject({ status: 404 });
    await expect(failure(dir.delete())).resolves.toEqual({ status: 409, code: "DirectoryNotEmpty" });
    expect((await file.deleteIfExists()).succeeded).toBe(true);
    expect((await file.deleteIfExists()).succeeded).toBe(false);
    await dir.delete();
  });

  it("Create File without content makes a zero-filled file; Put Range writes inside it and refuses past the end", async () => {
    const file = share.rootDirectoryClient.getFileClient("ranges.bin");
    await file.create(8);
    expect([...(await file.downloadToBuffer())]).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    await file.uploadRange(Buffer.from("abc"), 2, 3);
    expect((await file.downloadToBuffer()).toString("latin1")).toBe("\0\0abc\0\0\0");
    await expect(failure(file.uploadRange(Buffer.from("xyz"), 6, 3))).resolves.toMatchObject({ status: 416 });
    await file.clearRange(2, 2);
    expect((await file.downloadToBuffer()).toString("latin1")).toBe("\0\0\0\0c\0\0\0");
  });

  it("Set File Metadata replaces the metadata and changes the ETag", async () => {
    const file = await newFile(share, "meta.txt");
    const before = await file.getProperties();
    await file.setMetadata({ a: "1" });
    const after = await file.getProperties();
    expect(after.metadata).toEqual({ a: "1" });
    expect(after.etag).not.toBe(before.etag);
  });
});

describeFiles("Files REST: file leases (Lease File)", () => {
  let target: FilesTarget;
  let share: ShareClient;
  beforeAll(async () => {
    target = await openFilesTarget();
    share = await target.newShare("flease");
  });
  afterAll(() => target.close());

  it("acquire is infinite only; a second acquire with another id is 409 LeaseAlreadyPresent, with the same id it succeeds", async () => {
    const file = await newFile(share, "acquire.txt");
    await expect(failure(file.getShareLeaseClient().acquireLease(20))).resolves.toEqual({
      status: 400,
      code: "InvalidHeaderValue",
    });
    const lease = file.getShareLeaseClient();
    const acquired = await lease.acquireLease();
    expect(acquired.leaseId).toBe(lease.leaseId);
    const properties = await file.getProperties();
    expect([properties.leaseState, properties.leaseStatus, properties.leaseDuration]).toEqual([
      "leased",
      "locked",
      "infinite",
    ]);
    await expect(failure(file.getShareLeaseClient().acquireLease())).resolves.toEqual({
      status: 409,
      code: "LeaseAlreadyPresent",
    });
    await expect(file.getShareLeaseClient(lease.leaseId).acquireLease()).resolves.toMatchObject({
      leaseId: lease.leaseId,
    });
    await lease.releaseLease();
    expect((await file.getProperties()).leaseState).toBe("available");
  });

  it("a leased file refuses writes and deletes without its lease id (412), and takes them with it", async () => {
    const file = await newFile(share, "guarded.txt", "before");
    const lease = file.getShareLeaseClient();
    await lease.acquireLease();
    const other = file.getShareLeaseClient().leaseId;
    const refusals = await Promise.all([
      failure(file.create(5, { content: Buffer.from("after"), contentLength: 5 })),
      failure(file.uploadRange(Buffer.from("B"), 0, 1)),
      failure(file.setMetadata({ a: "1" })),
      failure(file.delete()),
      failure(file.uploadRange(Buffer.from("B"), 0, 1, { leaseAccessConditions: { leaseId: other } })),
    ]);
    expect(refusals).toEqual([
      { status: 412, code: "LeaseIdMissing" },
      { status: 412, code: "LeaseIdMissing" },
      { status: 412, code: "LeaseIdMissing" },
      { status: 412, code: "LeaseIdMissing" },
      { status: 412, code: "LeaseIdMismatchWithFileOperation" },
    ]);
    expect((await file.downloadToBuffer()).toString()).toBe("before");
    // Reads need no lease id; a read naming a wrong one is refused.
    await expect(failure(file.download(0, undefined, { leaseAccessConditions: { leaseId: other } }))).resolves.toEqual({
      status: 412,
      code: "LeaseIdMismatchWithFileOperation",
    });
    await file.create(5, {
      content: Buffer.from("after"),
      contentLength: 5,
      leaseAccessConditions: { leaseId: lease.leaseId },
    });
    expect((await file.downloadToBuffer()).toString()).toBe("after");
    expect((await file.getProperties()).leaseState).toBe("leased"); // replacing the file keeps its lease
    await lease.releaseLease();
  });

  it("change moves the lease to a new id; change without a lease is 409 LeaseNotPresentWithLeaseOperation", async () => {
    const file = await newFile(share, "change.txt");
    await expect(
      failure(file.getShareLeaseClient().changeLease("a0f4b3c2-0000-4000-8000-000000000001")),
    ).resolves.toEqual({
      status: 409,
      code: "LeaseNotPresentWithLeaseOperation",
    });
    const lease = file.getShareLeaseClient();
    await lease.acquireLease();
    const old = lease.leaseId;
    const next = "a0f4b3c2-0000-4000-8000-000000000002";
    await lease.changeLease(next);
    expect(lease.leaseId).toBe(next);
    await expect(
      failure(file.uploadRange(Buffer.from("x"), 0, 1, { leaseAccessConditions: { leaseId: old } })),
    ).resolves.toEqual({
      status: 412,
      code: "LeaseIdMismatchWithFileOperation",
    });
    await expect(failure(file.getShareLeaseClient(old).releaseLease())).resolves.toEqual({
      status: 409,
      code: "LeaseIdMismatchWithLeaseOperation",
    });
    await lease.releaseLease();
  });

  it("break ends the lease at once (202, lease time 0): the file is 'broken', writes without an id succeed, with the old id fail", async () => {
    const file = await newFile(share, "break.txt");
    const lease = file.getShareLeaseClient();
    await lease.acquireLease();
    await file.getShareLeaseClient().breakLease();
    const properties = await file.getProperties();
    expect([properties.leaseState, properties.leaseStatus, properties.leaseDuration]).toEqual([
      "broken",
      "unlocked",
      undefined,
    ]);
    await expect(
      failure(file.uploadRange(Buffer.from("x"), 0, 1, { leaseAccessConditions: { leaseId: lease.leaseId } })),
    ).resolves.toEqual({
      status: 412,
      code: "LeaseNotPresentWithFileOperation",
    });
    await file.uploadRange(Buffer.from("x"), 0, 1);
    await file.getShareLeaseClient().breakLease(); // breaking a broken lease succeeds
    await lease.releaseLease(); // so does releasing it with its id
    expect((await file.getProperties()).leaseState).toBe("available");
    await expect(failure(file.getShareLeaseClient().breakLease())).resolves.toEqual({
      status: 409,
      code: "LeaseNotPresentWithLeaseOperation",
    });
  });
});

describeFiles("Files REST: share leases (Lease Share)", () => {
  let target: FilesTarget;
  beforeAll(async () => {
    target = await openFilesTarget();
  });
  afterAll(() => target.close());

  it("a leased share is deleted only with its lease id; 15-60 s or infinite; acquire with the same id renews", async () => {
    const share = await target.newShare("slease");
    await expect(failure(share.getShareLeaseClient().acquireLease(10))).resolves.toEqual({
      status: 400,
      code: "InvalidHeaderValue",
    });
    const lease = share.getShareLeaseClient();
    await lease.acquireLease(15);
    const properties = await share.getProperties();
    expect([properties.leaseState, properties.leaseStatus, properties.leaseDuration]).toEqual([
      "leased",
      "locked",
      "fixed",
    ]);
    await expect(failure(share.getShareLeaseClient().acquireLease(15))).resolves.toEqual({
      status: 409,
      code: "LeaseAlreadyPresent",
    });
    await share.getShareLeaseClient(lease.leaseId).acquireLease(60); // same id: granted again
    await expect(failure(share.delete())).resolves.toEqual({ status: 412, code: "LeaseIdMissing" });
    await share.delete({ leaseAccessConditions: { leaseId: lease.leaseId } });
    expect(await share.exists()).toBe(false);
  });

  it("SDK 12.33 ShareLeaseClient.renewLease() throws for shares (its isFile check is inverted): renew by acquiring with the same id", async () => {
    const share = await target.newShare("srenew");
    const lease = share.getShareLeaseClient();
    await lease.acquireLease(15);
    await expect(lease.renewLease()).rejects.toThrow(RangeError);
    await lease.releaseLease();
  });
});

describeResponderOnly("Files responder: share lease timing on a hand-driven clock", () => {
  let now = Date.UTC(2030, 0, 1);
  let target: FilesTarget;
  beforeAll(async () => {
    target = await openFilesTarget({ now: () => now });
  });
  afterAll(() => target.close());

  it("a 15 s lease expires after 15 s; a break period keeps it 'breaking' until it ends", async () => {
    const share = await target.newShare("sclock");
    const lease = share.getShareLeaseClient();
    await lease.acquireLease(15);
    now += 15_000;
    expect((await share.getProperties()).leaseState).toBe("expired");
    await share.getShareLeaseClient().acquireLease(-1); // anyone may take an expired lease
    const broken = await share.getShareLeaseClient().breakLease({ breakPeriod: 10 } as never);
    expect(
      (broken as { leaseTimeInSeconds?: number }).leaseTimeInSeconds ?? (broken as { leaseTime?: number }).leaseTime,
    ).toBe(10);
    expect((await share.getProperties()).leaseState).toBe("breaking");
    await expect(failure(share.getShareLeaseClient().acquireLease(15))).resolves.toEqual({
      status: 409,
      code: "LeaseAlreadyPresent",
    });
    now += 10_000;
    expect((await share.getProperties()).leaseState).toBe("broken");
    await share.getShareLeaseClient().acquireLease(15);
    expect(classifyError(await share.delete().catch((e: unknown) => e)).statusCode).toBe(412);
  });
});

// Issue 23: @azure/storage-file-share 12.31 dropped Create File's body but still sent its
// Content-Length. The service waits for the body until the request's server timeout (`timeout`,
// here 1 s), answers an error and applies nothing. Raw HTTP (the responder does not check
// signatures), so responder-only.
describeResponderOnly("Files responder: a request body shorter than its Content-Length", () => {
  let target: FilesTarget;
  beforeAll(async () => {
    target = await openFilesTarget();
  });
  afterAll(() => target.close());

  it("is answered 500 OperationTimedOut after the server timeout, on a closed connection, and not applied", async () => {
    const share = await target.newShare("shortbody");
    const file = share.rootDirectoryClient.getFileClient("short-body.txt");
    const answer = await new Promise<{ status: number | undefined; code: unknown; connection: unknown }>(
      (resolve, reject) => {
        const req = httpRequest(`${file.url}?timeout=1`, {
          method: "PUT",
          headers: {
            "x-ms-version": "2026-02-06",
            "x-ms-type": "file",
            "x-ms-content-length": "13",
            "content-length": "13",
          },
        });
        req.on("response", (res) => {
          res.resume();
          resolve({ status: res.statusCode, code: res.headers["x-ms-error-code"], connection: res.headers.connection });
        });
        req.on("error", reject);
        req.flushHeaders(); // the headers, and none of the 13 bytes they announce
      },
    );
    expect(answer).toEqual({ status: 500, code: "OperationTimedOut", connection: "close" });
    expect(await file.exists()).toBe(false);
  });
});
