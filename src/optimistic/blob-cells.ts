/**
 * Block blobs as versioned cells: the whole blob is the value, as bytes, UTF-8 text or JSON.
 *
 * Read is one Get Blob (its ETag and metadata come with the content); a write is one Put Blob with
 * `If-Match` (or `If-None-Match: *` to create), which replaces content and metadata together, so
 * the write history travels in the blob's metadata under {@link OPTIMISTIC_LOG_KEY} in the same
 * request. Other metadata and the content headers (type, encoding, cache control, ...) are carried
 * over from the version read.
 *
 * Service behaviour relied on (operation table of "Managing Concurrency in Microsoft Azure
 * Storage"; https://learn.microsoft.com/rest/api/storageservices/specifying-conditional-headers-for-blob-service-operations):
 * Put Blob honours If-Match and If-None-Match (412 ConditionNotMet; 409 BlobAlreadyExists for
 * `If-None-Match: *`); Get Blob with If-None-Match answers 304, which @azure/storage-blob raises
 * as a RestError with statusCode 304 (checked against Azurite).
 */
import { sdkTracing } from "../observability/scope.js";
import { isUtf8 } from "node:buffer";
import type { BlobHTTPHeaders, BlockBlobClient } from "@azure/storage-blob";
import { serviceCodeOf, statusOf } from "../errors.js";
import { readStream } from "../internal/stream.js";
import { countSends, NOT_MODIFIED, OPTIMISTIC_LOG_KEY, type CellVersion, type VersionedCell } from "./cell.js";
import { CellContentError } from "./errors.js";
import { describeError } from "../internal/describe-error.js";
import { describeResource } from "../observability/resource.js";

/** Options for the blob cells. */
export interface BlobCellOptions {
  /**
   * Send this lease id with every write, for a blob you hold a lease on (writes to a leased blob
   * without it fail with 412 LeaseIdMissing).
   */
  readonly leaseId?: string;
  /**
   * Content type of a blob the cell creates (an existing blob keeps its own).
   * @default "application/octet-stream", "text/plain; charset=utf-8" or "application/json; charset=utf-8"
   */
  readonly contentType?: string;
}

interface BlobExtras {
  readonly metadata: Readonly<Record<string, string>>;
  readonly headers: BlobHTTPHeaders;
}

interface Codec<T> {
  readonly kind: string;
  readonly contentType: string;
  decode(bytes: Buffer, cell: string): T;
  encode(value: T, cell: string): Buffer;
}

/**
 * A block blob whose value is its bytes.
 *
 * @example
 * ```ts
 * import { blobBytesCell, optimisticUpdate } from "azure-storage-concurrency/optimistic";
 *
 * const bitmap = blobBytesCell(container.getBlockBlobClient("seats.bin"));
 * await optimisticUpdate(bitmap, (current) => {
 *   const seats = Buffer.from(current ?? new Uint8Array(64));
 *   seats[12] = 1;
 *   return seats;
 * });
 * ```
 */
export function blobBytesCell(blob: BlockBlobClient, options: BlobCellOptions = {}): VersionedCell<Uint8Array, Buffer> {
  return blobCell(blob, options, {
    kind: "bytes",
    contentType: "application/octet-stream",
    decode: (bytes) => Buffer.from(bytes),
    encode(value, cell) {
      if (!(value instanceof Uint8Array))
        throw new TypeError(`The value for ${cell} must be a Uint8Array or Buffer, got ${typeof value}.`);
      return Buffer.from(value);
    },
  });
}

/**
 * A block blob whose value is its content as UTF-8 text. Content that is not valid UTF-8 is
 * refused with a {@link CellContentError} rather than written back damaged.
 *
 * @example
 * ```ts
 * import { blobTextCell, optimisticUpdate } from "azure-storage-concurrency/optimistic";
 *
 * const notes = blobTextCell(container.getBlockBlobClient("notes.txt"));
 * await optimisticUpdate(notes, (current) => `${current ?? ""}- call Ada\n`);
 * ```
 */
export function blobTextCell(blob: BlockBlobClient, options: BlobCellOptions = {}): VersionedCell<string, Buffer> {
  return blobCell(blob, options, {
    kind: "text",
    contentType: "text/plain; charset=utf-8",
    decode: (bytes, cell) => decodeUtf8(bytes, cell),
    encode(value, cell) {
      if (typeof value !== "string")
        throw new TypeError(`The value for ${cell} must be a string, got ${typeof value}.`);
      return Buffer.from(value, "utf8");
    },
  });
}

