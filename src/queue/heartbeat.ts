/**
 * The visibility heartbeat of one message: while its handler runs, the message is made invisible
 * again (Update Message with a new visibility timeout) every `intervalInMs`, well before the
 * previous timeout ends, so that no other consumer receives it. Each update returns a new pop
 * receipt and invalidates the old one (Azurite: src/queue/persistence/LokiQueueMetadataStore.ts
 * `updateMessage` compares the pop receipt and answers 400 PopReceiptMismatch), so the heartbeat
 * owns the message's current pop receipt and every later update or delete must use
 * {@link VisibilityHeartbeat.popReceipt} after {@link VisibilityHeartbeat.stop}.
 *
 * Update Message is last-writer-wins (the source documents): the pop receipt is what tells a
 * consumer it has lost the message. A 404 MessageNotFound or 400 PopReceiptMismatch means
 * someone else owns it now; the heartbeat then reports the loss once and stops.
 */
import type { QueueClient } from "@azure/storage-queue";
import { serviceCodeOf, statusOf } from "../errors.js";
import { logger } from "../internal/logger.js";
import { MessageOwnershipLostError } from "./errors.js";

/** True when a failed update or delete of a message means another consumer owns it now (or it is gone). */
export function isOwnershipLoss(error: unknown): boolean {
  const status = statusOf(error);
  return status === 404 || (status === 400 && serviceCodeOf(error) === "PopReceiptMismatch");
}

/** The error that reports a lost message, from the failure of `operation`. */
export function ownershipLost(messageId: string, operation: string, cause: unknown): MessageOwnershipLostError {
  const status = statusOf(cause);
  const serviceCode = serviceCodeOf(cause);
  const why =
    status === 404
      ? "the message is gone (deleted by someone else, or expired)"
      : "its pop receipt no longer matches (another consumer received it after its visibility timeout ran out)";
  return new MessageOwnershipLostError(
    `Could not ${operation} message '${messageId}': ${why}. It was not counted as processed.`,
    {
      messageId,
      lost: "message",
      operation,
      statusCode: status,
      serviceCode,
      cause,
    },
  );
}

/** Options of a {@link VisibilityHeartbeat}. */
interface VisibilityHeartbeatOptions {
  readonly intervalInMs: number;
  readonly visibilityTimeoutInSeconds: number;
  /** Called after each successful update (the consumer extends the idempotency claim here). */
  readonly onBeat?: () => Promise<void>;
  /** Called once when the message is lost; the heartbeat stops by itself. */
  readonly onLost: (error: MessageOwnershipLostError) => void;
  /** Called for any other failure of an update or of `onBeat` (the heartbeat goes on). */
  readonly onError: (error: unknown) => void;
}

/** Keeps one received message invisible while it is being processed. */
export class VisibilityHeartbeat {
  readonly #queue: QueueClient;
  readonly #messageId: string;
  readonly #options: VisibilityHeartbeatOptions;
  #popReceipt: string;
  #timer: NodeJS.Timeout | undefined;
  #beat: Promise<void> | undefined;
  #stopped = false;
  #lost = false;

  constructor(queue: QueueClient, messageId: string, popReceipt: string, options: VisibilityHeartbeatOptions) {
    this.#queue = queue;
    this.#messageId = messageId;
    this.#popReceipt = popReceipt;
    this.#options = options;
    this.#schedule();
  }

  /** The newest pop receipt: after {@link stop}, the one to settle the message with. */
  get popReceipt(): string {
    return this.#popReceipt;
  }

  /** Whether the message was found lost. */
  get lost(): boolean {
    return this.#lost;
  }

  /**
   * Stops beating and waits for an update in flight to finish (it is not aborted: aborting it after
   * the service applied it would leave a stale pop receipt).
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#beat;
  }

  #schedule(): void {
    if (this.#stopped || this.#lost) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#beat = this.#tick().finally(() => {
        this.#beat = undefined;
        this.#schedule();
      });
    }, this.#options.intervalInMs);
    this.#timer.unref();
  }

  async #tick(): Promise<void> {
    try {
      const response = await this.#queue.updateMessage(
        this.#messageId,
        this.#popReceipt,
        undefined,
        this.#options.visibilityTimeoutInSeconds,
      );
      if (response.popReceipt) this.#popReceipt = response.popReceipt;
      logger.verbose(
        `kept message ${this.#messageId} invisible for another ${this.#options.visibilityTimeoutInSeconds} s`,
      );
    } catch (error) {
      if (isOwnershipLoss(error)) {
        this.#lost = true;
        this.#options.onLost(ownershipLost(this.#messageId, "extend the visibility of", error));
        return;
      }
      this.#options.onError(error);
    }
    if (this.#options.onBeat) {
      try {
        await this.#options.onBeat();
      } catch (error) {
        this.#options.onError(error);
      }
    }
  }
}
