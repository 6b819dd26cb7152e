/**
 * `azure-storage-concurrency/files`: Azure Files: reads, and writes under a lease or last writer wins, with the SMB
 * clients' share-mode conflicts recognised and waited out (the file and share locks are in `/lease`).
 *
 * @packageDocumentation
 */
export {
  SmbConflictError,
  isSmbConflictError,
  FileLeaseConflictError,
  isFileLeaseConflictError,
  FileWriteNotConfirmedError,
  isFileWriteNotConfirmedError,
  FileContentError,
  isFileContentError,
  type SmbConflictCode,
  type FileLeaseConflictCode,
} from "./errors.js";
export {
  retryWhileSmbLocked,
  isSmbConflict,
  SMB_LOCK_BACKOFF,
  SMB_LOCK_DEADLINE_IN_MS,
  type SmbRetryOptions,
  type SmbRetryCallOptions,
} from "./smb-retry.js";
export type { FileLeaseRef, FileLeaseHandleLike } from "./lease-ref.js";
export { WRITE_ID_METADATA_KEY, type FileRequestOptions } from "./request.js";
export {
  readFileContent,
  type ReadFileContentOptions,
  type FileContent,
  type FileHttpProperties,
  type FileSmbProperties,
} from "./read.js";
export {
  writeFileUnderLease,
  writeFileLastWriterWins,
  MAX_FILE_WRITE_BYTES,
  type FileWriteOptions,
  type FileWriteResult,
} from "./write.js";
export { fileCodecs, type FileCodec } from "./codecs.js";
export {
  updateFileUnderLease,
  type UpdateFileUnderLeaseOptions,
  type UpdateFileResult,
  type FileMutationContext,
} from "./update.js";
