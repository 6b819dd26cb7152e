/**
 * The blob adapter of the leasable port: a lock blob in a container. Thin: one SDK call per method.
 */
import { sdkTracing } from "../observability/scope.js";
import type { ContainerClient } from "@azure/storage-blob";
import { statusOf } from "../errors.js";
import { type Leasable, type LeasableMetadataWriteOptions, type LeasableRequestOptions } from "./leasable.js";
import { sdkLeaseOperations, readProperties } from "./lease-client.js";
import { checkLockBlobName } from "./lock-name.js";
import { LeaseLock } from "./lock.js";
import type { LeaseLockOptions } from "./options.js";
import { describeResource } from "../observability/resource.js";

/**
 * The blob `blobName` in `container` as a {@link Leasable}. When missing, the blob (an empty block
 * blob) and its container are created on first use, without races: a create that finds it already
 * there is fine, and nothing existing is overwritten (`If-None-Match: *`). The library never
 * deletes it, so its metadata (last holder, fencing token) outlives every lock.
 *
 * A name that the URL or the service would rewrite into another blob's name (`"./dot"`,
 * `"dir/../x"`, `"a\\b"`, a trailing `.` or `/`) is refused with a `TypeError` naming the rule,
 * because two such names would share one lease and one fencing counter.
 *
 * @example
 * ```ts
 * import { BlobServiceClient } from "@azure/storage-blob";
 * import { blobLeasable, LeaseLock } from "azure-storage-concurrency/lease";
 *
 * const container = BlobServiceClient.fromConnectionString(process.env.AZURE_STORAGE_CONNECTION_STRING!)
 *   .getContainerClient("locks");
 * const lock = new LeaseLock(blobLeasable(container, "nightly-report"));
 * ```
 */
export function blobLeasable(container: ContainerClient, blobName: string): Leasable {
  checkLockBlobName("blobName", blobName);
  const blob = container.getBlockBlobClient(blobName);
  return describeResource(
    {
      description: `blob '${container.containerName}/${blobName}'`,
      key: blob.url,
      finiteDurations: true,
      ...sdkLeaseOperations(blob),
      getProperties: (options: LeasableRequestOptions = {}) =>
        readProperties(() => blob.getProperties({ abortSignal: options.abortSignal, tracingOptions: sdkTracing() })),
      conditionalMetadataWrites: true,
      async setMetadata(metadata, leaseId, options: LeasableMetadataWriteOptions = {}) {
        const { etag } = await blob.setMetadata(
          { ...metadata },
          {
            conditions: { leaseId, ...(options.ifMatch === undefined ? {} : { ifMatch: options.ifMatch }) },
            abortSignal: options.abortSignal,
            tracingOptions: sdkTracing(),
          },
        );
        return { etag };
      },
      async createIfMissing(options: LeasableRequestOptions = {}) {
        const create = () =>
          blob
            .upload("", 0, {
              conditions: { ifNoneMatch: "*" },
              abortSignal: options.abortSignal,
              tracingOptions: sdkTracing(),
            })
            .then(
              () => undefined,
              (error: unknown) => {
                // 409 BlobAlreadyExists, or 412 when it exists (and may be leased): someone else made it.
                const status = statusOf(error);
                if (status !== 409 && status !== 412) throw error;
              },
            );
        try {
          await create();
        } catch (error) {
          if (statusOf(error) !== 404) throw error;
          await container.createIfNotExists({ abortSignal: options.abortSignal, tracingOptions: sdkTracing() });
          await create();
        }
      },
    },
    { kind: "blob", container: container.containerName, name: blobName, url: container.url },
  );
}

/**
 * A lock on the blob `blobName` in `container`: `new LeaseLock(blobLeasable(container, blobName), options)`.
 * The blob and its container are created when missing (unless `createIfMissing: false`).
 *
 * @example
 * ```ts
 * import { BlobServiceClient } from "@azure/storage-blob";
 * import { blobLock } from "azure-storage-concurrency/lease";
 *
 * const container = BlobServiceClient.fromConnectionString(process.env.AZURE_STORAGE_CONNECTION_STRING!)
 *   .getContainerClient("locks");
 * await blobLock(container, "nightly-report").withLock(async (handle) => {
 *   console.log(`running with fencing token ${handle.fencingToken}`);
 * });
 * ```
 */
export function blobLock(container: ContainerClient, blobName: string, options?: LeaseLockOptions): LeaseLock {
  return new LeaseLock(blobLeasable(container, blobName), options);
}
