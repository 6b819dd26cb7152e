/**
 * Writes under a file lease, explicit last-writer-wins writes, and read-modify-write under a lease,
 * through the real SDK. The lost-response tests put the fault proxy between the SDK and the
 * responder (responder only).
 */
import {
  FileSystemAttributes,
  ShareServiceClient,
  type ShareClient,
  type ShareFileClient,
} from "@azure/storage-file-share";
import {
  fileCodecs,
  isFileContentError,
  isFileLeaseConflictError,
  isFileWriteNotConfirmedError,
  readFileContent,
  updateFileUnderLease,
  WRITE_ID_METADATA_KEY,
  writeFileLastWriterWins,
  writeFileUnderLease,
} from "../../../src/files/index.js";
import { SDK_SINGLE_ATTEMPT } from "../../../src/retry/index.js";
import { buildConnectionString, createFaultProxy, seededRandom } from "../../../src/testing/index.js";
import { describeFiles, describeResponderOnly, openFilesTarget, type FilesTarget } from "../../support/files.js";

async function newFile(share: ShareClient, name: string, content = "0"): Promise<ShareFileClient> {
  const file = share.rootDirectoryClient.getFileClient(name);
  await writeFileLastWriterWins(file, content);
  return file;
}

describeFiles("writes under a file lease, and last writer wins", () => {
  let target: FilesTarget;
  let share: ShareClient;
  beforeAll(async () => {
    target = await openFilesTarget();
    share = await target.newShare("writes");
  });
  afterAll(() => target.close());

  it("writes under the lease; a last-writer-wins write meanwhile is refused, and the content is the lease holder's", async () => {
    const file = await newFile(share, "guarded.json", "{}");
    const lease = file.getShareLeaseClient();
    await lease.acquireLease();
    const written = await writeFileUnderLease(file, lease.leaseId, '{"by":"holder"}', { metadata: { team: "ops" } });
    const intruder = await writeFileLastWriterWins(file, '{"by":"intruder"}').catch((e: unknown) => e);
    expect(isFileLeaseConflictError(intruder) && intruder.code).toBe("FileLeasedByAnother");
    expect((intruder as Error).message).toMatch(/last writer wins does not override a lock/);
    const read = await readFileContent(file);
    expect([read.content.toString(), read.writeId, read.metadata]).toEqual([
      '{"by":"holder"}',
      written.writeId,
      { team: "ops" },
    ]);
    expect(written.confirmedAfterLostResponse).toBe(false);
    await lease.releaseLease();
  });

  it("a write under a lease that was broken meanwhile is refused with FileLeaseNotHeld and changes nothing", async () => {
    const file = await newFile(share, "broken.txt", "original");
    const lease = file.getShareLeaseClient();
    await lease.acquireLease();
    await file.getShareLeaseClient().breakLease(); // e.g. an operator's `lock break`
    const error = await writeFileUnderLease(file, lease.leaseId, "stale").catch((e: unknown) => e);
    expect(error).toMatchObject({
      name: "FileLeaseConflictError",
      code: "FileLeaseNotHeld",
      statusCode: 412,
      leaseId: lease.leaseId,
    });
    expect((await readFileContent(file)).content.toString()).toBe("original");
  });

  it("a lock handle whose signal already aborted stops the write before it is sent, with the lock's reason", async () => {
    const file = await newFile(share, "handle.txt", "original");
    const lost = new Error("lock lost");
    const controller = new AbortController();
    controller.abort(lost);
    await expect(
      writeFileUnderLease(file, { leaseId: "00000000-0000-4000-8000-000000000000", signal: controller.signal }, "x"),
    ).rejects.toBe(lost);
    expect((await readFileContent(file)).content.toString()).toBe("original");
  });

  it("last writer wins: the later of two writes decides, whole (each write is one request)", async () => {
    const file = await newFile(share, "lww.txt");
    await writeFileLastWriterWins(file, "first writer, a long text");
    const second = await writeFileLastWriterWins(file, "second");
    const read = await readFileContent(file);
    expect([read.content.toString(), read.writeId]).toEqual(["second", second.writeId]);
  });

  it("bad input is refused before any request", async () => {
    const file = share.rootDirectoryClient.getFileClient("never-created.txt");
    await expect(writeFileLastWriterWins(file, Buffer.alloc(4 * 1024 * 1024 + 1))).rejects.toThrow(RangeError);
    await expect(writeFileUnderLease(file, "", "x")).rejects.toThrow(TypeError);
    await expect(writeFileLastWriterWins(file, "x", { metadata: { "bad-name": "x" } })).rejects.toThrow(
      /C# identifiers/,
    );
    await expect(writeFileLastWriterWins(file, 42 as never)).rejects.toThrow(TypeError);
    expect(await file.exists()).toBe(false);
  });
});

