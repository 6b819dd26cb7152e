/**
 * A container's metadata as a versioned cell: the value is the metadata (names to strings).
 *
 * This cell works differently from the others, because the service offers no `If-Match` here:
 * Set Container Metadata accepts only `x-ms-lease-id` and `If-Modified-Since`
 * (https://learn.microsoft.com/rest/api/storageservices/set-container-metadata), and
 * @azure/storage-blob sends only those two (its `ContainerClient.setMetadata` refuses
 * `ifUnmodifiedSince`, "ignored by the blob service", and has no `ifMatch`). The source documents'
 * operation table marks the operation as accepting conditional headers, but that is the
 * modification-time condition, which cannot detect two writes within one second. An emulator may
 * accept headers the service ignores, so nothing here relies on one.
 *
 * So writers are serialised with a short container lease instead (15 s, the shortest the service
 * grants): acquire it, check under it that the ETag is still the one read (else a 412 conflict:
 * read again and retry), write with the lease id, release. Another writer holding the lease answers
 * 409 LeaseAlreadyPresent, which the engine treats as a conflict (wait, read again, retry).
 *
 * Limits, plainly:
 * - This protects writers that use this cell (or that take the container lease themselves). A plain
 *   `setMetadata` call elsewhere does not need the lease (a container lease only makes Delete
 *   exclusive) and is last-writer-wins against everything.
 * - A writer that dies holding the lease blocks the others until it expires (at most 15 s). A live
 *   writer holds it for a bounded time: every request it makes while taking, holding or giving back
 *   the lease has a client-side time limit (`requestTimeoutInMs`), which also cuts short the SDK's
 *   waits between its own retries, so that no writer sits on the lease while its SDK backs off; and
 *   a lease whose acquire got no clear answer (lost, 5xx, timed out) is released all the same, since
 *   the acquire may have been granted.
 * - The container lease is shared with anyone else who leases the container (for example to guard
 *   Delete). If you hold such a lease, pass its id as `leaseId`: writes then use it, no lease is
 *   taken, and no other writer can write at all while you hold it.
 * - A lease operation does not change the container's ETag (checked on Azurite; for blobs the
 *   source documents say so explicitly). Were that not so, writes would fail with conflicts rather
 *   than lose updates.
 */
import { sdkTracing } from "../observability/scope.js";
import { randomUUID } from "node:crypto";
import type { ContainerClient } from "@azure/storage-blob";
import { serviceCodeOf, statusOf, StorageConcurrencyError } from "../errors.js";
import { logger } from "../internal/logger.js";
import { checkNumber } from "../internal/validate.js";
import { backoffPresets } from "../retry/index.js";
import { retry } from "../retry/index.js";
import { OPTIMISTIC_LOG_KEY, WriteNotSent, type VersionedCell } from "./cell.js";
import { withTimeLimit } from "../internal/time-limit.js";
import { MAX_LOG_LENGTH } from "./write-log.js";
import { describeResource } from "../observability/resource.js";

/** Options for {@link containerMetadataCell}. */
export interface ContainerMetadataCellOptions {
  /**
   * A lease you hold on the container. Writes use it instead of taking a short lease of their own.
   */
  readonly leaseId?: string;
  /**
   * Client-side time limit on each request a write makes while it takes, holds or gives back the
   * container lease (acquire, the ETag check, Set Container Metadata, release), the SDK's retries
   * included. It bounds how long a writer holds the lease (at most about four times this, and
   * mostly once: one request that met a fault) and cuts short the SDK's waits between retries while
   * the lease is held, so that the other writers, who try for about 7 s with the default 20
   * attempts, are not starved. A write cut short is not lost: it is settled by reading back, or
   * tried again. Raise it on a slow link (a request that usually takes more than a few hundred ms).
   * @default 1_000
   */
  readonly requestTimeoutInMs?: number;
}

type Metadata = Record<string, string>;

/** The service's limit on a container's metadata, names and values together (8 KiB). */
const MAX_METADATA_BYTES = 8 * 1024;
const LEASE_DURATION_IN_SECONDS = 15;
const METADATA_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const HEADER_SAFE_VALUE = /^[\x20-\x7e]*$/;

