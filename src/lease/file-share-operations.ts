/**
 * The lease operations that file and share leases share: both go through the SDK's
 * `ShareLeaseClient` (`getShareLeaseClient(id)`), and release and change are the same calls for both.
 *
 * A release is a request the lock makes on its own (at the end of `withLock`, on dispose, after a
 * failed acquire), and a file lease that is not released stays held for ever: so each attempt has a
 * client-side time limit, and a release whose answer was lost is sent again (a release of a lease
 * that is no longer this id's answers 409, which the lock reads as "nothing left to release").
 */
import { sdkTracing } from "../observability/scope.js";
import type { ShareClient, ShareFileClient } from "@azure/storage-file-share";
import type { Leasable, LeasableRequestOptions } from "./leasable.js";
import { ownRequest } from "../files/internal.js";

type ShareLeaseOwner = Pick<ShareClient | ShareFileClient, "getShareLeaseClient">;

/** `release` and `change` over a file's or share's lease client. */
export function shareLeaseOperations(
  owner: ShareLeaseOwner,
  description: string,
  attemptTimeoutInMs: number | undefined,
): Pick<Leasable, "release" | "change"> {
  return {
    async release(leaseId: string, options: LeasableRequestOptions = {}) {
      await ownRequest(
        `release the lease on ${description}`,
        (abortSignal) => owner.getShareLeaseClient(leaseId).releaseLease({ abortSignal, tracingOptions: sdkTracing() }),
        { abortSignal: options.abortSignal, attemptTimeoutInMs },
      );
    },
    async change(leaseId: string, proposedLeaseId: string, options: LeasableRequestOptions = {}) {
      await owner
        .getShareLeaseClient(leaseId)
        .changeLease(proposedLeaseId, { abortSignal: options.abortSignal, tracingOptions: sdkTracing() });
    },
  };
}
