/**
 * The share adapter of the leasable port: Azure Files' share leases in the lease lock engine.
 *
 * A share lease (Lease Share, https://learn.microsoft.com/rest/api/storageservices/lease-share)
 * lasts 15-60 s or is infinite, like a container's. The page calls it "a lock on a share for delete
 * operations", but the service guards more with it: without the lease id it refuses Delete Share and
 * the share's own writes, Set Share Metadata and Set Share Properties (412 LeaseIdMissing; a wrong id
 * 412 LeaseIdMismatchWithContainerOperation, as the SDK's recordings of the service show and
 * tests/integration/files/conformance.test.ts replays). Files and directories in the share are not
 * guarded. So the adapter names the lease id on every share write it makes (the lock's record, the
 * renewal's check), and code that sets the share's metadata or properties while the lock is held
 * must pass `leaseAccessConditions: { leaseId: handle.leaseId }` too. Everything else is exclusive
 * only among clients that take the lock. The library never creates the share: it is the user's.
 *
 * Renewal: `ShareLeaseClient.renewLease()` of `@azure/storage-file-share` 12.33 throws a RangeError
 * for shares before sending anything (its "is this a file?" test is inverted; pinned by a test in
 * tests/integration/files/responder.test.ts). The adapter calls it first, so a fixed SDK is used as
 * it is; on that RangeError it renews in two requests instead:
 * 1. Get Share Properties with `x-ms-lease-id`, which the service refuses (412) unless that lease is
 *    the share's active lease: a lease that was broken, released or changed is noticed here. A lease
 *    being broken (state "breaking") still counts as active there, so the state it reports is read
 *    too: anything but "leased" means the lock is being taken away (a real renew fails then as well);
 * 2. for a finite lease, Acquire with the same lease id and duration, which the service grants to
 *    the active lease's id ("If the file share has an active lease, you can only request a new lease
 *    using the active lease ID", lease-share) and which restarts the lease's clock.
 * Why not the acquire alone: a lease that was broken at once is "broken", and a broken lease can be
 * acquired by anyone, this id included, so the acquire alone would silently take back a lock that an
 * operator broke, even after another client held and released it in between. Step 1 catches that,
 * except in the moment between the two requests. For an infinite lease step 1 is the whole check.
 */
import { sdkTracing } from "../observability/scope.js";
import type { ShareClient } from "@azure/storage-file-share";
import { statusOf } from "../errors.js";
import { LeaseLostError } from "./errors.js";
import {
  INFINITE_LEASE_SECONDS,
  toLeaseState,
  type Leasable,
  type LeasableRenewOptions,
  type LeasableRequestOptions,
} from "./leasable.js";
import { readProperties } from "./lease-client.js";
import { LeaseLock } from "./lock.js";
import type { LeaseLockOptions } from "./options.js";
import { checkNumber } from "../internal/validate.js";
import { shareLeaseOperations } from "./file-share-operations.js";
import { ownRequest } from "../files/internal.js";
import { describeResource } from "../observability/resource.js";

/** Options for {@link shareLeasable}. */
export interface ShareLeasableOptions {
  /**
   * The client-side time limit of each attempt of the requests the lock makes on its own: lease
   * releases (up to 3 attempts) and renewals, in milliseconds.
   * @default 10000
   */
  readonly attemptTimeoutInMs?: number;
}

/** Options for {@link shareLock}: the lock's options and the {@link ShareLeasableOptions}. */
export interface ShareLockOptions extends LeaseLockOptions, ShareLeasableOptions {}

/**
 * `shareClient`'s share lease as a {@link Leasable}: 15-60 s or infinite leases, break periods,
 * and the lock's record in the share's metadata.
 *
 * @example
 * ```ts
 * import { ShareServiceClient } from "@azure/storage-file-share";
 * import { LeaseLock, shareLeasable } from "azure-storage-concurrency/lease";
 *
 * const share = ShareServiceClient.fromConnectionString(process.env.AZURE_STORAGE_CONNECTION_STRING!)
 *   .getShareClient("reports-2024");
 * const lock = new LeaseLock(shareLeasable(share), { durationInSeconds: 30 });
 * ```
 */
