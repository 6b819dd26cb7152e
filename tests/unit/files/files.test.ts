/**
 * Pure logic of the Files helpers: codecs, lease references, and the SMB retry preset's decisions
 * (with a fake operation that fails the way the SDK does).
 */
import { RestError, createHttpHeaders, type PipelineRequest } from "@azure/core-rest-pipeline";
import { fileCodecs, isSmbConflict, isSmbConflictError, retryWhileSmbLocked } from "../../../src/files/index.js";
import { fixedBackoff, classifyError } from "../../../src/retry/index.js";
import { isStorageRequestError } from "../../../src/index.js";
import { resolveLease } from "../../../src/files/lease-ref.js";

function serviceError(status: number, code: string) {
  return new RestError(`status ${status}`, {
    code,
    statusCode: status,
    response: {
      status,
      headers: createHttpHeaders({ "x-ms-error-code": code }),
      request: {} as PipelineRequest,
      bodyAsText: null,
    },
  });
}

function failing(codes: string[]) {
  let calls = 0;
  return {
    operation: async () => {
      const code = codes[calls];
      calls += 1;
      if (code !== undefined) throw serviceError(code === "ResourceNotFound" ? 404 : 409, code);
      return "done";
    },
    calls: () => calls,
  };
}

const quick = { backoff: fixedBackoff({ delayInMs: 0 }) };

describe("fileCodecs", () => {
  it("bytes and text round-trip; JSON reads an empty file as undefined and refuses what JSON cannot hold", () => {
    expect(fileCodecs.bytes.decode(Buffer.from("ab"))).toEqual(Buffer.from("ab"));
    expect(fileCodecs.text.decode(Buffer.from("é", "utf8"))).toBe("é");
    const json = fileCodecs.json<{ a: number } | undefined>({ space: 2 });
    expect(json.decode(Buffer.alloc(0))).toBeUndefined();
    expect(json.decode(Buffer.from('{"a":1}'))).toEqual({ a: 1 });
    expect(json.encode({ a: 1 })).toBe('{\n  "a": 1\n}');
    expect(() => json.decode(Buffer.from("{oops"))).toThrow(SyntaxError);
    expect(() => fileCodecs.json().encode(undefined)).toThrow(/does not serialise to JSON/);
  });
});

describe("resolveLease", () => {
  it("takes a lease id or anything with a leaseId (a lock handle), and names the option when wrong", () => {
    const signal = new AbortController().signal;
    expect(resolveLease("lease", "id-1")).toEqual({ leaseId: "id-1", signal: undefined, lockMetadata: {} });
    expect(resolveLease("lease", { leaseId: "id-2", signal, fencingToken: 3 })).toEqual({
      leaseId: "id-2",
      signal,
      lockMetadata: {},
    });
    const lockMetadata = { lockfencingtoken: "3" };
    expect(resolveLease("lease", { leaseId: "id-3", lockMetadata })).toEqual({
      leaseId: "id-3",
      signal: undefined,
      lockMetadata,
    });
    expect(() => resolveLease("lease", { leaseId: "x", lockMetadata: "no" })).toThrow(
      /`lease.lockMetadata` must be an object/,
    );
    expect(() => resolveLease("lease", "")).toThrow(/`lease` must be a lease id/);
    expect(() => resolveLease("lease", { leaseId: "" })).toThrow(TypeError);
    expect(() => resolveLease("lease", { leaseId: "x", signal: "no" })).toThrow(
      /`lease.signal` must be an AbortSignal/,
    );
    expect(() => resolveLease("lease", undefined)).toThrow(/got undefined/);
  });

  it("reads a handle's abortSignal, and the deprecated signal only when abortSignal is absent", () => {
    const current = new AbortController().signal;
    const old = new AbortController().signal;
    expect(resolveLease("lease", { leaseId: "id", abortSignal: current, signal: old }).signal).toBe(current);
    expect(resolveLease("lease", { leaseId: "id", signal: old }).signal).toBe(old);
    expect(() => resolveLease("lease", { leaseId: "x", abortSignal: "no" })).toThrow(
      /`lease.abortSignal` must be an AbortSignal/,
    );
  });
});

describe("retryWhileSmbLocked", () => {
  it("retries SharingViolation, FileLockConflict and DeletePending until the operation succeeds", async () => {
    const { operation, calls } = failing(["SharingViolation", "FileLockConflict", "DeletePending"]);
    await expect(retryWhileSmbLocked(operation, quick)).resolves.toBe("done");
    expect(calls()).toBe(4);
  });

  it("does not retry other failures, transient ones included (the SDK pipeline retries those)", async () => {
    for (const code of ["LeaseAlreadyPresent", "ResourceNotFound"]) {
      const { operation, calls } = failing([code, code]);
      const error = await retryWhileSmbLocked(operation, quick).catch((e: unknown) => e);
      expect([calls(), isStorageRequestError(error), isSmbConflictError(error)]).toEqual([1, true, false]);
    }
    let calls = 0;
    const busy = await retryWhileSmbLocked(async () => {
      calls += 1;
      throw serviceError(503, "ServerBusy");
    }, quick).catch((e: unknown) => e);
    expect([calls, classifyError(busy).kind]).toEqual([1, "throttled"]);
  });

  it("gives up with SmbConflictError after maxRetries, keeping the service's code and the attempts", async () => {
    const { operation } = failing(Array<string>(10).fill("SharingViolation"));
    const error = await retryWhileSmbLocked(operation, { ...quick, maxRetries: 2, operationName: "write 'a'" }).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({
      name: "SmbConflictError",
      code: "SmbFileLocked",
      serviceCode: "SharingViolation",
      attempts: 3,
      statusCode: 409,
    });
    expect((error as Error).message).toMatch(/^Could not write 'a': an SMB client holds the file open/);
    expect((error as Error).cause).toBeInstanceOf(RestError);
  });

  it("reports a pending SMB delete as such", async () => {
    const { operation } = failing(Array<string>(10).fill("SMBDeletePending"));
    const error = await retryWhileSmbLocked(operation, { ...quick, maxRetries: 1 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "SmbDeletePending", serviceCode: "SMBDeletePending", attempts: 2 });
    expect((error as Error).message).toMatch(/marked the file for deletion/);
  });

  it("checks its options before calling anything", async () => {
    const { operation, calls } = failing([]);
    await expect(retryWhileSmbLocked(operation, { deadlineInMs: -1 })).rejects.toThrow(/`deadlineInMs`/);
    await expect(retryWhileSmbLocked(operation, { waitForDeletePending: "yes" as never })).rejects.toThrow(
      /`waitForDeletePending`/,
    );
    await expect(retryWhileSmbLocked(operation, { abortSignal: {} as never })).rejects.toThrow(/`abortSignal`/);
    expect(calls()).toBe(0);
  });

  it("isSmbConflict reads classifications", () => {
    expect(isSmbConflict(classifyError(serviceError(409, "DeletePending")))).toBe(true);
    expect(isSmbConflict(classifyError(serviceError(409, "DeletePending")), false)).toBe(false);
    expect(isSmbConflict(classifyError(serviceError(409, "LeaseAlreadyPresent")))).toBe(false);
  });
});
