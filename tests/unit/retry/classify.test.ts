import { RestError, createHttpHeaders, type PipelineRequest } from "@azure/core-rest-pipeline";
import { classifyError, isTransientError, wrapStorageError, TRANSIENT_STATUS_CODES } from "../../../src/retry/index.js";
import { readRestError, redactSecrets, serviceCodeOf, statusOf } from "../../../src/error-codes.js";
import { StorageConcurrencyError, isStorageRequestError } from "../../../src/index.js";

function restError(
  statusCode: number | undefined,
  options: { code?: string; headers?: Record<string, string>; body?: string; message?: string } = {},
) {
  return new RestError(options.message ?? `status ${statusCode}`, {
    ...(options.code ? { code: options.code } : {}),
    ...(statusCode === undefined ? {} : { statusCode }),
    ...(statusCode === undefined
      ? {}
      : {
          response: {
            status: statusCode,
            headers: createHttpHeaders(options.headers ?? {}),
            request: {} as PipelineRequest,
            bodyAsText: options.body ?? null,
          },
        }),
  });
}

describe("classifyError", () => {
  it.each([408, 429, 500, 502, 503, 504])("retries %i", (status) => {
    expect(classifyError(restError(status)).transient).toBe(true);
    expect(TRANSIENT_STATUS_CODES.has(status)).toBe(true);
  });

  it.each([400, 401, 403, 404, 409, 412, 416, 501, 505])("never retries %i", (status) => {
    expect(classifyError(restError(status)).transient).toBe(false);
  });

  it("names the kind of failure", () => {
    expect(classifyError(restError(503, { code: "ServerBusy" })).kind).toBe("throttled");
    expect(classifyError(restError(429)).kind).toBe("throttled");
    expect(classifyError(restError(504)).kind).toBe("timeout");
    expect(classifyError(restError(500, { code: "InternalError" })).kind).toBe("server");
    expect(classifyError(restError(412, { code: "ConditionNotMet" })).kind).toBe("client");
    expect(classifyError(restError(409, { code: "SharingViolation" })).kind).toBe("smb-sharing-violation");
    expect(classifyError(restError(409, { code: "SMBDeletePending" })).kind).toBe("smb-delete-pending");
  });

  it("recognises every Azure Files code that means an SMB client holds the file, and nothing else", () => {
    for (const code of ["SharingViolation", "FileLockConflict", "FileOpenBySmbClient", "CannotDeleteFileOrDirectory"]) {
      expect(classifyError(restError(409, { code })).kind).toBe("smb-sharing-violation");
    }
    for (const code of ["DeletePending", "SMBDeletePending"]) {
      expect(classifyError(restError(409, { code })).kind).toBe("smb-delete-pending");
    }
    // Not transient by the default rule: only the SMB retry preset waits for an SMB client.
    expect(classifyError(restError(409, { code: "SharingViolation" })).transient).toBe(false);
    expect(classifyError(restError(409, { code: "LeaseAlreadyPresent" })).kind).toBe("client");
    expect(classifyError(restError(412, { code: "SharingViolation" })).kind).toBe("client");
  });

  it.each(["ECONNRESET", "ETIMEDOUT", "ECONNREFUSED", "EPIPE", "REQUEST_SEND_ERROR"])(
    "retries the network failure %s",
    (code) => {
      const c = classifyError(restError(undefined, { code }));
      expect(c).toMatchObject({ transient: true, kind: "network", serviceCode: code, statusCode: undefined });
    },
  );

  it("never retries cancellations or errors that are not storage errors", () => {
    const abort = Object.assign(new Error("The operation was aborted."), { name: "AbortError" });
    expect(classifyError(abort)).toMatchObject({ transient: false, kind: "cancelled" });
    expect(classifyError(new TypeError("bad"))).toMatchObject({ transient: false, kind: "other" });
    expect(isTransientError("a string")).toBe(false);
    expect(isTransientError(undefined)).toBe(false);
  });

  it("reads Retry-After in its three spellings", () => {
    expect(classifyError(restError(503, { headers: { "x-ms-retry-after-ms": "250" } })).retryAfterInMs).toBe(250);
    expect(classifyError(restError(503, { headers: { "retry-after-ms": "120" } })).retryAfterInMs).toBe(120);
    expect(classifyError(restError(429, { headers: { "retry-after": "2" } })).retryAfterInMs).toBe(2_000);
    const date = new Date(Date.now() + 60_000).toUTCString();
    const fromDate = classifyError(restError(429, { headers: { "retry-after": date } })).retryAfterInMs!;
    expect(fromDate).toBeGreaterThan(50_000);
    expect(fromDate).toBeLessThanOrEqual(60_000);
  });
});

describe("readRestError", () => {
  it("reads the service code from the OData body when the tables SDK leaves `code` undefined", () => {
    const body = JSON.stringify({
      "odata.error": {
        code: "UpdateConditionNotSatisfied",
        message: { lang: "en-US", value: "The update condition was not satisfied.\nRequestId:x" },
      },
    });
    const info = readRestError(restError(412, { body, message: body }));
    expect(info).toMatchObject({
      statusCode: 412,
      serviceCode: "UpdateConditionNotSatisfied",
      message: "The update condition was not satisfied.",
    });
  });

  it("prefers x-ms-error-code, then `code`", () => {
    expect(
      readRestError(restError(409, { code: "A", headers: { "x-ms-error-code": "LeaseAlreadyPresent" } }))?.serviceCode,
    ).toBe("LeaseAlreadyPresent");
    expect(readRestError(restError(409, { code: "ContainerAlreadyExists" }))?.serviceCode).toBe(
      "ContainerAlreadyExists",
    );
  });

  it("ignores errors that are not storage errors", () => {
    expect(readRestError(new Error("x"))).toBeUndefined();
    expect(readRestError(null)).toBeUndefined();
  });

  it("reads the service code of a wrapped error from the wrapper, not its library-level `code`", () => {
    const wrapped = wrapStorageError(restError(412, { code: "LeaseIdMissing" }), "write file 'a'");
    expect(readRestError(wrapped)).toBeUndefined();
    expect(serviceCodeOf(wrapped)).toBe("LeaseIdMissing");
    expect(statusOf(wrapped)).toBe(412);
    expect(classifyError(wrapped).serviceCode).toBe("LeaseIdMissing");
  });
});

describe("secrets never reach messages", () => {
  const key = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

  it("redacts account keys, SAS signatures and SharedKey headers", () => {
    const text = `DefaultEndpointsProtocol=https;AccountName=a;AccountKey=${key};EndpointSuffix=core.windows.net https://a.blob.core.windows.net/c?sv=2024&sig=abc%2Bdef&se=1 Authorization: SharedKey a:c2lnbmF0dXJl`;
    const redacted = redactSecrets(text);
    expect(redacted).not.toContain(key);
    expect(redacted).not.toContain("abc%2Bdef");
    expect(redacted).not.toContain("c2lnbmF0dXJl");
    expect(redacted).toContain("AccountName=a");
  });

  it("applies to every library error and to wrapped SDK errors", () => {
    expect(new StorageConcurrencyError(`bad AccountKey=${key};`, { code: "X" }).message).not.toContain(key);
    const wrapped = wrapStorageError(
      restError(403, { code: "AuthenticationFailed", message: `sig=secret123 failed` }),
      "read blob 'a'",
    );
    expect(isStorageRequestError(wrapped)).toBe(true);
    expect((wrapped as Error).message).not.toContain("secret123");
    expect((wrapped as Error).message).toMatch(
      /^Could not read blob 'a': 403 AuthenticationFailed .*Retrying will not help/,
    );
  });
});