/**
 * A container's metadata. See the module notes: writes are serialised by a 15-second container
 * lease, since the service has no `If-Match` for Set Container Metadata. Names are stored lower-case
 * (the service treats them case-insensitively); `asc_optimistic` is reserved.
 *
 * @example
 * ```ts
 * import { containerMetadataCell, optimisticUpdate } from "azure-storage-concurrency/optimistic";
 *
 * const settings = containerMetadataCell(blobServiceClient.getContainerClient("tenant-42"));
 * await optimisticUpdate(settings, (current) => ({ ...current, plan: "premium" }));
 * ```
 */
export function containerMetadataCell(
  container: ContainerClient,
  options: ContainerMetadataCellOptions = {},
): VersionedCell<Record<string, string>, Record<string, string>> {
  if (typeof container?.getProperties !== "function" || typeof container.setMetadata !== "function") {
    throw new TypeError("`container` must be a ContainerClient from @azure/storage-blob.");
  }
  if (options.leaseId !== undefined && (typeof options.leaseId !== "string" || !options.leaseId)) {
    throw new TypeError("`leaseId` must be a non-empty string.");
  }
  const description = `metadata of container '${container.containerName}'`;
  const requestTimeoutInMs = checkNumber("requestTimeoutInMs", options.requestTimeoutInMs ?? 1_000, { min: 1 });
  const withLog = (content: Metadata, log: string) => ({ ...content, [OPTIMISTIC_LOG_KEY]: log });

  return describeResource(
    {
      key: `container-metadata|${container.url.split("?")[0]}`,
      description,

      async read({ abortSignal }) {
        let properties;
        try {
          properties = await container.getProperties({ abortSignal, tracingOptions: sdkTracing() });
        } catch (error) {
          if (statusOf(error) === 404 && serviceCodeOf(error) === "ContainerNotFound") return undefined;
          throw error;
        }
        const { [OPTIMISTIC_LOG_KEY]: log, ...content } = properties.metadata ?? {};
        return { content, etag: properties.etag!, log };
      },

      async write(content, { abortSignal, condition, log }) {
        const metadata = withLog(content, log);
        if ("ifNoneMatch" in condition)
          return (await container.create({ abortSignal, metadata, tracingOptions: sdkTracing() })).etag!;
        if ("lastWriterWins" in condition) {
          const conditions = options.leaseId ? { leaseId: options.leaseId } : {};
          try {
            return (await container.setMetadata(metadata, { abortSignal, conditions, tracingOptions: sdkTracing() }))
              .etag!;
          } catch (error) {
            if (condition.mustExist || statusOf(error) !== 404) throw error;
            return (await container.create({ abortSignal, metadata, tracingOptions: sdkTracing() })).etag!;
          }
        }
        return writeUnderLease(container, metadata, condition.ifMatch, {
          heldLeaseId: options.leaseId,
          abortSignal,
          description,
          requestTimeoutInMs,
        });
      },

      decode: (content) => ({ ...content }),

      encode(value) {
        if (typeof value !== "object" || value === null || Array.isArray(value)) {
          throw new TypeError(`The value for ${description} must be an object of metadata names to strings.`);
        }
        const metadata: Metadata = {};
        let bytes = OPTIMISTIC_LOG_KEY.length + MAX_LOG_LENGTH;
        for (const [name, text] of Object.entries(value)) {
          const lower = name.toLowerCase();
          if (!METADATA_NAME.test(name))
            throw new TypeError(
              `Metadata name \`${name}\` is not allowed: names must be C# identifiers (letters, digits, _).`,
            );
          if (lower === OPTIMISTIC_LOG_KEY)
            throw new TypeError(`Metadata name \`${name}\` is reserved for the optimistic write history.`);
          if (lower in metadata)
            throw new TypeError(
              `Metadata names \`${name}\` and another differ only in case; the service would keep one.`,
            );
          if (typeof text !== "string")
            throw new TypeError(`Metadata \`${name}\` must be a string, got ${typeof text}.`);
          if (!HEADER_SAFE_VALUE.test(text))
            throw new TypeError(
              `Metadata \`${name}\` holds characters a header cannot carry: use printable ASCII (encode other text, e.g. with encodeURIComponent).`,
            );
          metadata[lower] = text;
          bytes += lower.length + text.length;
        }
        if (bytes > MAX_METADATA_BYTES) {
          throw new RangeError(
            `The metadata for ${description} takes ${bytes} bytes with the write history; the service allows 8 KiB.`,
          );
        }
        return metadata;
      },
    },
    { kind: "container_metadata", container: container.containerName, url: container.url },
  );
}

