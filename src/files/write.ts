/**
 * Replacing a file's content, in one request, either under a lease (the service refuses the write
 * to anyone who does not name the lease) or as an explicit last-writer-wins write.
 *
 * Azure Files' REST API has no If-Match: "The File service REST API does not support optimistic or
 * pessimistic concurrency; updates follow a last-writer-wins strategy" (the source documents' File
 * section). Since then the service added file leases: a leased file refuses writes and deletes that
 * do not carry the lease id (412 LeaseIdMissing / LeaseIdMismatchWithFileOperation;
 * https://learn.microsoft.com/rest/api/storageservices/lease-file). So the lease is the only guard.
 *
 * One request per write: Create File with its content ("Beginning with version 2026-02-06, you can
 * also create file with content up to 4MiB", https://learn.microsoft.com/rest/api/storageservices/create-file).
 * The classic Create File + Put Range leaves a window in which readers see a zero-filled file of the
 * new size; one request leaves none on the client's side. Hence the 4 MiB limit of these helpers.
 *
 * Each write carries a write id in the file's metadata, set by the same request. When a write fails
 * without a definite answer (the response was lost, or a 5xx that may follow an applied write, and
 * the SDK's own retries ran out), the helper reads the metadata: its write id there means the write
 * was applied, and it reports success (`confirmedAfterLostResponse`); another id, or no file at all,
 * means it was not. That read-back is a request the helper makes on its own: each attempt has a
 * client-side time limit (`attemptTimeoutInMs`), and it gets 3 attempts, so that one more lost answer
 * does not turn a decidable outcome into "unknown" (`FileWriteNotConfirmedError`). Nothing is ever
 * applied twice by the helper itself; the SDK may resend the identical request, which leaves the same
 * content. tests/integration/explorer/files.test.ts places every fault at every request to check this.
 */
import { createHash, randomUUID } from "node:crypto";
import type { FileSystemAttributes, ShareFileClient } from "@azure/storage-file-share";
import { statusOf } from "../errors.js";
import { checkNumber, checkOptionalSignal } from "../internal/validate.js";
import { logger } from "../internal/logger.js";
import { classifyError } from "../retry/index.js";
import { FileWriteNotConfirmedError } from "./errors.js";
import { eitherSignal, resolveLease, type FileLeaseRef, type ResolvedLease } from "./lease-ref.js";
import { ownRequest } from "./own-request.js";
import { lowerCaseKeys, type FileHttpProperties, type FileSmbProperties } from "./read.js";
import {
  checkFileRequestOptions,
  describeFile,
  filesCall,
  leaseRefusal,
  WRITE_ID_METADATA_KEY,
  type FileRequestOptions,
} from "./request.js";
import { describeError } from "../internal/describe-error.js";

/** The most one write carries: Create File with content takes at most 4 MiB. */
export const MAX_FILE_WRITE_BYTES = 4 * 1024 * 1024;

/** Options for {@link writeFileUnderLease} and {@link writeFileLastWriterWins}. */
export interface FileWriteOptions extends FileRequestOptions {
  /** The file's metadata after the write (Create File replaces all metadata). */
  readonly metadata?: Readonly<Record<string, string>>;
  /** The file's HTTP properties after the write (Create File replaces them). */
  readonly httpProperties?: FileHttpProperties;
  /**
   * SMB properties to keep: Create File gives the replaced file fresh attributes, permissions
   * (inherited from the directory) and creation time unless they are passed here.
   * `updateFileUnderLease` carries them over from its read.
   */
  readonly smbProperties?: FileSmbProperties;
  /**
   * The id recorded in the file's metadata for this write.
   * @default a random UUID
   */
  readonly writeId?: string;
  /**
   * The client-side time limit of each attempt of the read-back that checks a write whose answer
   * was lost (up to 3 attempts, Get File Properties), in milliseconds.
   * @default 10000
   */
  readonly attemptTimeoutInMs?: number;
}

/** What a write returns. */
export interface FileWriteResult {
  /** The id recorded with the content (`readFileContent(...).writeId` reads it back). */
  readonly writeId: string;
  /** The file's ETag after the write. */
  readonly etag: string | undefined;
  /** When the write happened. */
  readonly lastModified: Date | undefined;
  /**
   * True when the write's response was lost and the follow-up read found the write id: the write
   * was applied, and was not sent again.
   */
  readonly confirmedAfterLostResponse: boolean;
}

