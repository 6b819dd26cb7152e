/**
 * Settling a received message through its {@link MessageHold}: delete it, change its visibility,
 * move it to the poison queue; and reporting what happened. A message found lost (someone else may
 * hold it now) is reported as `ownershipLost`, any other failure as `error`; none of them throws,
 * except a {@link ConsumerResourceError} (the queue is gone, the credential is refused), which ends
 * the consumer. An unsettled message comes back after its visibility timeout, which is what
 * at-least-once delivery promises.
 *
 * Messages this consumer finished but could not delete (the answer to an update was lost with the
 * new pop receipt, or the delete's outcome stayed unknown) are remembered: when this consumer
 * receives one again, it deletes it without running the handler. With an idempotency store every
 * consumer recognises it anyway (its key is done); without one, this memory is what keeps a lost
 * answer from running a message twice on the consumer that processed it.
 */
import type { QueueClient } from "@azure/storage-queue";
import { redactSecrets } from "../errors.js";
import { describeError, errorCodeOf } from "../internal/describe-error.js";
import { logger } from "../internal/logger.js";
import type { ConsumerClaimCheck } from "./claim-check-hook.js";
import { isConsumerResourceError, type MessageOwnershipLostError } from "./errors.js";
import type { TypedEvents } from "./events.js";
import type { HoldOutcome, MessageHold } from "./hold.js";
import { buildPoisonMessageText, derivePoisonQueue, PoisonQueueWriter } from "./poison.js";
import type { QueueConsumerEvents, ReceivedQueueMessage } from "./types.js";

/** What the consumer remembers of a message it finished but could not delete. */
type Remembered =
  { readonly kind: "done"; readonly key: string; readonly result: unknown } | { readonly kind: "poisoned" };

/** How many finished-but-undeleted messages are remembered (the oldest are forgotten first). */
const REMEMBERED_LIMIT = 1_000;

interface MessageSettlerOptions {
  readonly poisonQueue: QueueClient | undefined;
  readonly poisonTimeToLiveInSeconds: number;
  /** "envelope": the reason around the original text; "raw": the original text alone (as Azure Functions writes it). */
  readonly poisonMessageFormat?: "envelope" | "raw" | undefined;
  readonly requestTimeoutInMs: number;
  /** Messages sent through a claim-check: their payloads are deleted after them, kept when poisoned. */
  readonly claimCheck?: ConsumerClaimCheck | undefined;
}

export class MessageSettler {
  readonly #queue: QueueClient;
  readonly #events: TypedEvents<QueueConsumerEvents>;
  readonly #options: MessageSettlerOptions;
  readonly #remembered = new Map<string, Remembered>();
  #poison: PoisonQueueWriter | undefined;

  constructor(queue: QueueClient, events: TypedEvents<QueueConsumerEvents>, options: MessageSettlerOptions) {
    this.#queue = queue;
    this.#events = events;
    this.#options = options;
  }