/**
 * Acquire a 15 s lease, check under it that the ETag is still the one read, write with the lease id,
 * release. Throws `WriteNotSent` when it fails before Set Container Metadata was sent.
 */
async function writeUnderLease(
  container: ContainerClient,
  metadata: Metadata,
  expectedEtag: string,
  options: {
    readonly heldLeaseId: string | undefined;
    readonly abortSignal: AbortSignal | undefined;
    readonly description: string;
    readonly requestTimeoutInMs: number;
  },
): Promise<string> {
  const { heldLeaseId, abortSignal, description, requestTimeoutInMs } = options;
  const leaseId = heldLeaseId ?? randomUUID();
  const lease = container.getBlobLeaseClient(leaseId);
  const limited = <T>(what: string, request: (signal: AbortSignal) => Promise<T>, signal = abortSignal) =>
    withTimeLimit(`${what} (${description})`, requestTimeoutInMs, signal, request);
  let mayHoldLease = false;
  try {
    if (!heldLeaseId) {
      try {
        await limited("acquire the container lease", (signal) =>
          lease.acquireLease(LEASE_DURATION_IN_SECONDS, { abortSignal: signal, tracingOptions: sdkTracing() }),
        );
        mayHoldLease = true;
      } catch (error) {
        // A refusal (409 LeaseAlreadyPresent: another writer is writing, a conflict) leaves no lease;
        // an acquire without a clear answer (lost, 5xx, timed out, cancelled) may have been granted.
        // (A resend of a granted acquire with the same proposed id is granted again, not refused, so
        // a refusal is never ours.)
        const status = statusOf(error);
        mayHoldLease = status === undefined || status >= 500;
        throw new WriteNotSent(error);
      }
    }
    let etag: string | undefined;
    try {
      etag = (
        await limited("read the container's ETag", (signal) =>
          container.getProperties({ abortSignal: signal, tracingOptions: sdkTracing() }),
        )
      ).etag;
    } catch (error) {
      throw new WriteNotSent(error);
    }
    if (etag !== expectedEtag) throw new WriteNotSent(conditionNotMet(description, expectedEtag, etag));
    const write = (signal: AbortSignal | undefined) =>
      container.setMetadata(metadata, { abortSignal: signal, conditions: { leaseId }, tracingOptions: sdkTracing() });
    try {
      // Under a lease of our own, the write too is held to the time limit; under yours, only your signal.
      return (heldLeaseId ? await write(abortSignal) : await limited("set the metadata", write)).etag!;
    } catch (error) {
      // Our lease expired (a very slow write): another writer may have written since. A conflict.
      if (statusOf(error) === 412) throw conditionNotMet(description, expectedEtag, undefined, error);
      throw error;
    }
  } finally {
    // Released even when the acquire's answer was lost (releasing a lease we do not hold fails
    // harmlessly), and tried again on a transient failure, so that no writer (this one's next write
    // included) waits for it to expire; never with the caller's signal, so that a cancelled update
    // frees the container.
    if (mayHoldLease) {
      const release = () =>
        limited(
          "release the container lease",
          (signal) => lease.releaseLease({ abortSignal: signal, tracingOptions: sdkTracing() }),
          undefined,
        );
      await retry(release, {
        maxRetries: 2,
        backoff: backoffPresets.contention,
        operationName: `release the lease on ${description}`,
      }).catch((error: unknown) => {
        if (statusOf(error) !== 409)
          logger.warning(
            `could not release the lease on ${description}; it expires within ${LEASE_DURATION_IN_SECONDS} s`,
          );
      });
    }
  }
}

function conditionNotMet(
  description: string,
  expected: string,
  found: string | undefined,
  cause?: unknown,
): StorageConcurrencyError {
  return new StorageConcurrencyError(
    `${description} changed since it was read (ETag ${expected}${found ? `, now ${found}` : ""}).`,
    { code: "ConditionNotMet", statusCode: 412, serviceCode: "ConditionNotMet", cause },
  );
}
