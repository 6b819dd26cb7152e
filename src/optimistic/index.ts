/**
 * `azure-storage-concurrency/optimistic`: optimistic-update loops over versioned cells (a blob, a table entity, a container's
 * metadata): read, change, write with If-Match, try again on 412; and explicit last writer wins.
 *
 * @packageDocumentation
 */
export {
  SKIP_WRITE,
  type Mutation,
  type MutationContext,
  type OptimisticUpdateOptions,
  type OptimisticUpdateResult,
  type OptimisticConflictEvent,
} from "./types.js";
export {
  optimisticUpdate,
  readCell,
  writeLastWriterWins,
  writeIfMatch,
  type ReadCellOptions,
  type ReadCellResult,
  type CellSnapshot,
  type WriteLastWriterWinsOptions,
  type WriteIfMatchOptions,
} from "./engine.js";
export {
  OPTIMISTIC_LOG_KEY,
  NOT_MODIFIED,
  WriteNotSent,
  type VersionedCell,
  type CellVersion,
  type WriteCondition,
  type CellReadOptions,
  type CellWriteOptions,
} from "./cell.js";
export { blobBytesCell, blobTextCell, blobJsonCell, type BlobCellOptions } from "./blob-cells.js";
export { tableEntityCell, type TableEntityCellOptions } from "./table-cell.js";
export { containerMetadataCell, type ContainerMetadataCellOptions } from "./container-metadata-cell.js";
export {
  OptimisticConflictError,
  isOptimisticConflictError,
  OptimisticOutcomeUnknownError,
  isOptimisticOutcomeUnknownError,
  CellContentError,
  isCellContentError,
  TableEntityTooLargeError,
  isTableEntityTooLargeError,
} from "./errors.js";
export type { OperationTracingOptions, TracingContext } from "../observability/scope.js";