describeFiles("read-modify-write under a file lease", () => {
  let target: FilesTarget;
  let share: ShareClient;
  beforeAll(async () => {
    target = await openFilesTarget();
    share = await target.newShare("rmw");
  });
  afterAll(() => target.close());

  it("updates JSON under the lease, keeping metadata, content type and SMB properties; mutate may decline", async () => {
    // SMB properties that Create File would not give the file again by itself: its own permission
    // (not the one inherited from the directory), an attribute, and a creation time in the past.
    const { filePermissionKey } = await share.createPermission("O:BAG:SYD:(A;;FA;;;BA)(A;;FA;;;SY)");
    const file = share.rootDirectoryClient.getFileClient("settings.json");
    const content = Buffer.from('{"retries":1}');
    await file.create(content.length, {
      content,
      contentLength: content.length,
      metadata: { owner: "ops" },
      fileHttpHeaders: { fileContentType: "application/json" },
      filePermissionKey,
      fileAttributes: FileSystemAttributes.parse("Hidden"),
      creationTime: new Date("2021-03-04T05:06:07.000Z"),
    });
    const before = await file.getProperties();
    expect([before.filePermissionKey, before.fileCreatedOn?.toISOString()]).toEqual([
      filePermissionKey,
      "2021-03-04T05:06:07.000Z",
    ]);
    expect(before.fileAttributes).toMatch(/Hidden/);
    const lease = file.getShareLeaseClient();
    await lease.acquireLease();
    const codec = fileCodecs.json<{ retries: number }>();
    const updated = await updateFileUnderLease(file, lease.leaseId, (s) => ({ retries: s.retries + 1 }), { codec });
    expect(updated).toMatchObject({ value: { retries: 2 }, written: true, confirmedAfterLostResponse: false });
    const declined = await updateFileUnderLease(file, lease.leaseId, () => undefined, { codec });
    expect(declined).toMatchObject({ value: { retries: 2 }, written: false });
    const after = await file.getProperties();
    expect(after.metadata).toEqual({ owner: "ops", [WRITE_ID_METADATA_KEY]: updated.writeId });
    // Create File, which the update's write is, gives a new creation time and an inherited permission
    // unless it is told otherwise: these hold only because the update carries them over.
    expect(after.contentType).toBe("application/json");
    expect([after.filePermissionKey, after.fileAttributes]).toEqual([before.filePermissionKey, before.fileAttributes]);
    expect(after.fileCreatedOn?.getTime()).toBe(before.fileCreatedOn?.getTime());
    await lease.releaseLease();
  });

  it("content that does not decode gives a FileContentError and writes nothing; mutate is not called", async () => {
    const file = await newFile(share, "broken.json", "{not json");
    const lease = file.getShareLeaseClient();
    await lease.acquireLease();
    let called = false;
    const error = await updateFileUnderLease(file, lease.leaseId, () => ((called = true), {}), {
      codec: fileCodecs.json(),
    }).catch((e: unknown) => e);
    expect(isFileContentError(error) && error.path).toBe(`${share.name}/broken.json`);
    expect(called).toBe(false);
    expect((await readFileContent(file)).content.toString()).toBe("{not json");
    await lease.releaseLease();
  });

  it("a mutate that throws writes nothing, and its error reaches the caller; metadata can be rewritten", async () => {
    const file = await newFile(share, "throws.txt", "1");
    const lease = file.getShareLeaseClient();
    await lease.acquireLease();
    const oops = new Error("oops");
    await expect(updateFileUnderLease(file, lease.leaseId, () => Promise.reject(oops))).rejects.toBe(oops);
    expect((await readFileContent(file)).content.toString()).toBe("1");
    await updateFileUnderLease(file, lease.leaseId, (b) => Buffer.from(`${b.toString("utf8")}2`), {
      metadata: (m) => ({ ...m, step: "2" }),
      codec: fileCodecs.bytes,
    });
    const read = await readFileContent(file);
    expect([read.content.toString(), read.metadata]).toEqual(["12", { step: "2" }]);
    await lease.releaseLease();
  });

  it("a lock handle lost while the update runs: the write is not sent, and the lock's reason is thrown", async () => {
    const file = await newFile(share, "handle-lost.txt", "1");
    const lease = file.getShareLeaseClient();
    await lease.acquireLease();
    const controller = new AbortController();
    const lost = new Error("lock lost: broken by an operator");
    const error = await updateFileUnderLease(file, { leaseId: lease.leaseId, signal: controller.signal }, (b) => {
      controller.abort(lost);
      return Buffer.from(`${b.toString("utf8")}2`);
    }).catch((e: unknown) => e);
    expect(error).toBe(lost);
    expect((await readFileContent(file)).content.toString()).toBe("1");
    await lease.releaseLease();
  });

  it("a lost lease is noticed on the read: mutate is not called and nothing is written", async () => {
    const file = await newFile(share, "lost.txt", "1");
    const lease = file.getShareLeaseClient();
    await lease.acquireLease();
    await file.getShareLeaseClient().breakLease();
    let called = false;
    const error = await updateFileUnderLease(file, lease.leaseId, () => ((called = true), Buffer.from("2"))).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ name: "FileLeaseConflictError", code: "FileLeaseNotHeld" });
    expect(called).toBe(false);
  });
});

