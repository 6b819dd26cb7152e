/**
 * The consumer's hold on one received message: its newest pop receipt, and how long the message is
 * certainly still hidden from every other consumer. Every update (heartbeat, release, retry delay)
 * and the delete go through it, each with the client-side time limit of `requests.ts`.
 *
 * Why the window matters: Update Message returns a new pop receipt and invalidates the old one.
 * When the answer to an update is lost after the service applied it, the SDK's retry (or ours)
 * sends the old receipt again and is refused, exactly as a consumer is when someone else received
 * the message. The two differ in *when*: nobody else can receive the message before its visibility
 * timeout, counted from the moment we sent the request that hid it. So a refused receipt heard
 * while the message is certainly still hidden (`remainingInMs` above zero) can only mean that one
 * of our own updates whose outcome we did not know landed: the message is hidden, by us, at least
 * until the shortest of their timeouts after the first of them was sent, but its new pop receipt is
 * unknown (`receiptLost`). A refusal heard later may be someone else's: `lost`. Likewise a 404
 * answered to a delete while the message is certainly hidden, and no update's outcome is unknown,
 * means our own delete landed (its answer was lost and the retry found nothing).
 *
 * How the refusal reads: the service's pages disagree. "Queue Storage error codes" has 400
 * PopReceiptMismatch; "Delete Message" says that when no message with a matching pop receipt is
 * found the service answers 404 (Not Found), in every case where the receipt is no longer valid
 * (https://learn.microsoft.com/rest/api/storageservices/delete-message2); Azurite answers 400
 * PopReceiptMismatch to both (docs/service-conformance.md). So both are read as a refused receipt
 * while the message is certainly hidden: for an update, 404 is `receiptLost` like 400; for a
 * delete after an update whose outcome is unknown, 404 may be that (the message is still there)
 * or an earlier try of this delete having landed (it is gone), and no read tells: `unknown`.
 *
 * An ambiguous failure (a network failure, a 5xx, the time limit) is tried again with the same
 * receipt, at most {@link MAX_TRIES} times and only while the message is certainly hidden: if the
 * first try did not land, the receipt still works; if it did, the mismatch says so.
 *
 * Times are measured from when each request was *sent* (the service can only apply it later, so
 * its timeout ends later, never earlier), on both the monotonic and the wall clock (the larger of
 * the two elapsed times counts, so a machine that slept does not think it still holds the message),
 * less a safety margin (1 s, at most a quarter of the visibility timeout: `claim-guard.ts`) for the
 * service's clock granularity, and for a handler to stop once told. The heartbeat (`heartbeat.ts`)
 * reports the loss when this window closes with no update known to have landed, even while an update
 * is still in flight.
 */
import { sdkTracing } from "../observability/scope.js";
import type { QueueClient } from "@azure/storage-queue";
import { withTimeLimit } from "../internal/time-limit.js";
import { runThrottled, throttleScopeOf, type AdaptiveRateLimiter } from "../throttling/index.js";
import { sleep } from "../internal/sleep.js";
import { MessageOwnershipLostError } from "./errors.js";
import { statusOf, serviceCodeOf } from "../errors.js";
import { safetyMarginInMs } from "../idempotency/internal.js";
import { isAmbiguous, isMessageGone, isReceiptMismatch, isResourceFailure, resourceError } from "./requests.js";

/** Tries of one update or delete whose outcome stays ambiguous. */
export const MAX_TRIES = 3;

/** A point in time on both clocks. */
export interface TimeMark {
  readonly monotonic: number;
  readonly wall: number;
}

export function markNow(): TimeMark {
  return { monotonic: performance.now(), wall: Date.now() };
}

/** Milliseconds since `mark`: the larger of the monotonic and the wall clock's reading. */
export function elapsedSince(mark: TimeMark): number {
  return Math.max(performance.now() - mark.monotonic, Date.now() - mark.wall);
}

/**
 * What an update or delete came to.
 * - `done`: it took effect (for an update: the new receipt is known).
 * - `receiptLost`: an update took effect, but its answer (the new pop receipt) was lost; the message
 *   stays hidden until the visibility timeout after it was sent and can be neither updated nor
 *   deleted by this consumer any more.
 * - `lost`: the message is gone, or someone else may hold it now.
 * - `unknown`: still ambiguous after every try; the receipt may or may not still work.
 */
