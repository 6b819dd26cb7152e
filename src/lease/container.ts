/**
 * The container adapter of the leasable port. A container lease makes only Delete exclusive on the
 * service; everything else is exclusive only among clients that take the lock (see
 * docs/lease-locks.md). The library never creates the container: it is the user's.
 */
import { sdkTracing } from "../observability/scope.js";
import type { ContainerClient } from "@azure/storage-blob";
import type { Leasable, LeasableRequestOptions } from "./leasable.js";
import { sdkLeaseOperations, readProperties } from "./lease-client.js";
import { LeaseLock } from "./lock.js";
import type { LeaseLockOptions } from "./options.js";
import { describeResource } from "../observability/resource.js";

/**
 * `container` as a {@link Leasable}: its own lease, for example to make deleting it exclusive.
 *
 * @example
 * ```ts
 * import { BlobServiceClient } from "@azure/storage-blob";
 * import { containerLeasable, LeaseLock } from "azure-storage-concurrency/lease";
 *
 * const container = BlobServiceClient.fromConnectionString(process.env.AZURE_STORAGE_CONNECTION_STRING!)
 *   .getContainerClient("reports-2024");
 * const lock = new LeaseLock(containerLeasable(container));
 * ```
 */
export function containerLeasable(container: ContainerClient): Leasable {
  return describeResource(
    {
      description: `container '${container.containerName}'`,
      key: container.url,
      finiteDurations: true,
      ...sdkLeaseOperations(container),
      getProperties: (options: LeasableRequestOptions = {}) =>
        readProperties(() =>
          container.getProperties({ abortSignal: options.abortSignal, tracingOptions: sdkTracing() }),
        ),
      async setMetadata(metadata, leaseId, options: LeasableRequestOptions = {}) {
        await container.setMetadata(
          { ...metadata },
          { conditions: { leaseId }, abortSignal: options.abortSignal, tracingOptions: sdkTracing() },
        );
      },
    },
    { kind: "container", container: container.containerName, url: container.url },
  );
}

/**
 * A lock on `container`'s own lease: `new LeaseLock(containerLeasable(container), options)`.
 * While held, nobody can delete the container without the lease id. The container must exist.
 *
 * @example
 * ```ts
 * import { BlobServiceClient } from "@azure/storage-blob";
 * import { containerLock } from "azure-storage-concurrency/lease";
 *
 * const container = BlobServiceClient.fromConnectionString(process.env.AZURE_STORAGE_CONNECTION_STRING!)
 *   .getContainerClient("reports-2024");
 * await containerLock(container).withLock(async (handle) => {
 *   await container.delete({ conditions: { leaseId: handle.leaseId } });
 * });
 * ```
 */
export function containerLock(container: ContainerClient, options?: LeaseLockOptions): LeaseLock {
  return new LeaseLock(containerLeasable(container), options);
}