/**
 * Replaces a file's content under a file lease that the caller holds: every request names the lease
 * id, so the service refuses it (and this rejects with a `FileLeaseConflictError`, code
 * `"FileLeaseNotHeld"`) if the lease was broken or changed meanwhile, and any writer without the
 * lease is refused while this one holds it.
 *
 * @param lease - the lease id, or a lock handle such as `fileLock`'s (`{ leaseId, signal,
 *   lockMetadata }`): a handle whose signal aborted (the lock was lost) stops the write before it is
 *   sent, and the handle's lock record is kept in the file's metadata. With a bare lease id the
 *   write's metadata is exactly `options.metadata`.
 *
 * @example
 * ```ts
 * import { fileLock } from "azure-storage-concurrency/lease";
 * import { writeFileUnderLease } from "azure-storage-concurrency/files";
 *
 * await using handle = await fileLock(fileClient).acquire(); // file leases are infinite: released at scope end
 * await writeFileUnderLease(fileClient, handle, JSON.stringify({ state: "done" }));
 * ```
 */
export async function writeFileUnderLease(
  fileClient: ShareFileClient,
  lease: FileLeaseRef,
  content: Uint8Array | string,
  options: FileWriteOptions = {},
): Promise<FileWriteResult> {
  return replaceFile(fileClient, resolveLease("lease", lease), content, options);
}

/**
 * Replaces a file's content as last writer wins: no lease, no condition; whoever writes last
 * decides the content. Named so that the choice is visible where it is made. A file that another
 * client has leased refuses it (`FileLeaseConflictError`, code `"FileLeasedByAnother"`): last
 * writer wins does not override a lock.
 *
 * @example
 * ```ts
 * import { writeFileLastWriterWins } from "azure-storage-concurrency/files";
 *
 * declare function renderDashboard(): string; // your own rendering
 *
 * // A cache file that any instance may refresh: losing a concurrent refresh is fine.
 * await writeFileLastWriterWins(fileClient, renderDashboard(), { httpProperties: { contentType: "text/html" } });
 * ```
 */
export async function writeFileLastWriterWins(
  fileClient: ShareFileClient,
  content: Uint8Array | string,
  options: FileWriteOptions = {},
): Promise<FileWriteResult> {
  return replaceFile(fileClient, undefined, content, options);
}

/** The shared implementation: one Create File with content, and a check of the write id when the answer was lost. */
export async function replaceFile(
  fileClient: ShareFileClient,
  lease: ResolvedLease | undefined,
  content: Uint8Array | string,
  options: FileWriteOptions,
): Promise<FileWriteResult> {
  const bytes = toBytes(content);
  checkWriteOptions(options);
  const path = describeFile(fileClient);
  const writeId = options.writeId ?? randomUUID();
  const signal = eitherSignal(options.abortSignal, lease?.signal);
  signal?.throwIfAborted();
  const what = lease ? `write '${path}' under lease '${lease.leaseId}'` : `write '${path}' (last writer wins)`;
  const metadata = {
    ...withoutKeys(options.metadata ?? {}, lease?.lockMetadata ?? {}),
    ...lease?.lockMetadata,
    [WRITE_ID_METADATA_KEY]: writeId,
  };
  const smb = options.smbProperties ?? {};
  const http = options.httpProperties ?? {};
  try {
    const response = await filesCall(
      ({ abortSignal }) =>
        fileClient.create(bytes.length, {
          abortSignal,
          content: bytes,
          contentLength: bytes.length,
          metadata,
          fileHttpHeaders: {
            fileContentType: http.contentType,
            fileContentEncoding: http.contentEncoding,
            fileContentLanguage: http.contentLanguage,
            fileContentDisposition: http.contentDisposition,
            fileCacheControl: http.cacheControl,
            // Stored as the file's Content-MD5, so that a full download carries it.
            fileContentMD5: createHash("md5").update(bytes).digest(),
          },
          ...(smb.filePermissionKey ? { filePermissionKey: smb.filePermissionKey } : {}),
          // The SDK passes a string through unchanged (fileAttributesToString in its models.js).
          ...(smb.fileAttributes ? { fileAttributes: smb.fileAttributes as unknown as FileSystemAttributes } : {}),
          ...(smb.creationTime ? { creationTime: smb.creationTime } : {}),
          ...(lease ? { leaseAccessConditions: { leaseId: lease.leaseId } } : {}),
        }),
      what,
      { ...options, signal, lease },
    );
    return { writeId, etag: response.etag, lastModified: response.lastModified, confirmedAfterLostResponse: false };
  } catch (error) {
    if (signal?.aborted) throw error; // cancelled, or the lock was lost: its reason, as it is
    const refusal = leaseRefusal(error, path, lease?.leaseId, "write");
    const kind = classifyError(error).kind;
    const ambiguous = kind === "network" || kind === "server" || kind === "timeout" || kind === "throttled";
    if (!refusal && !ambiguous) throw error;
    // The answer was lost (or was a 5xx that may follow an applied write), or a lease refusal came
    // to a resend of the SDK's whose first attempt may have been applied before the lease was
    // broken: the write id on the file tells.
    const applied = await findWrite(fileClient, writeId, error, what, { ...options, signal });
    if (applied) {
      logger.info(`${what}: no definite answer, but the file carries write id ${writeId}: applied`);
      return applied;
    }
    logger.info(`${what}: no definite answer, and the file does not carry write id ${writeId}: not applied`);
    throw refusal ?? error;
  }
}

