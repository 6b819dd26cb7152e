/**
 * The one classifier of what is worth retrying. Everything in the library that decides whether to
 * try again asks this module; nothing else re-parses errors.
 *
 * Retried: 408, 429, 500, 502, 503, 504 and network failures (reset, timeout, refused, …).
 * Never retried: any other 4xx, 501, 505, cancellations, and errors that are not storage errors.
 */
import {
  isStorageConcurrencyError,
  isStorageRequestError,
  readRestError,
  serviceCodeOf,
  statusOf,
  StorageRequestError,
} from "../errors.js";
import { describeError } from "../internal/describe-error.js";
import { networkHint, refusedBeforeSending, statusHint } from "../internal/hints.js";

/** Why a storage call failed, as far as retrying is concerned. */
export type FailureKind =
  /** 429, or 503 ServerBusy: the service asks callers to slow down. */
  | "throttled"
  /** 408 or 504: the request timed out at the service. */
  | "timeout"
  /** 500 or 502. */
  | "server"
  /** No usable response: reset, refused, timed out on the wire. The request may have been applied. */
  | "network"
  /**
   * 409 from Azure Files because an SMB client holds the file: SharingViolation (open with a share
   * mode that refuses this access), FileLockConflict (a byte range is locked), FileOpenBySmbClient or
   * CannotDeleteFileOrDirectory (in use by an SMB client, so it cannot be deleted).
   * Waiting may help: the client may close the file soon.
   */
  | "smb-sharing-violation"
  /**
   * 409 DeletePending (SMBDeletePending in older documents): an SMB client marked the file for
   * deletion and a handle is still open. Waiting may help: it ends in 404 once the last handle
   * closes, or the client may clear the mark.
   */
  | "smb-delete-pending"
  /** Any other 4xx, 501, 505: the request itself, or the resource's state, is the problem. */
  | "client"
  /** The caller cancelled (an `AbortError`, or an `AbortSignal.timeout()` firing). */
  | "cancelled"
  /** Not a storage error at all. */
  | "other";

/** The verdict of {@link classifyError}. */
export interface ErrorClassification {
  /** Whether trying the same request again later may succeed. */
  readonly transient: boolean;
  /** Why it failed. */
  readonly kind: FailureKind;
  /** The HTTP status, when there was a response. */
  readonly statusCode: number | undefined;
  /** The service's error code, or the network failure's code. */
  readonly serviceCode: string | undefined;
  /** How long the service asked callers to wait, when it said. */
  readonly retryAfterInMs: number | undefined;
}

/** HTTP statuses worth retrying. */
export const TRANSIENT_STATUS_CODES: ReadonlySet<number> = new Set([408, 429, 500, 502, 503, 504]);

/**
 * Classifies a failure of a storage call.
 *
 * @example
 * ```ts
 * import { classifyError } from "azure-storage-concurrency/retry";
 *
 * const body = JSON.stringify({ generatedAt: new Date() });
 * try {
 *   await blob.upload(body, body.length);
 * } catch (error) {
 *   if (classifyError(error).transient) console.log("worth another try later");
 *   else throw error;
 * }
 * ```
 */
export function classifyError(error: unknown): ErrorClassification {
  if (isCancellation(error)) return verdict("cancelled", false);
  // The library's own errors keep the service's Retry-After from the SDK error they wrap (`cause`),
  // so that an operation that rethrows one does not lose it.
  if (isStorageRequestError(error)) {
    const kind = error.statusCode === undefined ? "network" : kindOfStatus(error.statusCode, error.serviceCode);
    return verdict(kind, error.transient, error.statusCode, error.serviceCode, retryAfterOfCause(error.cause));
  }
  if (isStorageConcurrencyError(error))
    return verdict("other", false, error.statusCode, error.serviceCode, retryAfterOfCause(error.cause));
  const info = readRestError(error);
  if (!info) return verdict("other", false);
  if (info.statusCode === undefined) return verdict("network", true, undefined, info.networkCode);
  const kind = kindOfStatus(info.statusCode, info.serviceCode);
  return verdict(
    kind,
    TRANSIENT_STATUS_CODES.has(info.statusCode),
    info.statusCode,
    info.serviceCode,
    info.retryAfterInMs,
  );
}

/**
 * Shorthand for `classifyError(error).transient`.
 *
 * @example
 * ```ts
 * import { isTransientError } from "azure-storage-concurrency/retry";
 *
 * const saved = await table.upsertEntity({ partitionKey: "p", rowKey: "r", n: 1 }).catch((error: unknown) => {
 *   if (isTransientError(error)) return undefined; // 503, timeout, reset …: try again on the next run
 *   throw error;
 * });
 * ```
 */
export function isTransientError(error: unknown): boolean {
  return classifyError(error).transient;
}

/**
 * Whether a failed request may nevertheless have been applied, judging by its last answer: no
 * answer at all (a network failure, a client-side time limit), or 500, 502 or 504, which mean the
 * service or a gateway gave up waiting for the work, not that it was not done ("500
 * OperationTimedOut: the operation may or may not have succeeded on the server side"). Any other
 * answer refused the request. (An earlier try that the SDK retried may still have been applied:
 * the caller must count its tries to rule that out.)
 *
 * @internal
 */
export function mayHaveBeenApplied(error: unknown): boolean {
  const { kind, statusCode } = classifyError(error);
  return kind === "network" || statusCode === 500 || statusCode === 502 || statusCode === 504;
}

