/**
 * Waiting out SMB clients. On a share that SMB clients mount, a REST call can fail because an SMB
 * client holds the file: 409 SharingViolation (open with a share mode that refuses the call),
 * FileLockConflict (a locked byte range), or DeletePending (marked for deletion while a handle is
 * still open; only once the last handle closes does the file answer 404). The source documents:
 * "Managing Concurrency in Microsoft Azure Storage", File section; the service's codes:
 * https://learn.microsoft.com/rest/api/storageservices/file-service-error-codes and
 * https://learn.microsoft.com/rest/api/storageservices/managing-file-locks .
 *
 * None of these is transient in the usual sense (the default classifier does not retry them), but
 * an SMB client usually closes a file soon, so for Files calls it is worth waiting a while. This is
 * that preset: it retries only those failures, with backoff up to a deadline, and then says plainly
 * that an SMB client holds the file. Transient failures (503, resets) are left to the SDK pipeline's
 * own retries, as everywhere in this library (docs/retries.md).
 */
import { checkOptionalSignal } from "../internal/validate.js";
import { exponentialBackoff, type BackoffStrategy } from "../retry/index.js";
import { classifyError, type ErrorClassification } from "../retry/index.js";
import { retryPolicy, type RetryAttemptContext, type RetryEvent } from "../retry/index.js";
import { SmbConflictError } from "./errors.js";

/** Options for {@link retryWhileSmbLocked}. */
export interface SmbRetryOptions {
  /**
   * How long to wait before each retry.
   * @default SMB_LOCK_BACKOFF (about 0.35 s, 0.85 s, 1.85 s, 3.85 s, then 5 s)
   */
  readonly backoff?: BackoffStrategy;
  /**
   * How long to keep waiting for the SMB client, from the first attempt: no retry starts whose wait
   * would end past it.
   * @default 30000
   */
  readonly deadlineInMs?: number;
  /**
   * At most this many retries (the deadline usually ends the waiting first).
   * @default Infinity
   */
  readonly maxRetries?: number;
  /**
   * Also wait while the file is pending deletion by an SMB client. Set to `false` to give up at once
   * (e.g. when the caller is about to delete the file anyway).
   * @default true
   */
  readonly waitForDeletePending?: boolean;
  /** Called before each retry, e.g. to log which SMB conflict is being waited out. */
  readonly onRetry?: (event: RetryEvent) => void;
}

/** Per-call options of {@link retryWhileSmbLocked}. */
export interface SmbRetryCallOptions extends SmbRetryOptions {
  /** Cancels the waiting (and is passed to the operation). */
  readonly abortSignal?: AbortSignal;
  /**
   * What the operation does, phrased to follow "Could not", for the error message.
   * @default "complete the Azure Files operation"
   */
  readonly operationName?: string;
}

/** The preset's backoff: exponential (the source documents' formula) from about 0.35 s, capped at 5 s. */
export const SMB_LOCK_BACKOFF: BackoffStrategy = exponentialBackoff({ deltaInMs: 250, minInMs: 100, maxInMs: 5_000 });

/** The preset's default deadline: 30 s. */
export const SMB_LOCK_DEADLINE_IN_MS = 30_000;

/**
 * Whether `classification` is an SMB client holding the file (or, if allowed, a pending SMB delete).
 *
 * @example
 * ```ts
 * import { classifyError } from "azure-storage-concurrency/retry";
 * import { isSmbConflict } from "azure-storage-concurrency/files";
 *
 * await fileClient.delete().catch((error: unknown) => {
 *   if (isSmbConflict(classifyError(error))) console.log("an SMB client has the file open; try again later");
 *   else throw error;
 * });
 * ```
 */
export function isSmbConflict(classification: ErrorClassification, includeDeletePending = true): boolean {
  return (
    classification.kind === "smb-sharing-violation" ||
    (includeDeletePending && classification.kind === "smb-delete-pending")
  );
}

