/**
 * Reading a whole file with what a later write needs: its content, its user metadata, the id of the
 * write that produced it (recorded by this library's writes), and the properties that a replacing
 * write should carry over.
 */
import type { FileDownloadResponseModel, ShareFileClient } from "@azure/storage-file-share";
import { checkOptionalSignal } from "../internal/validate.js";
import { readStream } from "../internal/stream.js";
import { eitherSignal, resolveLease, type FileLeaseRef } from "./lease-ref.js";
import {
  checkFileRequestOptions,
  describeFile,
  filesCall,
  leaseRefusal,
  WRITE_ID_METADATA_KEY,
  type FileRequestOptions,
} from "./request.js";

/** Standard HTTP properties of a file, as a replacing write sets them. */
export interface FileHttpProperties {
  /** The `Content-Type` the file is served with, e.g. `"application/json"`. */
  readonly contentType?: string | undefined;
  /** The `Content-Encoding`, e.g. `"gzip"`. */
  readonly contentEncoding?: string | undefined;
  /** The `Content-Language`, e.g. `"en-GB"`. */
  readonly contentLanguage?: string | undefined;
  /** The `Content-Disposition`, e.g. `"attachment; filename=report.csv"`. */
  readonly contentDisposition?: string | undefined;
  /** The `Cache-Control`, e.g. `"no-cache"`. */
  readonly cacheControl?: string | undefined;
}

/** SMB properties of a file that a replacing write (Create File) would otherwise reset. */
export interface FileSmbProperties {
  /** The file's permission key (its security descriptor in the share). */
  readonly filePermissionKey?: string | undefined;
  /** SMB attributes as the service spells them, e.g. `"Archive"` or `"ReadOnly | Archive"`. */
  readonly fileAttributes?: string | undefined;
  /** The file's creation time. */
  readonly creationTime?: Date | undefined;
}

/** Options for {@link readFileContent}. */
export interface ReadFileContentOptions extends FileRequestOptions {
  /**
   * Read under this lease: the service then refuses the read (412) if the lease no longer holds the
   * file, so a lost lease is noticed before anything is decided on stale content.
   */
  readonly lease?: FileLeaseRef;
}

/** What {@link readFileContent} returns. */
export interface FileContent {
  /** The whole file. */
  readonly content: Buffer;
  /** The user's metadata (without the library's write id). */
  readonly metadata: Readonly<Record<string, string>>;
  /** The id of the write that produced this content, when one of the library's writes did. */
  readonly writeId: string | undefined;
  /** The file's ETag (Azure Files accepts no If-Match: it identifies, it does not guard). */
  readonly etag: string | undefined;
  /** When the file last changed. */
  readonly lastModified: Date | undefined;
  /** Its HTTP properties. */
  readonly httpProperties: FileHttpProperties;
  /** Its SMB properties. */
  readonly smbProperties: FileSmbProperties;
}

/**
 * Reads a whole file in one Get File request (through the SMB retry preset unless `smbRetry` is
 * `false`).
 *
 * @example
 * ```ts
 * import { readFileContent } from "azure-storage-concurrency/files";
 *
 * const { content, writeId } = await readFileContent(fileClient);
 * console.log(content.toString("utf8"), "written by", writeId ?? "someone else");
 * ```
 */
export async function readFileContent(
  fileClient: ShareFileClient,
  options: ReadFileContentOptions = {},
): Promise<FileContent> {
  checkOptionalSignal("abortSignal", options.abortSignal);
  checkFileRequestOptions(options);
  const lease = options.lease === undefined ? undefined : resolveLease("lease", options.lease);
  const path = describeFile(fileClient);
  const signal = eitherSignal(options.abortSignal, lease?.signal);
  signal?.throwIfAborted();
  try {
    return await filesCall(
      async ({ abortSignal }) => {
        const response = await fileClient.download(0, undefined, {
          abortSignal,
          ...(lease ? { leaseAccessConditions: { leaseId: lease.leaseId } } : {}),
        });
        return toFileContent(response, await readStream(response.readableStreamBody));
      },
      `read '${path}'`,
      { ...options, signal, lease },
    );
  } catch (error) {
    if (signal?.aborted) throw error; // cancelled, or the lock was lost: its reason, as it is
    throw leaseRefusal(error, path, lease?.leaseId, "read") ?? error;
  }
}

function toFileContent(response: FileDownloadResponseModel, content: Buffer): FileContent {
  const { [WRITE_ID_METADATA_KEY]: writeId, ...metadata } = lowerCaseKeys(response.metadata ?? {});
  return {
    content,
    metadata,
    writeId,
    etag: response.etag,
    lastModified: response.lastModified,
    httpProperties: {
      contentType: response.contentType,
      contentEncoding: response.contentEncoding,
      contentLanguage: response.contentLanguage,
      contentDisposition: response.contentDisposition,
      cacheControl: response.cacheControl,
    },
    smbProperties: {
      filePermissionKey: response.filePermissionKey,
      fileAttributes: response.fileAttributes,
      creationTime: response.fileCreatedOn,
    },
  };
}

/** Metadata names are case-insensitive; the library's own key is matched in lower case. */
export function lowerCaseKeys(metadata: Readonly<Record<string, string>>): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(metadata)) {
    result[name.toLowerCase() === WRITE_ID_METADATA_KEY ? WRITE_ID_METADATA_KEY : name] = value;
  }
  return result;
}
