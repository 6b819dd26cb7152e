/**
 * azure-storage-concurrency: the concurrency strategies of Azure Storage, as typed wrappers over the
 * official SDK clients.
 *
 * @packageDocumentation
 */
export {
  StorageConcurrencyError,
  StorageRequestError,
  isStorageConcurrencyError,
  isStorageRequestError,
  readRestError,
  statusOf,
  serviceCodeOf,
  redactSecrets,
  NETWORK_CODES,
  type StorageConcurrencyErrorOptions,
  type RestErrorInfo,
} from "./errors.js";
export * from "./retry/index.js";
export * from "./files/index.js";
export * from "./lease/index.js";
export * from "./tables/index.js";
export * from "./queue/index.js";
export * from "./idempotency/index.js";
export * from "./optimistic/index.js";
