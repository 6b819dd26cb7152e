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
 *   not name the lease id (412 LeaseIdMissing), so a holder that lost the lease cannot write either.
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
import type { ShareFileClient } from "@azure/storage-file-share";
import { INFINITE_LEASE_SECONDS, type Leasable, type LeasableRequestOptions } from "../lease/leasable.js";
import { readProperties } from "../lease/lease-client.js";
import { LeaseLock } from "../lease/lock.js";
import type { LeaseLockOptions } from "../lease/options.js";
import { shareLeaseOperations } from "./lease-operations.js";
import { describeFile } from "./request.js";

/**
 * `fileClient`'s file lease as a {@link Leasable}: infinite leases only, with a periodic check
 * that the lease is still held in place of renewals.
 *
 * @example
 * ```ts
 * import { ShareServiceClient } from "@azure/storage-file-share";
 * import { fileLeasable, LeaseLock } from "azure-storage-concurrency";
 *
 * const file = ShareServiceClient.fromConnectionString(process.env.AZURE_STORAGE_CONNECTION_STRING!)
 *   .getShareClient("config")
 *   .rootDirectoryClient.getFileClient("settings.json");
 * const lock = new LeaseLock(fileLeasable(file), { renewIntervalInMs: 5_000 });
 * ```
 */
export function fileLeasable(fileClient: ShareFileClient): Leasable {
  if (typeof fileClient?.getShareLeaseClient !== "function") {
    throw new TypeError("`fileClient` must be a ShareFileClient (from @azure/storage-file-share).");
  }
  const lease = (id?: string) => fileClient.getShareLeaseClient(id);
  const description = `file '${describeFile(fileClient)}'`;
  return {
    description,
    finiteDurations: false,
    async acquire(durationInSeconds: number, proposedLeaseId: string, options: LeasableRequestOptions = {}) {
      if (durationInSeconds !== INFINITE_LEASE_SECONDS) {
        throw new RangeError(`${description} only has infinite leases (-1), got a duration of ${durationInSeconds} s.`);
      }
      // Same proposed id as the active lease: granted again ("If the file has an active lease, you
      // can only request a new lease using the active lease ID"), so a lost response is safe to repeat.
      await lease(proposedLeaseId).acquireLease(INFINITE_LEASE_SECONDS, { abortSignal: options.abortSignal });
    },
    async renew(leaseId: string, options: LeasableRequestOptions = {}) {
      // No renew for files: a HEAD conditioned on the lease id, refused with 412 once it is gone.
      await fileClient.getProperties({ abortSignal: options.abortSignal, leaseAccessConditions: { leaseId } });
    },
    ...shareLeaseOperations(fileClient),
    async breakLease(breakPeriodInSeconds: number | undefined, options: LeasableRequestOptions = {}) {
      if (breakPeriodInSeconds !== undefined && breakPeriodInSeconds !== 0) {
        throw new RangeError(
          `\`breakPeriodInSeconds\` must be 0 for ${description}: file leases take no break period and break at once, got ${breakPeriodInSeconds}.`,
        );
      }
      await lease().breakLease({ abortSignal: options.abortSignal });
      return 0;
    },
    getProperties: (options: LeasableRequestOptions = {}) =>
      readProperties(() => fileClient.getProperties({ abortSignal: options.abortSignal })),
    conditionalMetadataWrites: false,
    async setMetadata(metadata, leaseId, options: LeasableRequestOptions = {}) {
      await fileClient.setMetadata(
        { ...metadata },
        { leaseAccessConditions: { leaseId }, abortSignal: options.abortSignal },
      );
    },
  };
}

/**
 * A lock on a file through its file lease: `new LeaseLock(fileLeasable(fileClient), options)`.
 * The lease is infinite (the only kind files have); the lock checks every `renewIntervalInMs`
 * (10 s by default) that it still holds it, and its handle's signal aborts with a `LeaseLostError`
 * when the lease was broken. The file must exist. While the lock is held, the service refuses every
 * write and delete of the file that does not name the lease: write with `writeFileUnderLease` or
 * `updateFileUnderLease`, passing the handle.
 *
 * @example
 * ```ts
 * import { ShareServiceClient } from "@azure/storage-file-share";
 * import { fileCodecs, fileLock, updateFileUnderLease } from "azure-storage-concurrency";
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
export function fileLock(fileClient: ShareFileClient, options?: LeaseLockOptions): LeaseLock {
  return new LeaseLock(fileLeasable(fileClient), options);
}