/**
 * A block blob holding one JSON document. A blob that does not parse is refused with a
 * {@link CellContentError} naming the blob, and nothing is written.
 *
 * @example
 * ```ts
 * import { blobJsonCell, optimisticUpdate } from "azure-storage-concurrency/optimistic";
 *
 * const counter = blobJsonCell<{ visits: number }>(container.getBlockBlobClient("visits.json"));
 * const { value } = await optimisticUpdate(counter, (current) => ({ visits: (current?.visits ?? 0) + 1 }));
 * ```
 */
export function blobJsonCell<T = unknown>(
  blob: BlockBlobClient,
  options: BlobCellOptions = {},
): VersionedCell<T, Buffer> {
  return blobCell<T>(blob, options, {
    kind: "json",
    contentType: "application/json; charset=utf-8",
    decode(bytes, cell) {
      const text = decodeUtf8(bytes, cell, "InvalidJson");
      try {
        return JSON.parse(text) as T;
      } catch (error) {
        throw new CellContentError(cell, "InvalidJson", describeError(error), error);
      }
    },
    encode(value, cell) {
      let text: string | undefined;
      try {
        text = JSON.stringify(value);
      } catch (error) {
        throw new TypeError(`The value for ${cell} cannot be written as JSON: ${describeError(error)}.`, {
          cause: error,
        });
      }
      if (text === undefined)
        throw new TypeError(`The value for ${cell} cannot be written as JSON (got ${typeof value}).`);
      return Buffer.from(text, "utf8");
    },
  });
}

function blobCell<T>(blob: BlockBlobClient, options: BlobCellOptions, codec: Codec<T>): VersionedCell<T, Buffer> {
  if (typeof blob?.download !== "function" || typeof blob.upload !== "function") {
    throw new TypeError("`blob` must be a BlockBlobClient (for example `containerClient.getBlockBlobClient(name)`).");
  }
  if (options.leaseId !== undefined && (typeof options.leaseId !== "string" || !options.leaseId)) {
    throw new TypeError("`leaseId` must be a non-empty string.");
  }
  const description = `blob '${blob.containerName}/${blob.name}'`;
  const contentType = options.contentType ?? codec.contentType;
  return describeResource(
    {
      key: `blob-${codec.kind}|${blob.url.split("?")[0]}`,
      description,

      async read({ abortSignal, ifNoneMatch }) {
        let response;
        try {
          response = await blob.download(0, undefined, {
            abortSignal,
            tracingOptions: sdkTracing(),
            ...(ifNoneMatch ? { conditions: { ifNoneMatch } } : {}),
          });
        } catch (error) {
          if (statusOf(error) === 304) return NOT_MODIFIED;
          if (statusOf(error) === 404 && serviceCodeOf(error) === "BlobNotFound") return undefined;
          throw error;
        }
        const content = await readStream(response.readableStreamBody);
        const { [OPTIMISTIC_LOG_KEY]: log, ...metadata } = response.metadata ?? {};
        const headers: BlobHTTPHeaders = {
          blobContentType: response.contentType,
          blobContentEncoding: response.contentEncoding,
          blobContentLanguage: response.contentLanguage,
          blobContentDisposition: response.contentDisposition,
          blobCacheControl: response.cacheControl,
        };
        const version: CellVersion<Buffer> = {
          content,
          etag: response.etag!,
          log,
          extras: { metadata, headers } satisfies BlobExtras,
        };
        return version;
      },

      async write(content, { abortSignal, condition, log, base, onSend }) {
        const extras = base?.extras as BlobExtras | undefined;
        const conditions =
          "ifMatch" in condition
            ? { ifMatch: condition.ifMatch }
            : "ifNoneMatch" in condition
              ? { ifNoneMatch: "*" }
              : condition.mustExist
                ? { ifMatch: "*" }
                : {};
        const response = await blob.upload(content, content.length, {
          abortSignal,
          tracingOptions: sdkTracing(),
          onProgress: countSends(onSend),
          conditions: options.leaseId ? { ...conditions, leaseId: options.leaseId } : conditions,
          metadata: { ...extras?.metadata, [OPTIMISTIC_LOG_KEY]: log },
          blobHTTPHeaders: extras?.headers ?? { blobContentType: contentType },
        });
        return response.etag!;
      },

      decode: (content) => codec.decode(content, description),
      encode: (value) => codec.encode(value, description),
      sizeInBytes: (content) => content.length,
    },
    { kind: "blob", container: blob.containerName, name: blob.name, url: blob.url },
  );
}

function decodeUtf8(bytes: Buffer, cell: string, code: "InvalidJson" | "InvalidText" = "InvalidText"): string {
  if (!isUtf8(bytes)) throw new CellContentError(cell, code, "it is not valid UTF-8");
  // A byte order mark is not part of the text (as TextDecoder would also drop it).
  const start = bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  return bytes.toString("utf8", start);
}