export function shareLeasable(shareClient: ShareClient, options: ShareLeasableOptions = {}): Leasable {
  if (typeof shareClient?.getShareLeaseClient !== "function" || typeof shareClient.name !== "string") {
    throw new TypeError("`shareClient` must be a ShareClient (from @azure/storage-file-share).");
  }
  const { attemptTimeoutInMs } = options;
  if (attemptTimeoutInMs !== undefined) checkNumber("attemptTimeoutInMs", attemptTimeoutInMs, { min: 1 });
  const lease = (id?: string) => shareClient.getShareLeaseClient(id);
  const description = `share '${shareClient.name}'`;
  // A renewal's requests: one time-limited attempt each (the lock schedules the next renewal itself).
  const once = <T>(what: string, request: (abortSignal: AbortSignal) => Promise<T>, abortSignal?: AbortSignal) =>
    ownRequest(`${what} ${description}`, request, { abortSignal, attemptTimeoutInMs, attempts: 1 });
  return describeResource(
    {
      description,
      finiteDurations: true,
      async acquire(durationInSeconds: number, proposedLeaseId: string, options: LeasableRequestOptions = {}) {
        await lease(proposedLeaseId).acquireLease(durationInSeconds, {
          abortSignal: options.abortSignal,
          tracingOptions: sdkTracing(),
        });
      },
      async renew(leaseId: string, options: LeasableRenewOptions = {}) {
        const { abortSignal, durationInSeconds } = options;
        try {
          await once(
            "renew the lease on",
            (signal) => lease(leaseId).renewLease({ abortSignal: signal, tracingOptions: sdkTracing() }),
            abortSignal,
          );
          return;
        } catch (error) {
          if (!isSdkShareRenewDefect(error)) throw error;
        }
        if (durationInSeconds === undefined) {
          throw new TypeError(
            `Renewing the lease on ${description} needs \`durationInSeconds\` (the duration it was acquired with).`,
          );
        }
        const { leaseState } = await once(
          "check the lease on",
          (signal) =>
            shareClient.getProperties({
              abortSignal: signal,
              leaseAccessConditions: { leaseId },
              tracingOptions: sdkTracing(),
            }),
          abortSignal,
        );
        const state = toLeaseState(leaseState);
        if (state !== "leased") {
          throw new LeaseLostError(`The lease on ${description} is ${state}: someone is breaking it.`, {
            reason: "lease-gone",
            leaseId,
          });
        }
        if (durationInSeconds !== INFINITE_LEASE_SECONDS) {
          await once(
            "renew the lease on",
            (signal) =>
              lease(leaseId).acquireLease(durationInSeconds, { abortSignal: signal, tracingOptions: sdkTracing() }),
            abortSignal,
          );
        }
      },
      ...shareLeaseOperations(shareClient, description, attemptTimeoutInMs),
      async breakLease(breakPeriodInSeconds: number | undefined, options: LeasableRequestOptions = {}) {
        // The SDK passes `breakPeriod` on as x-ms-lease-break-period (its generated share operations
        // read it), though `LeaseOperationOptions` does not declare it. Left out, the service breaks a
        // finite lease when it would have expired and an infinite one at once.
        const request = {
          abortSignal: options.abortSignal,
          tracingOptions: sdkTracing(),
          ...(breakPeriodInSeconds === undefined ? {} : { breakPeriod: breakPeriodInSeconds }),
        };
        const response = await lease().breakLease(request);
        return response.leaseTimeInSeconds ?? 0;
      },
      getProperties: (options: LeasableRequestOptions = {}) =>
        readProperties(() =>
          shareClient.getProperties({ abortSignal: options.abortSignal, tracingOptions: sdkTracing() }),
        ),
      // Set Share Metadata needs the lease id on a leased share (412 LeaseIdMissing without it) and
      // takes no If-Match.
      conditionalMetadataWrites: false,
      async setMetadata(metadata, leaseId, options: LeasableRequestOptions = {}) {
        await shareClient.setMetadata(
          { ...metadata },
          { leaseAccessConditions: { leaseId }, abortSignal: options.abortSignal, tracingOptions: sdkTracing() },
        );
      },
    },
    { kind: "share", container: shareClient.name, url: shareClient.url },
  );
}

/** The SDK's client-side refusal to renew a share lease (a RangeError, no request sent, no status). */
function isSdkShareRenewDefect(error: unknown): boolean {
  return (error as Error | undefined)?.name === "RangeError" && statusOf(error) === undefined;
}

/**
 * A lock on a share through its share lease: `new LeaseLock(shareLeasable(shareClient), options)`.
 * While held, nobody can delete the share, or set its metadata or properties, without the lease id
 * (412 LeaseIdMissing); everything else, files and directories included, is exclusive only among
 * clients that take this lock. The share must exist.
 *
 * @example
 * ```ts
 * import { ShareServiceClient } from "@azure/storage-file-share";
 * import { shareLock } from "azure-storage-concurrency/lease";
 *
 * const share = ShareServiceClient.fromConnectionString(process.env.AZURE_STORAGE_CONNECTION_STRING!)
 *   .getShareClient("reports-2024");
 * await shareLock(share, { durationInSeconds: 30 }).withLock(async (handle) => {
 *   // Share writes under the lock name its lease id, or the service refuses them (412 LeaseIdMissing).
 *   await share.setProperties({ quotaInGB: 100, leaseAccessConditions: { leaseId: handle.leaseId } });
 *   await share.delete({ leaseAccessConditions: { leaseId: handle.leaseId } });
 * });
 * ```
 */
export function shareLock(shareClient: ShareClient, options: ShareLockOptions = {}): LeaseLock {
  if (typeof options !== "object" || options === null) throw new TypeError("`options` must be an object.");
  const { attemptTimeoutInMs, ...lockOptions } = options;
  return new LeaseLock(
    shareLeasable(shareClient, attemptTimeoutInMs === undefined ? {} : { attemptTimeoutInMs }),
    lockOptions,
  );
}
