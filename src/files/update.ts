/**
 * Read, modify, write a file under a lease. Azure Files has no If-Match, so the optimistic loop of
 * blobs and tables is not available: the lease is the only guard. While it holds the file, nobody
 * else can write it, so there is nothing to retry on conflict; the care goes into the two ways it can
 * still go wrong:
 *
 * - the lease was lost (broken by someone else, e.g. `lock break`): the read and the write both
 *   name the lease id, so the service refuses them (412) and nothing stale is written;
 * - the write's response was lost: the write carries a fresh write id in the file's metadata in the
 *   same request, and the helper checks for it instead of calling `mutate` again (see `./write.ts`).
 *   `mutate` runs exactly once per call.
 */
import type { ShareFileClient } from "@azure/storage-file-share";
import { checkOptionalFunction } from "../internal/validate.js";
import { fileCodecs, type FileCodec } from "./codecs.js";
import { FileContentError } from "./errors.js";
import { eitherSignal, resolveLease, type FileLeaseRef } from "./lease-ref.js";
import { readFileContent, type FileContent } from "./read.js";
import { describeFile, type FileRequestOptions } from "./request.js";
import { replaceFile, type FileWriteOptions } from "./write.js";
import { describeError } from "../internal/describe-error.js";

/** What `mutate` is told besides the current value. */
export interface FileMutationContext {
  /** The file's user metadata (the write keeps it unless `mutate` sets {@link FileMutationContext.metadata} anew). */
  readonly metadata: Readonly<Record<string, string>>;
  /** The id of the write that produced the current content, if one of the library's writes did. */
  readonly writeId: string | undefined;
  /** The file as read. */
  readonly file: FileContent;
  /** Aborts when the caller cancels or the lock is lost. */
  readonly abortSignal: AbortSignal | undefined;
}

/** Options for {@link updateFileUnderLease}. */
export interface UpdateFileUnderLeaseOptions<T>
  extends FileRequestOptions, Pick<FileWriteOptions, "attemptTimeoutInMs"> {
  /**
   * How the content is decoded for `mutate` and encoded back.
   * @default fileCodecs.bytes
   */
  readonly codec?: FileCodec<T>;
  /** The metadata to write, from the metadata read. @default the metadata read, unchanged */
  readonly metadata?: (current: Readonly<Record<string, string>>) => Readonly<Record<string, string>>;
}

/** What {@link updateFileUnderLease} returns. */
export interface UpdateFileResult<T> {
  /** The value now in the file: what `mutate` returned, or the value read if it declined. */
  readonly value: T;
  /** Whether a write was made (`false` when `mutate` returned `undefined`). */
  readonly written: boolean;
  /** The write's id (recorded in the metadata), when written. */
  readonly writeId: string | undefined;
  /** The file's ETag now. */
  readonly etag: string | undefined;
  /** True when the write's response was lost and the helper confirmed from the file that it was applied. */
  readonly confirmedAfterLostResponse: boolean;
}

/**
 * Reads a file under a lease the caller holds, calls `mutate` with its content, and writes the
 * result back under the same lease, in one request that also records a write id. `mutate` may
 * return `undefined` to write nothing.
 *
 * Keeps the file's metadata, HTTP properties and SMB properties (attributes, permission key, creation
 * time) that the replacing Create File would otherwise reset. Content up to 4 MiB.
 *
 * @param lease - the lease id, or a lock handle such as `fileLock`'s (`{ leaseId, signal,
 *   lockMetadata }`): its signal stops the update when the lock is lost, and its lock record is kept.
 *
 * @example
 * ```ts
 * import { fileCodecs, updateFileUnderLease } from "azure-storage-concurrency/files";
 * import { fileLock } from "azure-storage-concurrency/lease";
 *
 * await fileLock(fileClient).withLock((handle) =>
 *   updateFileUnderLease(fileClient, handle, (counter) => ({ count: (counter?.count ?? 0) + 1 }), {
 *     codec: fileCodecs.json<{ count: number } | undefined>(),
 *   }),
 * );
 * ```
 *
 * @example
 * ```ts
 * import { fileCodecs, updateFileUnderLease } from "azure-storage-concurrency/files";
 *
 * const { leaseId } = await fileClient.getShareLeaseClient().acquireLease(-1);
 * const { value } = await updateFileUnderLease(
 *   fileClient,
 *   leaseId!,
 *   (counter) => ({ count: (counter?.count ?? 0) + 1 }),
 *   { codec: fileCodecs.json<{ count: number } | undefined>() },
 * );
 * console.log(value?.count);
 * ```
 */
export async function updateFileUnderLease<T = Buffer>(
  fileClient: ShareFileClient,
  lease: FileLeaseRef,
  mutate: (current: T, context: FileMutationContext) => T | undefined | Promise<T | undefined>,
  options: UpdateFileUnderLeaseOptions<T> = {},
): Promise<UpdateFileResult<T>> {
  const resolved = resolveLease("lease", lease);
  if (typeof mutate !== "function") throw new TypeError("`mutate` must be a function.");
  checkOptionalFunction("metadata", options.metadata);
  const codec = (options.codec ?? fileCodecs.bytes) as FileCodec<T>;
  if (typeof codec?.decode !== "function" || typeof codec.encode !== "function") {
    throw new TypeError("`codec` must be a FileCodec, such as `fileCodecs.json()`.");
  }
  const path = describeFile(fileClient);

  const file = await readFileContent(fileClient, { ...options, lease: resolved });
  let current: T;
  try {
    current = codec.decode(file.content);
  } catch (error) {
    throw new FileContentError(
      `Could not update '${path}': its content is not valid ${codec.name} (${describeError(error)}). Nothing was written.`,
      { path, cause: error },
    );
  }
  const next = await mutate(current, {
    metadata: file.metadata,
    writeId: file.writeId,
    file,
    abortSignal: eitherSignal(options.abortSignal, resolved.signal),
  });
  if (next === undefined) {
    return { value: current, written: false, writeId: undefined, etag: file.etag, confirmedAfterLostResponse: false };
  }
  const result = await replaceFile(fileClient, resolved, codec.encode(next), {
    ...options,
    metadata: options.metadata ? options.metadata(file.metadata) : file.metadata,
    httpProperties: file.httpProperties,
    smbProperties: file.smbProperties,
  });
  return {
    value: next,
    written: true,
    writeId: result.writeId,
    etag: result.etag,
    confirmedAfterLostResponse: result.confirmedAfterLostResponse,
  };
}