export type HoldOutcome =
  | { readonly status: "done" }
  | { readonly status: "receiptLost" }
  | { readonly status: "lost"; readonly error: MessageOwnershipLostError }
  | { readonly status: "unknown"; readonly error: unknown };

/** `held`; `receiptLost` (hidden by us, but no receipt to settle it with); `lost`; `deleted`. */
type HoldState = "held" | "receiptLost" | "lost" | "deleted";

interface MessageHoldOptions {
  readonly visibilityTimeoutInSeconds: number;
  readonly requestTimeoutInMs: number;
  /** The delete waits for a token of the queue (updates keep the hold: they never wait). */
  readonly rateLimiter?: AdaptiveRateLimiter | undefined;
}

/** One received message, as held by this consumer. */
export class MessageHold {
  readonly messageId: string;
  readonly #queue: QueueClient;
  readonly #options: MessageHoldOptions;
  #popReceipt: string;
  /** When the request that last hid the message (for `#hiddenForMs`) was sent. */
  #hiddenFrom: TimeMark;
  #hiddenForMs: number;
  /** How much earlier than its visibility timeout the message is taken as possibly visible to others. */
  readonly #marginInMs: number;
  #state: HoldState = "held";
  /**
   * Updates sent since the last one known to have landed, whose outcome is not known: the earliest
   * send and the shortest timeout among them. One of them may have landed and changed the receipt.
   */
  #unconfirmed: { readonly since: TimeMark; readonly seconds: number } | undefined;

  /** @param receivedAt - when the receive that returned the message was sent. */
  constructor(
    queue: QueueClient,
    messageId: string,
    popReceipt: string,
    receivedAt: TimeMark,
    options: MessageHoldOptions,
  ) {
    this.#queue = queue;
    this.messageId = messageId;
    this.#popReceipt = popReceipt;
    this.#hiddenFrom = receivedAt;
    this.#hiddenForMs = options.visibilityTimeoutInSeconds * 1000;
    this.#marginInMs = safetyMarginInMs(options.visibilityTimeoutInSeconds * 1000);
    this.#options = options;
  }

  /** The newest pop receipt known. */
  get popReceipt(): string {
    return this.#popReceipt;
  }

  /** `held`: this consumer can update and delete the message; otherwise it cannot any more. */
  get state(): HoldState {
    return this.#state;
  }

  /** When the request that last hid the message (the receive, or the last update known to have landed) was sent. */
  get hiddenSince(): TimeMark {
    return this.#hiddenFrom;
  }

  /** How long the message is certainly still hidden from other consumers (≤ 0: it may not be). */
  remainingInMs(): number {
    return this.#hiddenForMs - this.#marginInMs - elapsedSince(this.#hiddenFrom);
  }

