/**
 * The outbox's errors: each extends the library's error base (`../errors.ts`) with a stable `code`,
 * and has a guard that checks the brand and the `name`.
 */
import { isStorageConcurrencyError, StorageConcurrencyError } from "../errors.js";

/**
 * A message is too large for an outbox row (code `OutboxPayloadTooLarge`): nothing was written.
 * A row holds 960 KiB of payload (after the outbox's compression); the relay sends larger-than-queue
 * payloads through its claim-check, but the row must hold them first, in the same transaction as
 * your entity.
 */
export class OutboxPayloadTooLargeError extends StorageConcurrencyError {
  /** The message's id. */
  readonly messageId: string;
  /** Its size, in bytes, as it would be stored. */
  readonly payloadBytes: number;

  constructor(message: string, options: { messageId: string; payloadBytes: number }) {
    super(message, { code: "OutboxPayloadTooLarge" });
    this.name = "OutboxPayloadTooLargeError";
    this.messageId = options.messageId;
    this.payloadBytes = options.payloadBytes;
  }
}

/**
 * True when `error` is an {@link OutboxPayloadTooLargeError}.
 *
 * @example
 * ```ts
 * import { TableOutbox, isOutboxPayloadTooLargeError } from "azure-storage-concurrency/outbox";
 *
 * const outbox = new TableOutbox(tableClient);
 * const order = { partitionKey: "customer-7", rowKey: "order-1", total: 30 };
 * await outbox
 *   .write([["create", order]], [{ body: "x".repeat(2_000_000) }])
 *   .catch((error: unknown) => {
 *     if (isOutboxPayloadTooLargeError(error)) console.error(`${error.messageId}: ${error.payloadBytes} bytes`);
 *     throw error;
 *   });
 * ```
 */
export function isOutboxPayloadTooLargeError(error: unknown): error is OutboxPayloadTooLargeError {
  return isStorageConcurrencyError(error) && error.name === "OutboxPayloadTooLargeError";
}
