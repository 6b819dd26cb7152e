/**
 * The visibility heartbeat of one message: while its handler runs, the message is hidden again for
 * the full visibility timeout every `intervalInMs` (counted from when the request that last hid it
 * was sent), well before that timeout ends, so that no other consumer receives it. The updates go
 * through the message's {@link MessageHold}, which keeps the newest pop receipt and sorts out
 * ambiguous answers (see `hold.ts`).
 *
 * Update Message is last-writer-wins (the source documents): the pop receipt is what tells a
 * consumer it has lost the message. When the hold finds the message lost, the heartbeat reports it
 * once and stops. When an update landed but its answer (the new receipt) was lost, the message is
 * still ours until the visibility timeout after that update, but cannot be hidden again: the
 * heartbeat then stops beating and reports the loss when that time has come, so that a handler
 * still running by then is aborted before another consumer can receive the message.
 */
import { logger } from "../internal/logger.js";
import type { MessageOwnershipLostError } from "./errors.js";
import { elapsedSince, type MessageHold } from "./hold.js";

/** Options of a {@link VisibilityHeartbeat}. */
interface VisibilityHeartbeatOptions {
  readonly intervalInMs: number;
  readonly visibilityTimeoutInSeconds: number;
  /** Called after each update that hid the message again (the consumer extends the idempotency claim here). */
  readonly onBeat?: () => Promise<void>;
  /** Called once when the message is lost; the heartbeat stops by itself. */
  readonly onLost: (error: MessageOwnershipLostError) => void;
  /** Called for any other failure of an update or of `onBeat` (the heartbeat goes on). */
  readonly onError: (error: unknown) => void;
}

/** After an update whose outcome stayed unknown, the wait before the next one. */
const PAUSE_AFTER_UNKNOWN_IN_MS = 250;

/** Keeps one received message invisible while it is being processed. */
export class VisibilityHeartbeat {
  readonly #hold: MessageHold;
  readonly #options: VisibilityHeartbeatOptions;
  #timer: NodeJS.Timeout | undefined;
  #beat: Promise<void> | undefined;
  #stopped = false;
  #lastUnknown = false;

  constructor(hold: MessageHold, options: VisibilityHeartbeatOptions) {
    this.#hold = hold;
    this.#options = options;
    this.#schedule();
  }

  /**
   * Stops beating and waits for an update in flight to finish (it is not aborted: aborting it after
   * the service applied it would leave a stale pop receipt). Bounded by the hold's tries, each
   * under the request time limit.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#beat;
  }

  #schedule(): void {
    if (this.#stopped || this.#hold.state !== "held") return;
    const due = this.#options.intervalInMs - elapsedSince(this.#hold.hiddenSince);
    const delay = Math.max(due, this.#lastUnknown ? PAUSE_AFTER_UNKNOWN_IN_MS : 0);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#beat = this.#tick().finally(() => {
        this.#beat = undefined;
        this.#schedule();
      });
    }, delay);
    this.#timer.unref();
  }

  async #tick(): Promise<void> {
    let outcome;
    try {
      outcome = await this.#hold.update(this.#options.visibilityTimeoutInSeconds, "extend the visibility of");
    } catch (error) {
      this.#options.onError(error);
      return;
    }
    this.#lastUnknown = outcome.status === "unknown";
    switch (outcome.status) {
      case "done":
        logger.verbose(
          `kept message ${this.#hold.messageId} invisible for another ${this.#options.visibilityTimeoutInSeconds} s`,
        );
        break;
      case "unknown":
        this.#options.onError(outcome.error);
        return;
      case "lost":
        this.#options.onLost(outcome.error);
        return;
      case "receiptLost":
        logger.warning(
          `message ${this.#hold.messageId}: an update landed but its answer (the new pop receipt) was lost; ` +
            `it stays hidden for ${Math.round(this.#hold.remainingInMs())} ms more and cannot be extended or deleted by this consumer`,
        );
        this.#lostWhenVisible();
        break;
    }
    if (this.#options.onBeat) {
      try {
        await this.#options.onBeat();
      } catch (error) {
        this.#options.onError(error);
      }
    }
  }

  /** The receipt is lost: report the loss when the message may become visible to others. */
  #lostWhenVisible(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        if (this.#stopped) return;
        this.#hold.markLost();
        this.#options.onLost(this.#hold.lostError("extend the visibility of", undefined));
      },
      Math.max(0, this.#hold.remainingInMs()),
    );
    this.#timer.unref();
  }
}
