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
 *
 * The same holds when updates fail or hang: a timer of its own (the hold's expiry guard, as a lock's
 * guard gives up its lease) reports the loss when the hold's window closes with no update known to
 * have landed, whatever is in flight. An update hangs for up to `requestTimeoutInMs` and is tried
 * again within the window, so without it the loss could be heard that long after the message became
 * visible to other consumers.
 */
import { logger } from "../internal/logger.js";
import type { MessageOwnershipLostError } from "./errors.js";
import { elapsedSince, type MessageHold } from "./hold.js";

/** Options of a {@link VisibilityHeartbeat}. */
interface VisibilityHeartbeatOptions {
  readonly intervalInMs: number;
  readonly visibilityTimeoutInSeconds: number;
  /**
   * Called after each update that hid the message again (the consumer extends the idempotency
   * claim here). It runs beside the updates, one call at a time: a slow one never delays the next
   * update (an update that waited for a hanging table would let the message become visible).
   */
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
  /** The hold's expiry guard: fires when its window closes. */
  #guard: NodeJS.Timeout | undefined;
  #beat: Promise<void> | undefined;
  /** The `onBeat` call in flight, if any. */
  #extension: Promise<void> | undefined;
  #stopped = false;
  #lostReported = false;
  #lastUnknown = false;

  constructor(hold: MessageHold, options: VisibilityHeartbeatOptions) {
    this.#hold = hold;
    this.#options = options;
    this.#schedule();
    this.#watch();
  }

  /**
   * Stops beating and waits for an update in flight to finish (it is not aborted: aborting it after
   * the service applied it would leave a stale pop receipt), then for an `onBeat` in flight (a claim
   * extension: its answer carries the claim's new version). Bounded by the tries of each, each
   * under the request time limit.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearTimeout(this.#guard);
    this.#timer = undefined;
    await this.#beat;
    await this.#extension;
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
        this.#reportLost(outcome.error);
        return;
      case "receiptLost":
        logger.warning(
          `message ${this.#hold.messageId}: an update landed but its answer (the new pop receipt) was lost; ` +
            `it stays hidden for ${Math.round(this.#hold.remainingInMs())} ms more and cannot be extended or deleted by this consumer`,
        );
        this.#lostWhenVisible();
        break;
    }
    const onBeat = this.#options.onBeat;
    if (onBeat && !this.#extension && !this.#stopped) {
      this.#extension = (async () => {
        try {
          await onBeat();
        } catch (error) {
          this.#options.onError(error);
        } finally {
          this.#extension = undefined;
        }
      })();
    }
  }

  /** Tells the owner, once, that the message is lost. */
  #reportLost(error: MessageOwnershipLostError): void {
    if (this.#lostReported) return;
    this.#lostReported = true;
    this.#options.onLost(error);
  }

  /**
   * Reports the loss when the hold's window closes while the message is still held: no update known
   * to have landed since. Armed again, for the rest, while updates move the window on (or when the
   * timer fires early).
   */
  #watch(): void {
    if (this.#stopped) return;
    this.#guard = setTimeout(
      () => {
        this.#guard = undefined;
        if (this.#stopped || this.#hold.state !== "held") return;
        if (this.#hold.remainingInMs() > 0) return this.#watch();
        this.#hold.markLost();
        this.#reportLost(
          this.#hold.lostError(
            "extend the visibility of",
            new Error("no update of its visibility was known to have landed when its window closed"),
          ),
        );
      },
      Math.max(1, Math.ceil(this.#hold.remainingInMs())),
    );
    this.#guard.unref();
  }

  /** The receipt is lost: report the loss when the message may become visible to others. */
  #lostWhenVisible(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        if (this.#stopped) return;
        this.#hold.markLost();
        this.#reportLost(this.#hold.lostError("extend the visibility of", undefined));
      },
      Math.max(0, this.#hold.remainingInMs()),
    );
    this.#timer.unref();
  }
}
