/**
 * The lease operations that blobs and containers share: both go through the SDK's
 * `BlobLeaseClient` (`getBlobLeaseClient(id)`), so the two adapters differ only in how they read
 * properties and write metadata.
 */
import { sdkTracing } from "../observability/scope.js";
import type { BlobClient, ContainerClient } from "@azure/storage-blob";
import { statusOf } from "../errors.js";
import {
  toLeaseDurationType,
  toLeaseState,
  type Leasable,
  type LeasableProperties,
  type LeasableRequestOptions,
} from "./leasable.js";

type LeaseOwner = Pick<BlobClient | ContainerClient, "getBlobLeaseClient">;

/** `acquire`, `renew`, `release`, `change` and `breakLease` over a blob's or container's lease client. */
export function sdkLeaseOperations(
  owner: LeaseOwner,
): Pick<Leasable, "acquire" | "renew" | "release" | "change" | "breakLease"> {
  const lease = (id?: string) => owner.getBlobLeaseClient(id);
  return {
    async acquire(durationInSeconds: number, proposedLeaseId: string, options: LeasableRequestOptions = {}) {
      await lease(proposedLeaseId).acquireLease(durationInSeconds, {
        abortSignal: options.abortSignal,
        tracingOptions: sdkTracing(),
      });
    },
    async renew(leaseId: string, options: LeasableRequestOptions = {}) {
      await lease(leaseId).renewLease({ abortSignal: options.abortSignal, tracingOptions: sdkTracing() });
    },
    async release(leaseId: string, options: LeasableRequestOptions = {}) {
      await lease(leaseId).releaseLease({ abortSignal: options.abortSignal, tracingOptions: sdkTracing() });
    },
    async change(leaseId: string, proposedLeaseId: string, options: LeasableRequestOptions = {}) {
      await lease(leaseId).changeLease(proposedLeaseId, {
        abortSignal: options.abortSignal,
        tracingOptions: sdkTracing(),
      });
    },
    async breakLease(breakPeriodInSeconds: number | undefined, options: LeasableRequestOptions = {}) {
      // `undefined` leaves out x-ms-lease-break-period: the service then breaks a finite lease when
      // it would have expired and an infinite one at once.
      const response = await lease().breakLease(breakPeriodInSeconds as number, {
        abortSignal: options.abortSignal,
        tracingOptions: sdkTracing(),
      });
      return response.leaseTime ?? 0;
    },
  };
}

/** What blob and container `getProperties` responses share. */
interface SdkProperties {
  leaseState?: string;
  leaseDuration?: string;
  metadata?: Record<string, string>;
  etag?: string;
  lastModified?: Date;
}

/** Runs a `getProperties` (a HEAD) and reads it as {@link LeasableProperties}; a 404 gives `undefined`. */
export async function readProperties(read: () => Promise<SdkProperties>): Promise<LeasableProperties | undefined> {
  let p: SdkProperties;
  try {
    p = await read();
  } catch (error) {
    if (statusOf(error) === 404) return undefined;
    throw error;
  }
  return {
    state: toLeaseState(p.leaseState),
    durationType: toLeaseDurationType(p.leaseDuration),
    metadata: p.metadata ?? {},
    etag: p.etag,
    lastModified: p.lastModified,
  };
}
