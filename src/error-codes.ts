/**
 * `azure-storage-concurrency/errors`: the error base, what the library reads out of the SDKs'
 * errors, and the safe way to put any thrown value into words.
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
export { describeError } from "./internal/describe-error.js";
