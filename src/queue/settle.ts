/**
 * Settling a received message: delete it, change its visibility, move it to the poison queue; and
 * reporting what happened. Every settle uses the pop receipt it is given (the newest, from the
 * heartbeat); a 404 or 400 PopReceiptMismatch means another consumer owns the message now and is
 * reported as `ownershipLost`, any other failure as `error`. None of them throws: the message then
 * comes back after its visibility timeout, which is what at-least-once delivery promises.
 */
import type { QueueClient } from "@azure/storage-queue";
import { logger } from "../internal/logger.js";
import type { MessageOwnershipLostError } from "./errors.js";
import type { TypedEvents } from "./events.js";
import { isOwnershipLoss, ownershipLost } from "./heartbeat.js";
import { buildPoisonMessageText, derivePoisonQueue, PoisonQueueWriter } from "./poison.js";
import type { QueueConsumerEvents, ReceivedQueueMessage } from "./types.js";

export class MessageSettler {
  readonly #queue: QueueClient;
  readonly #events: TypedEvents<QueueConsumerEvents>;
  readonly #poisonQueue: QueueClient | undefined;
  readonly #poisonTimeToLiveInSeconds: number;
  #poison: PoisonQueueWriter | undefined;

  constructor(
    queue: QueueClient,
    events: TypedEvents<QueueConsumerEvents>,
    poisonQueue: QueueClient | undefined,
    poisonTimeToLiveInSeconds: number,
  ) {
    this.#queue = queue;
    this.#events = events;
    this.#poisonQueue = poisonQueue;
    this.#poisonTimeToLiveInSeconds = poisonTimeToLiveInSeconds;
  }

  /** Deletes a settled message; false (and reported) when it could not. */
  delete(message: ReceivedQueueMessage, popReceipt: string, lostError?: MessageOwnershipLostError): Promise<boolean> {
    return this.#call(message, lostError, "delete", "delete the message", () =>
      this.#queue.deleteMessage(message.messageId, popReceipt),
    );
  }

  /** Hides the message for `seconds` (0: visible now); false (and reported) when it could not. */
  setVisibility(
    message: ReceivedQueueMessage,
    popReceipt: string,
    seconds: number,
    lostError?: MessageOwnershipLostError,
  ): Promise<boolean> {
    return this.#call(message, lostError, "update", "make the message visible again", () =>
      this.#queue.updateMessage(message.messageId, popReceipt, undefined, seconds),
    );
  }

  /**
   * One settling call with the message's pop receipt: true when it went through; false when the
   * message is known lost already (`lostError`), or when the call failed, which is reported (an
   * ownership loss as `ownershipLost`, anything else as `error`) and never thrown.
   */
  async #call(
    message: ReceivedQueueMessage,
    lostError: MessageOwnershipLostError | undefined,
    operation: "delete" | "update",
    what: string,
    call: () => Promise<unknown>,
  ): Promise<boolean> {
    if (lostError) {
      this.lost(message, lostError);
      return false;
    }
    try {
      await call();
      return true;
    } catch (error) {
      if (isOwnershipLoss(error)) this.lost(message, ownershipLost(message.messageId, operation, error));
      else this.reportError(error, what, message);
      return false;
    }
  }

  /** Makes a message visible again at once (received while stopping, or its handler was stopped). */
  release(message: ReceivedQueueMessage, popReceipt: string): Promise<boolean> {
    return this.setVisibility(message, popReceipt, 0);
  }

  /** Sends the message to the poison queue with `reason`, then deletes it. */
  async poison(message: ReceivedQueueMessage, popReceipt: string, reason: string, error: unknown): Promise<void> {
    const writer = (this.#poison ??= new PoisonQueueWriter(
      this.#poisonQueue ?? derivePoisonQueue(this.#queue),
      this.#poisonTimeToLiveInSeconds,
    ));
    const code =
      typeof error === "object" && error !== null
        ? ((error as { code?: unknown }).code ?? (error as Error).name)
        : undefined;
    const { text } = buildPoisonMessageText(
      message,
      this.#queue.name,
      reason,
      typeof code === "string" ? code : undefined,
    );
    try {
      await writer.send(text);
    } catch (sendError) {
      // The message stays in its queue and comes back after its visibility timeout.
      this.reportError(sendError, `move the message to the poison queue '${writer.name}'`, message);
      return;
    }
    await this.#call(message, undefined, "delete", "delete the poisoned message", () =>
      this.#queue.deleteMessage(message.messageId, popReceipt),
    );
    logger.warning(`message ${message.messageId} moved to the poison queue '${writer.name}': ${reason}`);
    this.#events.emit("poisoned", { message, reason, error, poisonQueueName: writer.name });
  }

  /** Reports that the message (or its claim) belongs to someone else now. */
  lost(message: ReceivedQueueMessage, error: MessageOwnershipLostError): void {
    logger.warning(error.message);
    this.#events.emit("ownershipLost", { message, error });
  }

  /** Reports a failure outside a handler: to `error` listeners, or to the log when there are none. */
  reportError(error: unknown, operation: string, message: ReceivedQueueMessage | undefined): void {
    if (this.#events.has("error")) this.#events.emit("error", { error, operation, message });
    else
      logger.warning(
        `queue consumer could not ${operation}${message ? ` (message ${message.messageId})` : ""}: ${describe(error)}`,
      );
  }
}

/** An error's message, or the value as text. */
export function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