/**
 * Reads the file's properties to find out whether it carries `writeId`: the write's result if it
 * does, `undefined` if it does not (or the file is not there). A read whose every attempt failed
 * throws a {@link FileWriteNotConfirmedError}: the write may or may not have been applied.
 */
async function findWrite(
  fileClient: ShareFileClient,
  writeId: string,
  writeError: unknown,
  what: string,
  options: FileWriteOptions & { readonly signal: AbortSignal | undefined },
): Promise<FileWriteResult | undefined> {
  let properties;
  try {
    // Without the lease id, so that it answers even if the lease was broken meanwhile.
    properties = await ownRequest(
      `read '${describeFile(fileClient)}' to check write id '${writeId}'`,
      (abortSignal) => fileClient.getProperties({ abortSignal }),
      { abortSignal: options.signal, attemptTimeoutInMs: options.attemptTimeoutInMs },
    );
  } catch (readError) {
    if (options.signal?.aborted) throw options.signal.reason;
    // No file, no write id: a write that was applied would have left one (only a delete since
    // could hide it, and then no read can tell).
    if (statusOf(readError) === 404) return undefined;
    const { statusCode, serviceCode } = classifyError(writeError);
    throw new FileWriteNotConfirmedError(
      `Could not ${what}: the write got no definite answer and the file could not be read to check it ` +
        `(${describeFailure(readError)}). It may or may not have been applied: look for write id '${writeId}' in the ` +
        "file's metadata (readFileContent(...).writeId) before writing again.",
      { writeId, statusCode, serviceCode, cause: writeError },
    );
  }
  if (lowerCaseKeys(properties.metadata ?? {})[WRITE_ID_METADATA_KEY] !== writeId) return undefined;
  return { writeId, etag: properties.etag, lastModified: properties.lastModified, confirmedAfterLostResponse: true };
}

function toBytes(content: unknown): Buffer {
  let bytes: Buffer;
  if (typeof content === "string") bytes = Buffer.from(content, "utf8");
  else if (content instanceof Uint8Array) bytes = Buffer.from(content.buffer, content.byteOffset, content.byteLength);
  else
    throw new TypeError(
      `\`content\` must be a string or a Uint8Array (Buffer), got ${content === null ? "null" : typeof content}.`,
    );
  if (bytes.length > MAX_FILE_WRITE_BYTES) {
    throw new RangeError(
      `\`content\` must be at most 4 MiB (${MAX_FILE_WRITE_BYTES} bytes), got ${bytes.length}: one Create File request carries at ` +
        "most 4 MiB, and larger files cannot be replaced in one request. Write larger files with the SDK's uploadData " +
        "(passing leaseAccessConditions), knowing that readers can see them half-written.",
    );
  }
  return bytes;
}

function checkWriteOptions(options: FileWriteOptions): void {
  checkOptionalSignal("abortSignal", options.abortSignal);
  checkFileRequestOptions(options);
  if (options.attemptTimeoutInMs !== undefined)
    checkNumber("attemptTimeoutInMs", options.attemptTimeoutInMs, { min: 1 });
  if (options.writeId !== undefined && (typeof options.writeId !== "string" || options.writeId.length === 0)) {
    throw new TypeError("`writeId` must be a non-empty string.");
  }
  for (const [name, value] of Object.entries(options.metadata ?? {})) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      throw new RangeError(
        `\`metadata\` names must be C# identifiers (letters, digits, _; not starting with a digit), got '${name}'.`,
      );
    }
    if (typeof value !== "string") throw new TypeError(`\`metadata.${name}\` must be a string.`);
  }
}

/** The user's metadata without the library's own entries (the write id, and the lock's record that replaces them). */
function withoutKeys(
  metadata: Readonly<Record<string, string>>,
  lockMetadata: Readonly<Record<string, string>>,
): Record<string, string> {
  const { [WRITE_ID_METADATA_KEY]: _ignored, ...rest } = lowerCaseKeys(metadata);
  // Metadata names are case-insensitive: drop any spelling of a name the lock's record sets.
  const own = new Set(Object.keys(lockMetadata).map((name) => name.toLowerCase()));
  for (const name of Object.keys(rest)) if (own.has(name.toLowerCase())) delete rest[name];
  return rest;
}

function describeFailure(error: unknown): string {
  const { statusCode, serviceCode } = classifyError(error);
  return statusCode === undefined
    ? (serviceCode ?? describeError(error))
    : `${statusCode}${serviceCode ? ` ${serviceCode}` : ""}`;
}