/**
 * Runs an Azure Files call, and while it fails because an SMB client holds the file (409
 * SharingViolation, FileLockConflict, FileOpenBySmbClient, or DeletePending), waits and tries again,
 * up to a deadline. Gives up with an {@link SmbConflictError} that says so; any other failure is
 * passed on at once (wrapped as a `StorageRequestError`, as `retry()` does).
 *
 * The operation must be safe to repeat: every Files call the library makes is (a write under a
 * lease, or the same Put Range again, has the same effect twice).
 *
 * @example
 * ```ts
 * import { retryWhileSmbLocked, isSmbConflictError } from "azure-storage-concurrency/files";
 *
 * try {
 *   const download = await retryWhileSmbLocked(
 *     ({ abortSignal }) => fileClient.downloadToBuffer(0, undefined, { abortSignal }),
 *     { deadlineInMs: 10_000, operationName: "read 'reports/q1.csv'" },
 *   );
 * } catch (error) {
 *   if (isSmbConflictError(error)) console.log(error.message); // an SMB client holds the file ...
 *   else throw error;
 * }
 * ```
 */
export async function retryWhileSmbLocked<T>(
  operation: (context: RetryAttemptContext) => Promise<T>,
  options: SmbRetryCallOptions = {},
): Promise<T> {
  checkOptionalSignal("abortSignal", options.abortSignal);
  if (options.waitForDeletePending !== undefined && typeof options.waitForDeletePending !== "boolean") {
    throw new TypeError("`waitForDeletePending` must be a boolean.");
  }
  const includeDeletePending = options.waitForDeletePending ?? true;
  const operationName = options.operationName ?? "complete the Azure Files operation";
  const policy = retryPolicy({
    backoff: options.backoff ?? SMB_LOCK_BACKOFF,
    deadlineInMs: options.deadlineInMs ?? SMB_LOCK_DEADLINE_IN_MS,
    maxRetries: options.maxRetries ?? Infinity,
    honorRetryAfter: false,
    shouldRetry: (classification) => isSmbConflict(classification, includeDeletePending),
    // retry() logs each wait (verbose): "retrying … (smb-sharing-violation 409 SharingViolation)".
    ...(options.onRetry ? { onRetry: options.onRetry } : {}),
  });
  const start = performance.now();
  try {
    return await policy.execute(operation, { abortSignal: options.abortSignal, operationName });
  } catch (error) {
    const classification = classifyError(error);
    if (!isSmbConflict(classification)) throw error;
    const attempts = (error as { attempts?: unknown }).attempts;
    throw smbConflictError(
      error,
      classification,
      operationName,
      performance.now() - start,
      typeof attempts === "number" ? attempts : 1,
    );
  }
}

/** The {@link SmbConflictError} that ends waiting for an SMB client, from its last refusal. */
export function smbConflictError(
  error: unknown,
  classification: ErrorClassification,
  operationName: string,
  waitedInMs: number,
  count: number,
): SmbConflictError {
  const over = `${count} attempt${count === 1 ? "" : "s"} over ${(waitedInMs / 1000).toFixed(1)} s`;
  const cause = (error as { cause?: unknown }).cause ?? error;
  if (classification.kind === "smb-delete-pending") {
    return new SmbConflictError(
      `Could not ${operationName}: an SMB client has marked the file for deletion and still has it open ` +
        `(409 ${classification.serviceCode}), still so after ${over}. It will be gone (404) once every SMB handle ` +
        "is closed, unless that client cancels the deletion; find the handles with ShareFileClient.listHandles().",
      { code: "SmbDeletePending", serviceCode: classification.serviceCode, attempts: count, waitedInMs, cause },
    );
  }
  return new SmbConflictError(
    `Could not ${operationName}: an SMB client holds the file open (409 ${classification.serviceCode}: its share mode ` +
      `refuses this access, or it locks part of the file), still so after ${over}. Ask whoever has it open to close it, ` +
      "or list its handles with ShareFileClient.listHandles() and close them with forceCloseAllHandles(); then try again.",
    { code: "SmbFileLocked", serviceCode: classification.serviceCode, attempts: count, waitedInMs, cause },
  );
}
