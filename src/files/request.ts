/**
 * What every Files helper does around one SDK call: give each attempt a client-side time limit (the
 * SDK has none: an answer that never comes, such as the one to a request whose announced body was
 * not sent, issue 23, would keep the caller waiting for ever), wait out SMB clients (unless told
 * not to), stop when the caller or the lock aborts, and read the service's lease refusals into
 * typed errors.
 */
import type { ShareFileClient } from "@azure/storage-file-share";
import { serviceCodeOf, statusOf } from "../errors.js";
import { withTimeLimit } from "../internal/time-limit.js";
import { checkNumber } from "../internal/validate.js";
import { wrapStorageError } from "../retry/index.js";
import type { RetryAttemptContext } from "../retry/index.js";
import { FileLeaseConflictError } from "./errors.js";
import type { ResolvedLease } from "./lease-ref.js";
import { retryWhileSmbLocked, type SmbRetryOptions } from "./smb-retry.js";

/** Options every Files helper takes. */
export interface FileRequestOptions {
  /** Cancels the helper: the request in flight and any waiting. */
  readonly abortSignal?: AbortSignal;
  /**
   * Waiting out SMB clients that hold the file (409 SharingViolation, DeletePending, …): the
   * preset's settings, or `false` to fail at once.
   * @default {} (the preset: up to 30 s, see `retryWhileSmbLocked`)
   */
  readonly smbRetry?: SmbRetryOptions | false;
  /**
   * The client-side time limit of each attempt of the helper's request (the SDK's own retries
   * inside it included), in milliseconds. An attempt without an answer by then is abandoned and
   * counts as a lost answer: a write then reads the file back to learn whether it was applied. The
   * SDK's `tryTimeoutInMs` is the service's timeout and does not end a request that gets no answer.
   * Raise it on a slow link (a 4 MiB write).
   * @default 60000
   */
  readonly requestTimeoutInMs?: number;
}

/** The default of {@link FileRequestOptions.requestTimeoutInMs}. */
const DEFAULT_REQUEST_TIMEOUT_IN_MS = 60_000;

/** Checks the options every Files helper takes, by name. */
export function checkFileRequestOptions(options: FileRequestOptions): void {
  if (options.requestTimeoutInMs !== undefined)
    checkNumber("requestTimeoutInMs", options.requestTimeoutInMs, { min: 1 });
}

/** The metadata name under which the helpers record the id of the write that produced the content. */
export const WRITE_ID_METADATA_KEY = "ascwriteid";

/** The share-relative path of a file client, for messages: `share/dir/file`. */
export function describeFile(fileClient: Pick<ShareFileClient, "shareName" | "path">): string {
  return `${fileClient.shareName}/${fileClient.path}`;
}

/**
 * Runs one Files call with the SMB preset (unless `smbRetry` is `false`). Errors come out as the
 * library's: a cancellation as the signal's reason (a lost lock's reason when the lock aborted), an
 * SMB conflict as `SmbConflictError`, anything else from the service as `StorageRequestError`.
 */
export async function filesCall<T>(
  operation: (context: RetryAttemptContext) => Promise<T>,
  operationName: string,
  options: FileRequestOptions & {
    readonly signal: AbortSignal | undefined;
    readonly lease?: ResolvedLease | undefined;
  },
): Promise<T> {
  const timeLimitInMs = options.requestTimeoutInMs ?? DEFAULT_REQUEST_TIMEOUT_IN_MS;
  const limited = (context: RetryAttemptContext) =>
    withTimeLimit(operationName, timeLimitInMs, context.abortSignal, (abortSignal) =>
      operation({ ...context, abortSignal }),
    );
  try {
    if (options.smbRetry === false)
      return await limited({ attempt: 1, abortSignal: options.signal ?? new AbortController().signal });
    return await retryWhileSmbLocked(limited, { ...options.smbRetry, abortSignal: options.signal, operationName });
  } catch (error) {
    if (options.lease?.signal?.aborted) throw options.lease.signal.reason;
    if (options.abortSignal?.aborted) throw options.abortSignal.reason;
    throw wrapStorageError(error, operationName);
  }
}

/**
 * A 412 lease refusal, read into a {@link FileLeaseConflictError}; `undefined` for anything else.
 * `verb` is what was attempted ("read", "write", "delete").
 */
export function leaseRefusal(
  error: unknown,
  path: string,
  leaseId: string | undefined,
  verb: string,
): FileLeaseConflictError | undefined {
  if (statusOf(error) !== 412) return undefined;
  const serviceCode = serviceCodeOf(error);
  if (serviceCode === "LeaseIdMissing") {
    return new FileLeaseConflictError(
      `Could not ${verb} '${path}' as last writer wins: another client holds a lease on it (412 LeaseIdMissing), and ` +
        "last writer wins does not override a lock. Write under that lease (writeFileUnderLease), or wait until it is released.",
      { code: "FileLeasedByAnother", statusCode: 412, serviceCode, leaseId, cause: error },
    );
  }
  if (serviceCode === "LeaseIdMismatchWithFileOperation" || serviceCode === "LeaseNotPresentWithFileOperation") {
    return new FileLeaseConflictError(
      `Could not ${verb} '${path}' under lease '${leaseId}': that lease no longer holds the file (412 ${serviceCode}: ` +
        "it was broken, released or changed). Acquire the lease again and re-read the file before writing.",
      { code: "FileLeaseNotHeld", statusCode: 412, serviceCode, leaseId, cause: error },
    );
  }
  return undefined;
}
