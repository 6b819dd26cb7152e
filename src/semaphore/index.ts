/**
 * `azure-storage-concurrency/semaphore`: a counting semaphore over blob leases (at most `maxCount`
 * holders at once, across processes), built on the lease lock engine of `../lease/`.
 *
 * @module
 */
export { blobSemaphore, BlobSemaphore, type SemaphoreInfo, type SemaphoreSlot } from "./semaphore.js";
export { type PermitHandle } from "./permit.js";
export {
  MAX_SEMAPHORE_COUNT,
  type BlobSemaphoreOptions,
  type AcquirePermitOptions,
  type TryAcquirePermitOptions,
} from "./options.js";
export { SemaphoreTimeoutError, isSemaphoreTimeoutError } from "./errors.js";
// What an operator's tool reads: the slots of a semaphore, their holders and lease states.
export { listSlots, slotBlobName, type SlotRow } from "./slots.js";
export type { OperationTracingOptions, TracingContext } from "../observability/scope.js";