  /** Hides the message for `seconds` from now (0: visible at once). */
  update(seconds: number, operation: string): Promise<HoldOutcome> {
    return this.#tryRepeatedly(operation, false, async (abortSignal) => {
      const sent = markNow();
      this.#unconfirmed = {
        since: this.#unconfirmed?.since ?? sent,
        seconds: Math.min(this.#unconfirmed?.seconds ?? seconds, seconds),
      };
      try {
        const response = await this.#queue.updateMessage(this.messageId, this.#popReceipt, undefined, seconds, {
          abortSignal,
          tracingOptions: sdkTracing(),
        });
        if (response.popReceipt) this.#popReceipt = response.popReceipt;
        // The receipt still worked: none of the unconfirmed updates landed.
        this.#unconfirmed = undefined;
        this.#hidden(sent, seconds);
        return { status: "done" };
      } catch (error) {
        // Refused while certainly hidden: one of our updates landed (400 or 404, see the module notes).
        if ((isReceiptMismatch(error) || isMessageGone(error)) && this.remainingInMs() > 0) return this.#receiptLost();
        throw error;
      }
    });
  }

  /** Deletes the message. */
  delete(operation: string): Promise<HoldOutcome> {
    return this.#tryRepeatedly(operation, true, async (abortSignal) => {
      try {
        await this.#queue.deleteMessage(this.messageId, this.#popReceipt, {
          abortSignal,
          tracingOptions: sdkTracing(),
        });
      } catch (error) {
        if (this.remainingInMs() > 0 && this.#unconfirmed) {
          // One of our updates whose answer was lost had landed: the receipt is stale, nobody else's doing.
          if (isReceiptMismatch(error)) return this.#receiptLost();
          // The service's 404 for a stale receipt, or for our own delete that landed: no read tells which.
          if (isMessageGone(error)) return { status: "unknown", error };
        }
        // Nobody else could have deleted it: our delete landed and its answer was lost (or it expired).
        if (!(isMessageGone(error) && this.remainingInMs() > 0)) throw error;
      }
      this.#state = "deleted";
      return { status: "done" };
    });
  }

  /**
   * A mismatch heard while nobody else can hold the message: one of our unconfirmed updates landed,
   * sent no earlier than the first of them, for no less than the shortest of their timeouts.
   */
  #receiptLost(): HoldOutcome {
    const { since, seconds } = this.#unconfirmed!;
    this.#hidden(since, seconds);
    this.#state = "receiptLost";
    return { status: "receiptLost" };
  }

  /** Records that the message is lost (the idempotency claim was taken over, for instance). */
  markLost(): void {
    this.#state = "lost";
  }

  /** Hides the message for `seconds` from `sent` on (0: the hold ends). */
  #hidden(sent: TimeMark, seconds: number): void {
    this.#hiddenFrom = sent;
    this.#hiddenForMs = seconds * 1000;
  }

  /** The lost-ownership error for a failure of `operation`. */
  lostError(operation: string, cause: unknown): MessageOwnershipLostError {
    const status = statusOf(cause);
    const why =
      cause === undefined
        ? "the answer to an update was lost with its new pop receipt, and the message's visibility timeout has run out since"
        : status === 404
          ? "the message is gone (deleted by someone else, or expired)"
          : isReceiptMismatch(cause)
            ? "its pop receipt no longer matches (another consumer received it after its visibility timeout ran out)"
            : "its outcome stayed unknown until the message's visibility timeout ran out";
    return new MessageOwnershipLostError(
      `Could not ${operation} message '${this.messageId}': ${why}. It was not counted as processed.`,
      {
        messageId: this.messageId,
        lost: "message",
        operation,
        statusCode: status,
        serviceCode: serviceCodeOf(cause),
        cause,
      },
    );
  }

  async #tryRepeatedly(
    operation: string,
    throttled: boolean,
    attempt: (abortSignal: AbortSignal) => Promise<HoldOutcome>,
  ): Promise<HoldOutcome> {
    const limiter = throttled ? this.#options.rateLimiter : undefined;
    const scope = () => throttleScopeOf(this.#queue.url, { service: "queue" });
    if (this.#state !== "held")
      return { status: "unknown", error: new Error(`the message is no longer held (${this.#state})`) };
    let lastError: unknown;
    for (let tries = 1; tries <= MAX_TRIES; tries++) {
      try {
        const send = () =>
          withTimeLimit(
            `${operation} message '${this.messageId}'`,
            this.#options.requestTimeoutInMs,
            undefined,
            attempt,
          );
        return await runThrottled(limiter, scope, send);
      } catch (error) {
        if (isResourceFailure(error))
          throw resourceError("queue", this.#queue.name, `${operation} message '${this.messageId}'`, error);
        if (isReceiptMismatch(error) || isMessageGone(error)) {
          this.#state = "lost";
          return { status: "lost", error: this.lostError(operation, error) };
        }
        if (!isAmbiguous(error)) throw error;
        lastError = error;
      }
      if (this.remainingInMs() <= 0) break;
      await sleep(Math.min(100 * tries, this.remainingInMs()));
    }
    if (this.remainingInMs() > 0) return { status: "unknown", error: lastError };
    // Still unknown, and the message may be visible to others by now.
    this.#state = "lost";
    return { status: "lost", error: this.lostError(operation, lastError) };
  }
}