/**
 * Wraps a failed storage call's error into a {@link StorageRequestError} whose message says what
 * was being done, what the service answered and what to do next. Errors the library already typed,
 * cancellations, and errors that are not storage errors pass through unchanged.
 *
 * @param operation - what was being done, phrased to follow "Could not", e.g. `"write blob 'a/b.json'"`.
 * @param attempts - how many attempts were made.
 *
 * @example
 * ```ts
 * import { wrapStorageError } from "azure-storage-concurrency/retry";
 *
 * try {
 *   await container.create();
 * } catch (error) {
 *   // "Could not create container 'reports': 409 ContainerAlreadyExists (…). Retrying will not help: …"
 *   throw wrapStorageError(error, "create container 'reports'");
 * }
 * ```
 */
export function wrapStorageError(error: unknown, operation: string, attempts = 1): unknown {
  if (isStorageConcurrencyError(error) || isCancellation(error)) return error;
  const notSent = refusedBeforeSending(error);
  if (notSent) {
    return new StorageRequestError(
      `Could not ${operation}: the SDK refused to send the request (${describeError(error)}), so nothing was applied. ` +
        `Fix the set-up: ${notSent}.`,
      { code: "RequestNotSent", cause: error, transient: false, attempts },
    );
  }
  const info = readRestError(error);
  if (!info) return error;
  const { transient } = classifyError(error);
  const hint =
    info.statusCode === undefined
      ? networkHint(info.networkCode)
      : statusHint(info.statusCode, info.serviceCode, error);
  const what =
    info.statusCode === undefined
      ? `a network failure (${info.networkCode ?? "no response"}${hint ? `: ${hint}` : ""})`
      : `${info.statusCode}${info.serviceCode ? ` ${info.serviceCode}` : ""}`;
  const next = transient
    ? `This is transient${attempts > 1 ? ` but lasted over ${attempts} attempts` : ""}: try again later, or allow more retries.`
    : `Retrying will not help: ${info.statusCode !== undefined && hint ? hint : "fix the request or the resource's state first"}.`;
  return new StorageRequestError(
    `Could not ${operation}: ${what}${info.message ? ` (${info.message})` : ""}. ${next}`,
    {
      code: "StorageRequestFailed",
      statusCode: info.statusCode,
      serviceCode: info.serviceCode ?? info.networkCode,
      cause: error,
      transient,
      requestId: info.requestId,
      attempts,
    },
  );
}

function kindOfStatus(statusCode: number, serviceCode: string | undefined): FailureKind {
  if (statusCode === 429 || (statusCode === 503 && serviceCode !== "ServiceUnavailable")) return "throttled";
  if (statusCode === 408 || statusCode === 504) return "timeout";
  if (statusCode === 500 || statusCode === 502 || statusCode === 503) return "server";
  if (statusCode === 409 && serviceCode !== undefined) {
    if (SMB_HOLDS_FILE_CODES.has(serviceCode)) return "smb-sharing-violation";
    if (SMB_DELETE_PENDING_CODES.has(serviceCode)) return "smb-delete-pending";
  }
  return "client";
}

// Azure Files error codes: https://learn.microsoft.com/rest/api/storageservices/file-service-error-codes
// ("DeletePending: The specified resource is marked for deletion by an SMB client", "FileLockConflict:
// A portion of the specified file is locked by an SMB client", "FileOpenBySmbClient",
// "CannotDeleteFileOrDirectory: The file or directory could not be deleted because it's in use by an
// SMB client"); SharingViolation and SMBDeletePending are the names the source documents use.
const SMB_HOLDS_FILE_CODES: ReadonlySet<string> = new Set([
  "SharingViolation",
  "FileLockConflict",
  "FileOpenBySmbClient",
  "CannotDeleteFileOrDirectory",
]);
const SMB_DELETE_PENDING_CODES: ReadonlySet<string> = new Set(["DeletePending", "SMBDeletePending"]);

/** An `AbortError` (from the SDK or a signal), or the `TimeoutError` of `AbortSignal.timeout()`. */
function isCancellation(error: unknown): boolean {
  try {
    return error instanceof Error && (error.name === "AbortError" || error.name === "TimeoutError");
  } catch {
    return false; // a revoked Proxy (instanceof throws), a throwing `name` getter: not a cancellation
  }
}

function verdict(
  kind: FailureKind,
  transient: boolean,
  statusCode?: number,
  serviceCode?: string,
  retryAfterInMs?: number,
): ErrorClassification {
  return { transient, kind, statusCode, serviceCode, retryAfterInMs };
}

/** The Retry-After of the SDK error a library error wraps, looked for down a short chain of causes. */
function retryAfterOfCause(cause: unknown, depth = 0): number | undefined {
  if (depth >= 5 || typeof cause !== "object" || cause === null) return undefined;
  if (isStorageConcurrencyError(cause)) return retryAfterOfCause(cause.cause, depth + 1);
  return readRestError(cause)?.retryAfterInMs;
}

/**
 * The queue or table is gone (404 QueueNotFound, TableNotFound), or the credential is refused (401,
 * 403): no retry will fix it, and no message or key is at fault. The queue consumer ends on it
 * (`ConsumerResourceError`); the idempotency store's callers throw it as they are told.
 */
export function isResourceFailure(error: unknown): boolean {
  const status = statusOf(error);
  if (status === 401 || status === 403) return true;
  const code = serviceCodeOf(error);
  return status === 404 && (code === "QueueNotFound" || code === "TableNotFound");
}