  /** The poison queue's writer (its client is derived from the consumer's on first use). */
  get poisonWriter(): PoisonQueueWriter {
    return (this.#poison ??= new PoisonQueueWriter(
      this.#options.poisonQueue ?? derivePoisonQueue(this.#queue),
      this.#options.poisonTimeToLiveInSeconds,
    ));
  }

  /** Deletes a settled message, then its claim-check payload (if any). Reports a loss or an unknown outcome. */
  async delete(message: ReceivedQueueMessage, hold: MessageHold): Promise<HoldOutcome["status"]> {
    const status = await this.#report(message, hold, "delete the message", () => hold.delete("delete"));
    // Only once the message is certainly gone: a message whose delete is in doubt may come back.
    if (status === "done" && this.#options.claimCheck) await this.#deletePayload(this.#options.claimCheck, message);
    return status;
  }

  /** Deletes a deleted message's payload; a failure is reported (the sweep removes it later). */
  async #deletePayload(claimCheck: ConsumerClaimCheck, message: ReceivedQueueMessage): Promise<void> {
    try {
      await claimCheck.deletePayload(message.messageText, { timeLimitInMs: this.#options.requestTimeoutInMs });
    } catch (error) {
      this.reportError(error, "delete the message's claim-check payload", message);
    }
  }

  /** Hides the message for `seconds` (0: visible now). `receiptLost` counts as done: the message is hidden and comes back. */
  setVisibility(message: ReceivedQueueMessage, hold: MessageHold, seconds: number): Promise<HoldOutcome["status"]> {
    return this.#report(message, hold, "make the message visible again", () => hold.update(seconds, "update"));
  }

  /** Makes a message visible again at once (received while stopping, or its handler was stopped). */
  async release(message: ReceivedQueueMessage, hold: MessageHold): Promise<boolean> {
    const status = await this.setVisibility(message, hold, 0);
    return status === "done" || status === "receiptLost";
  }

  /**
   * Sends the message to the poison queue with `reason` (redacted of secrets, like the log line),
   * then deletes it. A message that cannot be deleted any more (its receipt was lost) is not sent:
   * it comes back and is poisoned then.
   */
  async poison(message: ReceivedQueueMessage, hold: MessageHold, rawReason: string, error: unknown): Promise<void> {
    const reason = redactSecrets(rawReason);
    if (hold.state !== "held") {
      logger.warning(
        `message ${message.messageId} is to be poisoned but is no longer held; it comes back and is poisoned then: ${reason}`,
      );
      return;
    }
    const writer = this.poisonWriter;
    let payloadBlob: string | undefined;
    try {
      // Kept before the poison copy is sent: a poison message always finds its payload.
      payloadBlob = await this.#options.claimCheck?.keepPayload(message.messageText, {
        timeLimitInMs: this.#options.requestTimeoutInMs,
      });
    } catch (keepError) {
      this.reportError(keepError, "keep the poisoned message's claim-check payload", message);
      return; // the message stays, comes back, and is poisoned then
    }
    const text =
      this.#options.poisonMessageFormat === "raw"
        ? message.messageText
        : buildPoisonMessageText(message, this.#queue.name, reason, errorCodeOf(error), payloadBlob).text;
    try {
      await writer.send(text, {
        requestTimeoutInMs: this.#options.requestTimeoutInMs,
        remainingInMs: () => hold.remainingInMs(),
      });
    } catch (sendError) {
      if (isConsumerResourceError(sendError)) throw sendError;
      // The message stays in its queue and comes back after its visibility timeout.
      this.reportError(sendError, `move the message to the poison queue '${writer.name}'`, message);
      return;
    }
    const status = await this.#report(message, hold, "delete the poisoned message", () => hold.delete("delete"));
    if (status === "lost") return;
    if (status !== "done") this.remember(message.messageId, { kind: "poisoned" });
    logger.warning(`message ${message.messageId} moved to the poison queue '${writer.name}': ${reason}`);
    this.#events.emit("poisoned", { message, reason, error, poisonQueueName: writer.name });
  }

  /** Remembers a message this consumer finished but could not delete. */
  remember(messageId: string, what: Remembered): void {
    this.#remembered.delete(messageId);
    this.#remembered.set(messageId, what);
    if (this.#remembered.size > REMEMBERED_LIMIT) this.#remembered.delete(this.#remembered.keys().next().value!);
  }

  /**
   * A message this consumer finished before (see {@link remember}): deletes it without running the
   * handler and reports it as a duplicate. False for any other message.
   */
  async settleRemembered(message: ReceivedQueueMessage, hold: MessageHold): Promise<boolean> {
    const remembered = this.#remembered.get(message.messageId);
    if (!remembered) return false;
    const status = await this.delete(message, hold);
    if (status === "done") this.#remembered.delete(message.messageId);
    if (status === "done" && remembered.kind === "done") {
      this.#events.emit("duplicate", { message, key: remembered.key, result: remembered.result });
    }
    logger.verbose(
      `message ${message.messageId} was ${remembered.kind} already; received again and deleted (${status})`,
    );
    return true;
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

  /** Runs one settling call and reports a loss (`ownershipLost`) or an unknown outcome (`error`). */
  async #report(
    message: ReceivedQueueMessage,
    hold: MessageHold,
    what: string,
    call: () => Promise<HoldOutcome>,
  ): Promise<HoldOutcome["status"]> {
    if (hold.state === "receiptLost") return "receiptLost";
    if (hold.state !== "held") return "lost";
    const outcome = await call();
    if (outcome.status === "lost") this.lost(message, outcome.error);
    if (outcome.status === "unknown") this.reportError(outcome.error, what, message);
    return outcome.status;
  }
}

/** An error's message, or the value as text, redacted; never throws (`../internal/describe-error.ts`). */
export const describe: (error: unknown) => string = describeError;
