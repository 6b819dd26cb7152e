/**
 * `azure-storage-concurrency/retry`: exponential-backoff retry policies, and the one classifier of which storage
 * failures are worth retrying.
 *
 * @packageDocumentation
 */
export {
  exponentialBackoff,
  fullJitterBackoff,
  decorrelatedJitterBackoff,
  fixedBackoff,
  noBackoff,
  backoffPresets,
  type BackoffStrategy,
  type RandomSourceOptions,
  type ExponentialBackoffOptions,
  type JitterBackoffOptions,
  type FixedBackoffOptions,
} from "./backoff.js";
export {
  classifyError,
  isTransientError,
  wrapStorageError,
  TRANSIENT_STATUS_CODES,
  type ErrorClassification,
  type FailureKind,
} from "./classify.js";
export {
  retry,
  retryPolicy,
  SDK_SINGLE_ATTEMPT,
  type RetryOptions,
  type RetryPolicy,
  type OptionalRetryOption,
  type RetryEvent,
  type RetryAttemptContext,
  type ExecuteOptions,
} from "./retry.js";
