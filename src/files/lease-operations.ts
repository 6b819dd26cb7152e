/**
 * The lease operations that file and share leases share: both go through the SDK's
 * `ShareLeaseClient` (`getShareLeaseClient(id)`), and release and change are the same calls for both.
 */
import type { ShareClient, ShareFileClient } from "@azure/storage-file-share";
import type { Leasable, LeasableRequestOptions } from "../lease/leasable.js";

type ShareLeaseOwner = Pick<ShareClient | ShareFileClient, "getShareLeaseClient">;

/** `release` and `change` over a file's or share's lease client. */
export function shareLeaseOperations(owner: ShareLeaseOwner): Pick<Leasable, "release" | "change"> {
  return {
    async release(leaseId: string, options: LeasableRequestOptions = {}) {
      await owner.getShareLeaseClient(leaseId).releaseLease({ abortSignal: options.abortSignal });
    },
    async change(leaseId: string, proposedLeaseId: string, options: LeasableRequestOptions = {}) {
      await owner.getShareLeaseClient(leaseId).changeLease(proposedLeaseId, { abortSignal: options.abortSignal });
    },
  };
}
