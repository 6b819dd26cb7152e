/**
 * The errors of the Azure Files helpers. Each extends {@link StorageConcurrencyError} and has an
 * `is…Error` guard that checks the brand and the name (not `instanceof`).
 */
import { isStorageConcurrencyError, StorageConcurrencyError } from "../errors.js";

/** Why an SMB client stands in the way. */
export type SmbConflictCode =
  /** An SMB client holds the file open with a share mode that refuses this access (or locks a range of it). */
  | "SmbFileLocked"
  /** An SMB client marked the file for deletion and still has it open. */
  | "SmbDeletePending";

/**
 * An SMB client kept a file busy for longer than the SMB retry preset was willing to wait
 * (see `retryWhileSmbLocked`). `statusCode` is 409; `serviceCode` is the service's code
 * (`SharingViolation`, `FileLockConflict`, `FileOpenBySmbClient`, `DeletePending`, `SMBDeletePending`).
 */
export class SmbConflictError extends StorageConcurrencyError {
  declare readonly code: SmbConflictCode;
  /** How many requests were made. */
  readonly attempts: number;
  /** How long the preset waited in total, in milliseconds. */
  readonly waitedInMs: number;

  constructor(
    message: string,
    options: {
      code: SmbConflictCode;
      serviceCode: string | undefined;
      attempts: number;
      waitedInMs: number;
      cause?: unknown;
    },
  ) {
    super(message, { code: options.code, statusCode: 409, serviceCode: options.serviceCode, cause: options.cause });
    this.name = "SmbConflictError";
    this.attempts = options.attempts;
    this.waitedInMs = options.waitedInMs;
  }
}

/**
 * True when `error` is an {@link SmbConflictError}.
 *
 * @example
 * ```ts
 * import { readFileContent, isSmbConflictError } from "azure-storage-concurrency/files";
 *
 * const file = await readFileContent(fileClient).catch((error: unknown) => {
 *   if (isSmbConflictError(error)) console.log(`${error.serviceCode} after ${error.attempts} tries over ${error.waitedInMs} ms`);
 *   throw error;
 * });
 * ```
 *
 * @deprecated Use `isStorageConcurrencyError(error, "SmbFileLocked") || isStorageConcurrencyError(error, "SmbDeletePending")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isSmbConflictError(error: unknown): error is SmbConflictError {
  return isStorageConcurrencyError(error) && error.name === "SmbConflictError";
}

/** Why the service refused a write because of a file lease. */
export type FileLeaseConflictCode =
  /** The write named a lease id that does not hold the file (the lease was broken, released or changed). */
  | "FileLeaseNotHeld"
  /** A last-writer-wins write met a lease that someone else holds: last writer wins does not override a lock. */
  | "FileLeasedByAnother";

/**
 * The service refused a write because of the file's lease (412 LeaseIdMissing,
 * LeaseIdMismatchWithFileOperation or LeaseNotPresentWithFileOperation). Nothing was written.
 */
export class FileLeaseConflictError extends StorageConcurrencyError {
  declare readonly code: FileLeaseConflictCode;
  /** The lease id the write named, if any. */
  readonly leaseId: string | undefined;

  constructor(
    message: string,
    options: {
      code: FileLeaseConflictCode;
      statusCode: number | undefined;
      serviceCode: string | undefined;
      leaseId?: string | undefined;
      cause?: unknown;
    },
  ) {
    super(message, options);
    this.name = "FileLeaseConflictError";
    this.leaseId = options.leaseId;
  }
}

/**
 * True when `error` is a {@link FileLeaseConflictError}.
 *
 * @example
 * ```ts
 * import { writeFileLastWriterWins, isFileLeaseConflictError } from "azure-storage-concurrency/files";
 *
 * await writeFileLastWriterWins(fileClient, "fresh cache").catch((error: unknown) => {
 *   // FileLeasedByAnother: someone holds a lease on it, and last writer wins does not override a lock.
 *   if (isFileLeaseConflictError(error)) console.log(error.code, error.serviceCode);
 *   else throw error;
 * });
 * ```
 *
 * @deprecated Use `isStorageConcurrencyError(error, "FileLeaseNotHeld") || isStorageConcurrencyError(error, "FileLeasedByAnother")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isFileLeaseConflictError(error: unknown): error is FileLeaseConflictError {
  return isStorageConcurrencyError(error) && error.name === "FileLeaseConflictError";
}

/**
 * A write failed without a definite answer (its response was lost and the SDK's retries ran out),
 * and every attempt of the follow-up read failed too, so nothing could tell whether it was applied.
 * Look for `writeId` in the file's metadata (`readFileContent(...).writeId`) to find out before
 * writing again.
 */
export class FileWriteNotConfirmedError extends StorageConcurrencyError {
  /** The write id that the write carried in the file's metadata. */
  readonly writeId: string;

  constructor(
    message: string,
    options: { writeId: string; statusCode?: number | undefined; serviceCode?: string | undefined; cause?: unknown },
  ) {
    super(message, { code: "FileWriteNotConfirmed", ...options });
    this.name = "FileWriteNotConfirmedError";
    this.writeId = options.writeId;
  }
}

/**
 * True when `error` is a {@link FileWriteNotConfirmedError}.
 *
 * @example
 * ```ts
 * import { readFileContent, writeFileUnderLease, isFileWriteNotConfirmedError } from "azure-storage-concurrency/files";
 *
 * try {
 *   await writeFileUnderLease(fileClient, handle, "new content");
 * } catch (error) {
 *   if (!isFileWriteNotConfirmedError(error)) throw error;
 *   // Later, once the service answers again: did the write land?
 *   const { writeId } = await readFileContent(fileClient);
 *   console.log(writeId === error.writeId ? "it was applied" : "it was not applied");
 * }
 * ```
 *
 * @deprecated Use `isStorageConcurrencyError(error, "FileWriteNotConfirmed")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isFileWriteNotConfirmedError(error: unknown): error is FileWriteNotConfirmedError {
  return isStorageConcurrencyError(error) && error.name === "FileWriteNotConfirmedError";
}

/** A file's content could not be decoded (e.g. it is not valid JSON). Nothing was written. */
export class FileContentError extends StorageConcurrencyError {
  /** The file's path. */
  readonly path: string;

  constructor(message: string, options: { path: string; cause?: unknown }) {
    super(message, { code: "FileContentNotDecodable", cause: options.cause });
    this.name = "FileContentError";
    this.path = options.path;
  }
}

/**
 * True when `error` is a {@link FileContentError}.
 *
 * @example
 * ```ts
 * import { fileCodecs, updateFileUnderLease, isFileContentError } from "azure-storage-concurrency/files";
 *
 * await updateFileUnderLease(fileClient, handle, (settings) => ({ ...settings, retries: 5 }), {
 *   codec: fileCodecs.json<{ retries: number }>(),
 * }).catch((error: unknown) => {
 *   if (isFileContentError(error)) console.log(`${error.path} is not JSON; left as it was`);
 *   else throw error;
 * });
 * ```
 *
 * @deprecated Use `isStorageConcurrencyError(error, "FileContentNotDecodable")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isFileContentError(error: unknown): error is FileContentError {
  return isStorageConcurrencyError(error) && error.name === "FileContentError";
}
