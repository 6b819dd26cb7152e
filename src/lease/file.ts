/**
 * The file adapter of the leasable port: Azure Files' file leases in the lease lock engine.
 *
 * What makes file leases different from blob leases (Lease File,
 * https://learn.microsoft.com/rest/api/storageservices/lease-file):
 * - they are infinite only (`x-ms-lease-duration: -1`): held until released or broken, never
 *   expiring, so a crashed holder keeps the file locked until someone breaks the lease;
 * - there is no renew. The lock's periodic check is Get File Properties with `x-ms-lease-id`, which
 *   the service answers 412 once that lease no longer holds the file ("If specified, the operation
 *   is performed only if the file's lease is currently active and the lease ID specified in the
 *   request matches", https://learn.microsoft.com/rest/api/storageservices/get-file-properties).
 *   That is exact where reading the lease state is not: a state of "leased" does not say whose;
 * - a break takes no break period: it is always immediate;
 * - the lease guards the file's own writes and deletes: the service refuses every write that does
 *   not name the lease id (412 LeaseIdMissing), so a holder that lost the lease cannot write either;
 * - an SMB client can stand in the way: Lease File acquire fails with 409 SharingViolation while an
 *   SMB client has the file open with write or delete access, or with a share mode other than
 *   read/write/delete ("Manage file locks",
 *   https://learn.microsoft.com/rest/api/storageservices/managing-file-locks). That 409 is not "held
 *   by someone else": like every Files helper, the adapter waits it out with the SMB retry preset
 *   (`smbRetry`) and then fails with an `SmbConflictError` (also when the lock's own `timeoutInMs`
 *   ends the wait first). This makes the file adapter the one leasable that waits inside a request;
 *   the engine reads a 409 as "held" only when it is the lease's own answer.
 *
 * The lock's record (holder, acquisition time, fencing token) goes into the file's metadata with
 * Set File Metadata under the lease. It has no If-Match, so the engine reads the metadata after the
 * acquire and writes it back merged: safe, because from then on nobody else can write the file.
 * Writes through `writeFileUnderLease` / `updateFileUnderLease` with the lock's handle keep the
 * record (see `FileLeaseHandleLike.lockMetadata`).
 *
 * No `createIfMissing`: Create File has no If-None-Match, so creating a missing lock file could
 * overwrite one that another client created (and wrote) meanwhile. The file must exist.
 */
import { sdkTracing } from "../observability/scope.js";
import type { ShareFileClient } from "@azure/storage-file-share";
import { isLockTimeoutError } from "./errors.js";
import { INFINITE_LEASE_SECONDS, type Leasable, type LeasableRequestOptions } from "./leasable.js";
import { readProperties } from "./lease-client.js";
import { LeaseLock } from "./lock.js";
import type { LeaseLockOptions } from "./options.js";
import type { ErrorClassification } from "../retry/index.js";
import { checkNumber } from "../internal/validate.js";
import { shareLeaseOperations } from "./file-share-operations.js";
import { ownRequest } from "../files/internal.js";
import { describeFile } from "../files/internal.js";
import {
  retryWhileSmbLocked,
  SMB_LOCK_DEADLINE_IN_MS,
  smbConflictError,
  type SmbRetryOptions,
} from "../files/internal.js";
import { describeResource } from "../observability/resource.js";

/** Options for {@link fileLeasable}. */
export interface FileLeasableOptions {
  /**
   * Waiting out SMB clients that keep the lease from being acquired (or the lock's record from
   * being written): the SMB retry preset's settings, or `false` to fail at once. Either way the lock
   * then fails with an `SmbConflictError`, never reading the SMB client as another holder.
   * @default {} (the preset: up to 30 s, see `retryWhileSmbLocked`)
   */
  readonly smbRetry?: SmbRetryOptions | false;
  /**
   * The client-side time limit of each attempt of the requests the lock makes on its own: lease
   * releases (up to 3 attempts: a file lease that is not released stays held for ever) and the
   * periodic check that the lease is still held, in milliseconds.
   * @default 10000
   */
  readonly attemptTimeoutInMs?: number;
}