describeResponderOnly("lost responses (fault proxy between the SDK and the responder)", () => {
  let target: FilesTarget;
  let share: ShareClient;
  beforeAll(async () => {
    target = await openFilesTarget();
    share = await target.newShare("lost");
  });
  afterAll(() => target.close());

  async function viaProxy(file: ShareFileClient, options: { sdkSingleAttempt: boolean }) {
    const proxy = await createFaultProxy({ target: target.responder!.endpoint, random: seededRandom(7) });
    const shares = ShareServiceClient.fromConnectionString(buildConnectionString({ fileEndpoint: proxy.endpoint }), {
      retryOptions: options.sdkSingleAttempt
        ? SDK_SINGLE_ATTEMPT.storage
        : { maxTries: 4, retryDelayInMs: 10, maxRetryDelayInMs: 50 },
    });
    return { proxy, file: shares.getShareClient(file.shareName).rootDirectoryClient.getFileClient(file.path) };
  }

  it("a write whose response is lost, with no SDK retry left, is confirmed from the write id and not sent again", async () => {
    const direct = await newFile(share, "confirm.txt", "old");
    const lease = direct.getShareLeaseClient();
    await lease.acquireLease();
    const { proxy, file } = await viaProxy(direct, { sdkSingleAttempt: true });
    await using _ = proxy;
    proxy.addRule({ method: "PUT", path: /confirm\.txt$/, action: { type: "dropResponse" }, times: 1 });
    const result = await writeFileUnderLease(file, lease.leaseId, "new");
    expect(result.confirmedAfterLostResponse).toBe(true);
    expect(proxy.requests.map((r) => `${r.method} ${r.outcome}`)).toEqual(["PUT dropResponse", "HEAD forwarded"]);
    expect((await readFileContent(direct)).writeId).toBe(result.writeId);
    await lease.releaseLease();
  });

  it("a write that never reached the service is reported as failed, after checking", async () => {
    const direct = await newFile(share, "unsent.txt", "old");
    const { proxy, file } = await viaProxy(direct, { sdkSingleAttempt: true });
    await using _ = proxy;
    proxy.addRule({ method: "PUT", path: /unsent\.txt$/, action: { type: "reset" }, times: 1 });
    const error = await writeFileLastWriterWins(file, "new").catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "StorageRequestError", transient: true });
    expect((await readFileContent(direct)).content.toString()).toBe("old");
  });

  it("the SDK resends a write whose response was lost after the lease was broken: the 412 is recognised as the write having been applied", async () => {
    const direct = await newFile(share, "resent.txt", "old");
    const lease = direct.getShareLeaseClient();
    await lease.acquireLease();
    const { proxy, file } = await viaProxy(direct, { sdkSingleAttempt: false });
    await using _ = proxy;
    // The first attempt is applied, its response dropped. When the SDK's resend arrives, someone
    // breaks the lease, and the resend waits behind a delay so that the break lands first.
    proxy.addRule({ method: "PUT", path: /resent\.txt$/, times: 1, action: { type: "dropResponse" } });
    proxy.addRule({
      method: "PUT",
      path: /resent\.txt$/,
      times: 1,
      action: { type: "delay", delayInMs: 300 },
      when: () => (void direct.getShareLeaseClient().breakLease(), true),
    });
    const result = await writeFileUnderLease(file, lease.leaseId, "new");
    expect(result.confirmedAfterLostResponse).toBe(true);
    expect(proxy.requests.filter((r) => r.method === "PUT").map((r) => r.statusCode)).toEqual([201, 412]);
    expect((await readFileContent(direct)).content.toString()).toBe("new");
  });

  it("a create whose answer was lost, on a file that is not there: the read-back's 404 decides 'not applied', not 'unknown'", async () => {
    const direct = share.rootDirectoryClient.getFileClient("never-there.txt");
    const { proxy, file } = await viaProxy(direct, { sdkSingleAttempt: true });
    await using _ = proxy;
    proxy.addRule({ method: "PUT", path: /never-there\.txt$/, action: { type: "serverBusy" }, times: 1 });
    const error = await writeFileLastWriterWins(file, "new").catch((e: unknown) => e);
    expect(isFileWriteNotConfirmedError(error)).toBe(false);
    expect(error).toMatchObject({ name: "StorageRequestError", statusCode: 503, transient: true });
    expect(proxy.requests.map((r) => `${r.method} ${r.statusCode}`)).toEqual(["PUT 503", "HEAD 404"]);
    expect(await direct.exists()).toBe(false);
  });

  it("the read-back of a write whose answer was lost is tried again: one failed read does not make the outcome unknown", async () => {
    const direct = await newFile(share, "reread.txt", "old");
    const { proxy, file } = await viaProxy(direct, { sdkSingleAttempt: true });
    await using _ = proxy;
    proxy.addRule({ method: "PUT", path: /reread\.txt$/, action: { type: "dropResponse" }, times: 1 });
    proxy.addRule({ method: "HEAD", path: /reread\.txt$/, action: { type: "reset" }, times: 1 });
    const result = await writeFileLastWriterWins(file, "new");
    expect(result.confirmedAfterLostResponse).toBe(true);
    expect(proxy.requests.map((r) => `${r.method} ${r.outcome}`)).toEqual([
      "PUT dropResponse",
      "HEAD reset",
      "HEAD forwarded",
    ]);
    expect((await readFileContent(direct)).writeId).toBe(result.writeId);
  });

  it("a read-back that gets no answer at all is ended by its client-side time limit and tried again", async () => {
    const direct = await newFile(share, "hang.txt", "old");
    const lease = direct.getShareLeaseClient();
    await lease.acquireLease();
    const { proxy, file } = await viaProxy(direct, { sdkSingleAttempt: true });
    await using _ = proxy;
    proxy.addRule({ method: "PUT", path: /hang\.txt$/, action: { type: "dropResponse" }, times: 1 });
    proxy.addRule({ method: "HEAD", path: /hang\.txt$/, action: { type: "hang" }, times: 1 });
    const write = writeFileUnderLease(file, lease.leaseId, "new", { attemptTimeoutInMs: 200 });
    // Without a client-side limit the read-back waits for ever: bound the wait to tell.
    const result = await Promise.race([write, new Promise<"hung">((r) => setTimeout(() => r("hung"), 10_000).unref())]);
    expect(result).toMatchObject({ confirmedAfterLostResponse: true });
    expect(proxy.requests.map((r) => `${r.method} ${r.outcome}`)).toEqual([
      "PUT dropResponse",
      "HEAD hang",
      "HEAD forwarded",
    ]);
    await lease.releaseLease();
  });

  it("a write that gets no answer at all is ended by its client-side time limit, then checked (issue 23: it hung)", async () => {
    const direct = await newFile(share, "unanswered.txt", "old");
    const { proxy, file } = await viaProxy(direct, { sdkSingleAttempt: true });
    await using _ = proxy;
    proxy.addRule({ method: "PUT", path: /unanswered\.txt$/, action: { type: "hang" }, times: 1 });
    const write = writeFileLastWriterWins(file, "new", { requestTimeoutInMs: 300 }).catch((e: unknown) => e);
    // Without a client-side limit the write waits for ever: bound the wait to tell.
    const error = await Promise.race([write, new Promise<"hung">((r) => setTimeout(() => r("hung"), 10_000).unref())]);
    expect(error).toMatchObject({ name: "StorageRequestError", code: "RequestTimedOut", transient: true });
    expect(proxy.requests.map((r) => `${r.method} ${r.outcome}`)).toEqual(["PUT hang", "HEAD forwarded"]);
    expect((await readFileContent(direct)).content.toString()).toBe("old");
  });

  it("every attempt of the read-back failing: FileWriteNotConfirmedError with the write id, and the write error as cause", async () => {
    const direct = await newFile(share, "unreadable.txt", "old");
    const { proxy, file } = await viaProxy(direct, { sdkSingleAttempt: true });
    await using _ = proxy;
    proxy.addRule({ method: "PUT", path: /unreadable\.txt$/, action: { type: "dropResponse" }, times: 1 });
    proxy.addRule({ method: "HEAD", path: /unreadable\.txt$/, action: { type: "serverBusy" } });
    const error = await writeFileLastWriterWins(file, "new", { writeId: "w-1" }).catch((e: unknown) => e);
    expect(isFileWriteNotConfirmedError(error) && error.writeId).toBe("w-1");
    expect(proxy.requests.filter((r) => r.method === "HEAD")).toHaveLength(3);
    expect((await readFileContent(direct)).writeId).toBe("w-1"); // it was applied: only a read could tell
  });

  it("a lease refusal of the SDK's resend, when the file cannot be read to check: unknown, not a definite refusal", async () => {
    const direct = await newFile(share, "resent-unread.txt", "old");
    const lease = direct.getShareLeaseClient();
    await lease.acquireLease();
    const { proxy, file } = await viaProxy(direct, { sdkSingleAttempt: false });
    await using _ = proxy;
    // As in the test above, the first attempt is applied and its answer lost, and the lease is
    // broken before the resend; then every read of the file fails.
    proxy.addRule({ method: "PUT", path: /resent-unread\.txt$/, times: 1, action: { type: "dropResponse" } });
    proxy.addRule({
      method: "PUT",
      path: /resent-unread\.txt$/,
      times: 1,
      action: { type: "delay", delayInMs: 300 },
      when: () => (void direct.getShareLeaseClient().breakLease(), true),
    });
    proxy.addRule({ method: "HEAD", path: /resent-unread\.txt$/, action: { type: "serverBusy" } });
    const error = await writeFileUnderLease(file, lease.leaseId, "new", { writeId: "w-2" }).catch((e: unknown) => e);
    expect(isFileWriteNotConfirmedError(error) && error.writeId).toBe("w-2");
    expect((await readFileContent(direct)).writeId).toBe("w-2"); // applied: the refusal alone would have said not
  });

  it("bad attemptTimeoutInMs is refused before any request", async () => {
    const file = share.rootDirectoryClient.getFileClient("never-written.txt");
    await expect(writeFileLastWriterWins(file, "x", { attemptTimeoutInMs: 0 })).rejects.toThrow(/attemptTimeoutInMs/);
    await expect(writeFileLastWriterWins(file, "x", { attemptTimeoutInMs: "1" as never })).rejects.toThrow(TypeError);
    expect(await file.exists()).toBe(false);
  });

  it("a counter incremented under the lease with 30% of responses lost counts every increment exactly once", async () => {
    const direct = await newFile(share, "counter.json", '{"n":0}');
    const lease = direct.getShareLeaseClient();
    await lease.acquireLease();
    const { proxy, file } = await viaProxy(direct, { sdkSingleAttempt: false });
    await using _ = proxy;
    proxy.addRule({ method: "PUT", path: /counter\.json$/, probability: 0.3, action: { type: "dropResponse" } });
    const codec = fileCodecs.json<{ n: number }>();
    let mutations = 0;
    for (let i = 0; i < 20; i += 1) {
      await updateFileUnderLease(file, lease.leaseId, (c) => ((mutations += 1), { n: c.n + 1 }), { codec });
    }
    expect(proxy.requests.some((r) => r.outcome === "dropResponse")).toBe(true);
    expect([mutations, codec.decode((await readFileContent(direct)).content).n]).toEqual([20, 20]);
    await lease.releaseLease();
  });
});
