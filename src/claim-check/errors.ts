/**
 * The claim-check's errors. Each extends the library's error base (`../errors.ts`) with a stable
 * `code`, and has a guard that checks the brand and the `name` (not `instanceof`, so two copies of
 * the package agree).
 */
import {
  isStorageConcurrencyError,
  StorageConcurrencyError,
  StorageRequestError,
  type StorageConcurrencyErrorOptions,
} from "../errors.js";

/**
 * A claim-check message names a payload blob that is not there (code `ClaimCheckPayloadMissing`).
 * The library deletes a payload only after a copy of its message was settled, and the sweep only
 * once no copy can be delivered any more; so, unless someone deleted it by hand, the message is a
 * copy of one already settled (a send whose answer was lost and which the SDK sent again). The
 * consumer deletes it as a duplicate when its idempotency store says its key is done, and poisons it
 * otherwise. Tell it with `isStorageConcurrencyError(error, "ClaimCheckPayloadMissing")`.
 *
 * @example
 * ```ts
 * import { ClaimCheck } from "azure-storage-concurrency/claim-check";
 * import { isStorageConcurrencyError } from "azure-storage-concurrency/errors";
 *
 * const claimCheck = new ClaimCheck(containerClient);
 * const { receivedMessageItems } = await claimCheck.receiveMessages(queueClient);
 * for (const message of receivedMessageItems) {
 *   if (isStorageConcurrencyError(message.error, "ClaimCheckPayloadMissing")) {
 *     // A copy of a message already settled: its payload is gone, so is its work.
 *     await queueClient.deleteMessage(message.messageId, message.popReceipt);
 *   }
 * }
 * ```
 */
export class ClaimCheckPayloadMissingError extends StorageConcurrencyError {
  /** The payload blob's container. */
  readonly container: string;
  /** The payload blob's name. */
  readonly blobName: string;
  /** The message's idempotency key (from its envelope). */
  readonly idempotencyKey: string;

  constructor(
    message: string,
    options: { container: string; blobName: string; idempotencyKey: string; cause?: unknown },
  ) {
    super(message, {
      code: "ClaimCheckPayloadMissing",
      statusCode: 404,
      serviceCode: "BlobNotFound",
      cause: options.cause,
    });
    this.name = "ClaimCheckPayloadMissingError";
    this.container = options.container;
    this.blobName = options.blobName;
    this.idempotencyKey = options.idempotencyKey;
  }
}

/**
 * {@link ClaimCheck.sendMessage} failed after its payload was uploaded (code `ClaimCheckSendFailed`).
 * `mayHaveBeenSent` says whether the message may be in the queue after all (no answer, a 5xx, the
 * time limit): then its payload is kept for it. Otherwise the payload was deleted, or is left for
 * the sweep when deleting it failed too: either way no message refers to it. `transient` (from the
 * one classifier) says whether sending again may succeed; a new send uploads its payload again.
 */
export class ClaimCheckSendError extends StorageRequestError {
  /** The payload blob's name. */
  readonly payloadBlob: string;
  /** True when the message may have been added to the queue (its answer was lost). */
  readonly mayHaveBeenSent: boolean;

  constructor(
    message: string,
    options: Omit<StorageConcurrencyErrorOptions, "code"> & {
      transient: boolean;
      requestId?: string | undefined;
      payloadBlob: string;
      mayHaveBeenSent: boolean;
    },
  ) {
    super(message, { ...options, code: "ClaimCheckSendFailed" });
    this.name = "ClaimCheckSendError";
    this.payloadBlob = options.payloadBlob;
    this.mayHaveBeenSent = options.mayHaveBeenSent;
  }
}

/**
 * True when `error` is a {@link ClaimCheckSendError}.
 *
 * @example
 * ```ts
 * import { ClaimCheck, isClaimCheckSendError } from "azure-storage-concurrency/claim-check";
 *
 * const claimCheck = new ClaimCheck(containerClient);
 * try {
 *   await claimCheck.sendMessage(queueClient, "x".repeat(100_000));
 * } catch (error) {
 *   if (isClaimCheckSendError(error) && error.mayHaveBeenSent) console.warn("the message may be in the queue");
 *   throw error;
 * }
 * ```
 */
export function isClaimCheckSendError(error: unknown): error is ClaimCheckSendError {
  return isStorageConcurrencyError(error) && error.name === "ClaimCheckSendError";
}