/** Options for {@link fileLock}: the lock's options and the {@link FileLeasableOptions}. */
export interface FileLockOptions extends LeaseLockOptions, FileLeasableOptions {}

/**
 * `fileClient`'s file lease as a {@link Leasable}: infinite leases only, with a periodic check
 * that the lease is still held in place of renewals.
 *
 * @example
 * ```ts
 * import { ShareServiceClient } from "@azure/storage-file-share";
 * import { fileLeasable, LeaseLock } from "azure-storage-concurrency/lease";
 *
 * const file = ShareServiceClient.fromConnectionString(process.env.AZURE_STORAGE_CONNECTION_STRING!)
 *   .getShareClient("config")
 *   .rootDirectoryClient.getFileClient("settings.json");
 * const lock = new LeaseLock(fileLeasable(file, { smbRetry: { deadlineInMs: 10_000 } }), { renewIntervalInMs: 5_000 });
 * ```
 */
export function fileLeasable(fileClient: ShareFileClient, options: FileLeasableOptions = {}): Leasable {
  if (typeof fileClient?.getShareLeaseClient !== "function") {
    throw new TypeError("`fileClient` must be a ShareFileClient (from @azure/storage-file-share).");
  }
  const smbRetry = options.smbRetry ?? {};
  if (smbRetry !== false && (typeof smbRetry !== "object" || smbRetry === null)) {
    throw new TypeError("`smbRetry` must be the SMB retry preset's options or false.");
  }
  const { attemptTimeoutInMs } = options;
  if (attemptTimeoutInMs !== undefined) checkNumber("attemptTimeoutInMs", attemptTimeoutInMs, { min: 1 });
  const lease = (id?: string) => fileClient.getShareLeaseClient(id);
  const description = `file '${describeFile(fileClient)}'`;
  const smb = <T>(operation: (signal: AbortSignal | undefined) => Promise<T>, what: string, signal?: AbortSignal) =>
    waitOutSmbClients(operation, `${what} ${description}`, signal, smbRetry);
  return describeResource(
    {
      description,
      finiteDurations: false,
      async acquire(durationInSeconds: number, proposedLeaseId: string, options: LeasableRequestOptions = {}) {
        if (durationInSeconds !== INFINITE_LEASE_SECONDS) {
          throw new RangeError(
            `${description} only has infinite leases (-1), got a duration of ${durationInSeconds} s.`,
          );
        }
        // Same proposed id as the active lease: granted again ("If the file has an active lease, you
        // can only request a new lease using the active lease ID"), so a lost response is safe to repeat.
        await smb(
          (abortSignal) =>
            lease(proposedLeaseId).acquireLease(INFINITE_LEASE_SECONDS, { abortSignal, tracingOptions: sdkTracing() }),
          "take the lease on",
          options.abortSignal,
        );
      },
      async renew(leaseId: string, options: LeasableRequestOptions = {}) {
        // No renew for files: a HEAD conditioned on the lease id, refused with 412 once it is gone.
        // One attempt, time-limited: the lock schedules the next check itself.
        await ownRequest(
          `check the lease on ${description}`,
          (abortSignal) =>
            fileClient.getProperties({ abortSignal, leaseAccessConditions: { leaseId }, tracingOptions: sdkTracing() }),
          { abortSignal: options.abortSignal, attemptTimeoutInMs, attempts: 1 },
        );
      },
      ...shareLeaseOperations(fileClient, description, attemptTimeoutInMs),
      async breakLease(breakPeriodInSeconds: number | undefined, options: LeasableRequestOptions = {}) {
        if (breakPeriodInSeconds !== undefined && breakPeriodInSeconds !== 0) {
          throw new RangeError(
            `\`breakPeriodInSeconds\` must be 0 for ${description}: file leases take no break period and break at once, got ${breakPeriodInSeconds}.`,
          );
        }
        await lease().breakLease({ abortSignal: options.abortSignal, tracingOptions: sdkTracing() });
        return 0;
      },
      getProperties: (options: LeasableRequestOptions = {}) =>
        readProperties(() =>
          fileClient.getProperties({ abortSignal: options.abortSignal, tracingOptions: sdkTracing() }),
        ),
      conditionalMetadataWrites: false,
      // The lock's client-side time limit for acquire and setMetadata is extended by the SMB wait.
      conflictWaitInMs: smbRetry === false ? 0 : (smbRetry.deadlineInMs ?? SMB_LOCK_DEADLINE_IN_MS),
      async setMetadata(metadata, leaseId, options: LeasableRequestOptions = {}) {
        await smb(
          (abortSignal) =>
            fileClient.setMetadata(
              { ...metadata },
              { leaseAccessConditions: { leaseId }, abortSignal, tracingOptions: sdkTracing() },
            ),
          "write the lock's record on",
          options.abortSignal,
        );
      },
    },
    { kind: "file", container: fileClient.shareName, name: fileClient.path, url: fileClient.url },
  );
}

