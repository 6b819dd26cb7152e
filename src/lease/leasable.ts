/**
 * The leasable port: the few things the lease lock engine ({@link LeaseLock}) needs from something
 * Azure Storage can lease. Blobs and containers plug in here (`./blob.ts`, `./container.ts`); Azure
 * Files' file leases and share leases plug into the same port.
 *
 * The contract, in one place:
 *
 * - Every method is one storage request (the SDK pipeline may retry it), takes an `abortSignal`,
 *   and lets the SDK's error through unchanged. The engine reads errors by HTTP status only:
 *   - `acquire`: 409 = someone else holds the lease; 404 = the leased resource is missing;
 *   - `renew`, `release`, `change`, `setMetadata`: 409 or 412 = this lease id no longer holds it;
 *   - an adapter that finds out by other means that the lease is gone throws a `LeaseLostError`
 *     (see `./errors.ts`), which the engine treats like a 409.
 * - Lease ids are always chosen by the engine (a fresh UUID per acquisition, passed as the proposed
 *   lease id). That is what makes `acquire` safe to repeat when its response was lost: Azure
 *   Storage answers 200 to an acquire whose proposed id already holds the lease (lease state
 *   "leased": "acquire (same lease ID only)"), and 409 to any other id.
 *   https://learn.microsoft.com/rest/api/storageservices/lease-blob ,
 *   https://learn.microsoft.com/rest/api/storageservices/lease-container ; Azurite implements the
 *   same in src/blob/lease/LeaseLeasedState.ts (`acquire` throws LeaseAlreadyPresent only when the
 *   proposed id differs).
 * - Durations are in seconds as the service counts them: 15 to 60, or `-1` for an infinite lease.
 *   A leasable whose service only has infinite leases (Azure Files file leases) sets
 *   {@link Leasable.finiteDurations} to `false`; the engine then never asks for a finite one.
 * - `renew` is called on a cadence while the lock is held, with the duration the lease was acquired
 *   with. For a finite lease it is the renewal (it resets the lease's clock). For an infinite lease
 *   it is the periodic check that the lease is still held by this id (someone may have broken it):
 *   a blob or container renews (allowed on infinite leases, and it fails with 409 once the lease was
 *   broken or taken); a leasable without a renew operation (file leases) implements it as a read
 *   conditioned on the lease id, which the service refuses with 412 once the lease is gone (or
 *   throws `LeaseLostError` when it finds out otherwise).
 * - Metadata (holder, fencing token) is optional: a leasable that cannot store metadata under the
 *   lease leaves out `setMetadata`, and its locks have no fencing token.
 *
 * Adapters stay thin: one SDK call per method, no retries, no waiting, no state. (One exception:
 * the Azure Files file adapter waits out SMB clients in `acquire` and `setMetadata`, as every Files
 * helper does, and then throws an `SmbConflictError`, which the engine does not read as "held".)
 *
 * @module
 */

/** The lease states the services report (`x-ms-lease-state`), lower-cased. */
export type LeaseState = "available" | "leased" | "expired" | "breaking" | "broken";

/** Whether a held lease has a fixed duration or none (`x-ms-lease-duration`). */
export type LeaseDurationType = "fixed" | "infinite";

/** What {@link Leasable.getProperties} reads: the lease state and the resource's metadata. */
export interface LeasableProperties {
  /** The lease state; `"available"` when the service did not report one. */
  readonly state: LeaseState;
  /** For a held lease, whether it is fixed or infinite. */
  readonly durationType: LeaseDurationType | undefined;
  /** The resource's metadata (names lower-cased by the service). */
  readonly metadata: Readonly<Record<string, string>>;
  /** The resource's ETag, when it has one. Leasing does not change it; writing metadata does. */
  readonly etag: string | undefined;
  /** When the resource was last modified, when known. */
  readonly lastModified: Date | undefined;
}

/** Per-request options for every {@link Leasable} method. */
export interface LeasableRequestOptions {
  /** Cancels the request. */
  readonly abortSignal?: AbortSignal;
}

/** Options for {@link Leasable.renew}. */
export interface LeasableRenewOptions extends LeasableRequestOptions {
  /**
   * The duration the lease was acquired with: 15-60 seconds, or -1 for infinite. The engine always
   * passes it; a leasable whose renewal has to re-acquire the lease (share leases, see
   * `shareLeasable`) needs it, the others ignore it.
   */
  readonly durationInSeconds?: number;
}

/** Options for {@link Leasable.setMetadata}. */
export interface LeasableMetadataWriteOptions extends LeasableRequestOptions {
  /**
   * Write only if the resource's ETag is still this one (else the service's 412 ConditionNotMet).
   * The engine passes it only to leasables with {@link Leasable.conditionalMetadataWrites}.
   */
  readonly ifMatch?: string;
}

/**
 * Something Azure Storage can lease: the port the lease lock engine runs over.
 *
 * @example
 * ```ts
 * import { BlobServiceClient } from "@azure/storage-blob";
 * import { blobLeasable, LeaseLock, type Leasable } from "azure-storage-concurrency/lease";
 *
 * const locks = BlobServiceClient.fromConnectionString(process.env.AZURE_STORAGE_CONNECTION_STRING!)
 *   .getContainerClient("locks");
 * const leasable: Leasable = blobLeasable(locks, "nightly-report");
 * const lock = new LeaseLock(leasable, { durationInSeconds: 15 });
 * ```
 */
