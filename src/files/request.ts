/**
 * What every Files helper does around one SDK call: wait out SMB clients (unless told not to), stop
 * when the caller or the lock aborts, and read the service's lease refusals into typed errors.
 */
import type { ShareFileClient } from "@azure/storage-file-share";
import { serviceCodeOf, statusOf } from "../errors.js";
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
  try {
    if (options.smbRetry === false)
      return await operation({ attempt: 1, abortSignal: options.signal ?? new AbortController().signal });
    return await retryWhileSmbLocked(operation, { ...options.smbRetry, abortSignal: options.signal, operationName });
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