/**
 * Runs one request of the lock with SMB clients waited out (or not, `smbRetry: false`), ending in an
 * `SmbConflictError`; also when the lock's own time limit (a `LockTimeoutError` as the signal's
 * reason) ends the wait, since the SMB client says more than the timeout. Other failures come out
 * as `StorageRequestError`s with the service's status, as the engine reads them.
 */
async function waitOutSmbClients<T>(
  operation: (signal: AbortSignal | undefined) => Promise<T>,
  operationName: string,
  abortSignal: AbortSignal | undefined,
  smbRetry: SmbRetryOptions | false,
): Promise<T> {
  const start = performance.now();
  let last: { error: unknown; classification: ErrorClassification; attempt: number } | undefined;
  try {
    return await retryWhileSmbLocked(({ abortSignal: signal }) => operation(signal), {
      ...(smbRetry === false ? { maxRetries: 0 } : smbRetry),
      abortSignal,
      operationName,
      onRetry: (event) => {
        last = event;
        if (smbRetry !== false) smbRetry.onRetry?.(event);
      },
    });
  } catch (error) {
    if (last && abortSignal?.aborted && isLockTimeoutError(abortSignal.reason)) {
      throw smbConflictError(last.error, last.classification, operationName, performance.now() - start, last.attempt);
    }
    throw error;
  }
}

/**
 * A lock on a file through its file lease: `new LeaseLock(fileLeasable(fileClient, { smbRetry }), options)`.
 * The lease is infinite (the only kind files have); the lock checks every `renewIntervalInMs`
 * (10 s by default) that it still holds it, and its handle's signal aborts with a `LeaseLostError`
 * when the lease was broken. The file must exist. While the lock is held, the service refuses every
 * write and delete of the file that does not name the lease: write with `writeFileUnderLease` or
 * `updateFileUnderLease`, passing the handle. An SMB client that has the file open can keep the
 * lease from being taken (409 SharingViolation): the lock waits it out as the Files helpers do
 * (`smbRetry`), then fails with an `SmbConflictError`, not as if someone held the lock.
 *
 * @example
 * ```ts
 * import { ShareServiceClient } from "@azure/storage-file-share";
 * import { fileCodecs, updateFileUnderLease } from "azure-storage-concurrency/files";
 * import { fileLock } from "azure-storage-concurrency/lease";
 *
 * const file = ShareServiceClient.fromConnectionString(process.env.AZURE_STORAGE_CONNECTION_STRING!)
 *   .getShareClient("config")
 *   .rootDirectoryClient.getFileClient("settings.json");
 * await fileLock(file, { holderName: "settings-updater" }).withLock((handle) =>
 *   updateFileUnderLease(file, handle, (s) => ({ ...s, retries: s.retries + 1 }), {
 *     codec: fileCodecs.json<{ retries: number }>(),
 *   }),
 * );
 * ```
 */
export function fileLock(fileClient: ShareFileClient, options: FileLockOptions = {}): LeaseLock {
  if (typeof options !== "object" || options === null) throw new TypeError("`options` must be an object.");
  const { smbRetry, attemptTimeoutInMs, ...lockOptions } = options;
  return new LeaseLock(
    fileLeasable(fileClient, {
      ...(smbRetry === undefined ? {} : { smbRetry }),
      ...(attemptTimeoutInMs === undefined ? {} : { attemptTimeoutInMs }),
    }),
    lockOptions,
  );
}
