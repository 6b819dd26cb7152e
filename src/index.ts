/**
 * azure-storage-concurrency: the concurrency strategies of Azure Storage, as typed wrappers over the
 * official SDK clients.
 *
 * The root carries only the error base that every feature's errors extend, and the one guard that
 * narrows any of them by its code. Each feature has an entry point of its own, from its folder:
 * `azure-storage-concurrency/optimistic`, `/lease`, `/queue`, `/idempotency`, `/tables`, `/files`,
 * `/retry`, `/testing`, and `/errors` (what the library reads out of the SDKs' errors). Importing
 * a lock loads no queue consumer, and autocompletion shows one feature at a time.
 *
 * @packageDocumentation
 */
export {
  StorageConcurrencyError,
  StorageRequestError,
  isStorageConcurrencyError,
  isStorageRequestError,
  type StorageConcurrencyErrorOptions,
} from "./errors.js";
export type { StorageConcurrencyErrorCode, StorageConcurrencyErrorOf } from "./error-codes.js";