export interface Leasable {
  /** What is leased, for messages and logs: e.g. `blob 'locks/nightly-report'`. */
  readonly description: string;

  /**
   * Identifies the leased resource across clients, e.g. its URL: the `acquire()` calls of one
   * process that wait for the same resource share their looks at it (one look per poll interval
   * for the process). Absent: each lock waits on its own.
   */
  readonly key?: string;

  /**
   * Whether the service offers finite leases (15-60 s). `false` for infinite-only leasables
   * (Azure Files file leases): the engine then only takes infinite leases on it.
   */
  readonly finiteDurations: boolean;

  /**
   * Acquires the lease with the engine's `proposedLeaseId`.
   * Resolves when the service granted it (also when that id already held it). Rejects with the
   * service's 409 when another id holds it, 404 when the resource does not exist.
   * @param durationInSeconds - 15 to 60, or -1 for infinite.
   */
  acquire(durationInSeconds: number, proposedLeaseId: string, options?: LeasableRequestOptions): Promise<void>;

  /**
   * Renews a finite lease, or checks that an infinite lease is still held by `leaseId` (see the
   * module's description). Rejects with 409/412 (or a `LeaseLostError`) when it is not.
   */
  renew(leaseId: string, options?: LeasableRenewOptions): Promise<void>;

  /** Releases the lease so that another client can acquire it at once. 409/412 when not held by `leaseId`. */
  release(leaseId: string, options?: LeasableRequestOptions): Promise<void>;

  /** Changes the id of the held lease from `leaseId` to `proposedLeaseId`. 409/412 when not held by `leaseId`. */
  change(leaseId: string, proposedLeaseId: string, options?: LeasableRequestOptions): Promise<void>;

  /**
   * Breaks the lease whoever holds it. With `breakPeriodInSeconds` 0 it is broken at once; with
   * more (up to 60) it stays locked until the period ends (or the lease would have expired, if
   * sooner); `undefined` lets the service choose (the rest of a finite lease, at once for infinite).
   * Resolves with the seconds until the lease is broken.
   */
  breakLease(breakPeriodInSeconds: number | undefined, options?: LeasableRequestOptions): Promise<number>;

  /** Reads the lease state and metadata (one HEAD request); `undefined` when the resource does not exist. */
  getProperties(options?: LeasableRequestOptions): Promise<LeasableProperties | undefined>;

  /**
   * Replaces the resource's metadata, under the lease held by `leaseId` (the write fails with
   * 409/412 when that lease does not hold it). Absent when the leasable cannot store metadata.
   * Resolves with the resource's new ETag when the service told it (blobs do): a lock that takes
   * the lease again then writes its next record `If-Match` it, without reading the record first.
   */
  setMetadata?(
    metadata: Readonly<Record<string, string>>,
    leaseId: string,
    options?: LeasableMetadataWriteOptions,
  ): Promise<void | {
    /** The resource's ETag after the write, when the service answered it. */
    readonly etag?: string;
  }>;

  /**
   * The longest `acquire` and `setMetadata` may wait out a conflict that is not another holder
   * before they fail (Azure Files: an SMB client holding the file). The engine gives those two calls
   * this much on top of its request time limit (`requestTimeoutInMs`), and, when it cancels them,
   * lets them settle with their own error. Absent: 0 (one request, no waiting).
   */
  readonly conflictWaitInMs?: number;

  /**
   * Whether `setMetadata` honours `ifMatch` (blobs do; containers do not). With it, a waiter that
   * read the lock's record just before acquiring writes the next record without reading it again
   * (leasing does not change the ETag, so the condition holds unless someone wrote in between).
   */
  readonly conditionalMetadataWrites?: boolean;

  /**
   * Creates the resource (and what it lives in) when missing, without races: creating something
   * that another client created meanwhile is not an error, and nothing existing is overwritten.
   * Absent when the library must not create it (a container lease guards the user's container).
   */
  createIfMissing?(options?: LeasableRequestOptions): Promise<void>;
}

/**
 * The service's `-1` for an infinite lease duration, as a leasable's `acquire` receives it.
 *
 * @example
 * ```ts
 * import { randomUUID } from "node:crypto";
 * import { blobLeasable, INFINITE_LEASE_SECONDS } from "azure-storage-concurrency/lease";
 *
 * // What LeaseLock does for an infinite lease, by hand:
 * await blobLeasable(container, "config-lock").acquire(INFINITE_LEASE_SECONDS, randomUUID());
 * ```
 */
export const INFINITE_LEASE_SECONDS = -1;

/**
 * Reads the SDKs' lease state strings (`"leased"`, …) into a {@link LeaseState}.
 */
export function toLeaseState(value: string | undefined): LeaseState {
  switch (value?.toLowerCase()) {
    case "leased":
    case "expired":
    case "breaking":
    case "broken":
      return value.toLowerCase() as LeaseState;
    default:
      return "available";
  }
}

/**
 * Reads the SDKs' lease duration strings into a {@link LeaseDurationType}.
 */
export function toLeaseDurationType(value: string | undefined): LeaseDurationType | undefined {
  const lower = value?.toLowerCase();
  return lower === "fixed" || lower === "infinite" ? lower : undefined;
}
