/**
 * One received message, from reception to settling: recognise a message this consumer finished
 * before, poison one received too often, decode, claim its idempotency key (waiting while another
 * consumer holds it), run the handler with a heartbeat, complete the claim, delete. Failures of the
 * handler fail the attempt (retry later, poison at `maxDequeueCount`); a missing resource or a
 * refused credential ends the consumer instead ({@link ConsumerResourceError}) and never counts
 * against the message.
 */
import type { DequeuedMessageItem, QueueClient } from "@azure/storage-queue";
import { logger } from "../internal/logger.js";
import { sleep } from "../internal/sleep.js";
import { claimLost, type StoreCalls } from "./claims.js";
import {
  ConsumerStoppedError,
  isConsumerResourceError,
  isConsumerStoppedError,
  isIdempotencyClaimLostError,
  isMessageDecodeError,
  isMessageOwnershipLostError,
  MessageDecodeError,
  type ConsumerResourceError,
  type MessageOwnershipLostError,
} from "./errors.js";
import type { TypedEvents } from "./events.js";
import { VisibilityHeartbeat } from "./heartbeat.js";
import { MessageHold, type TimeMark } from "./hold.js";
import type { IdempotencyClaim } from "./idempotency/store.js";
import { MAX_VISIBILITY_TIMEOUT_IN_SECONDS, type ResolvedOptions } from "./options.js";
import { describe, type MessageSettler } from "./settle.js";
import type { MessageContext, MessageHandler, QueueConsumerEvents, ReceivedQueueMessage } from "./types.js";

/** What processing a message needs of its consumer. */
interface ProcessingContext<T, TEffect> {
  readonly queue: QueueClient;
  readonly handler: MessageHandler<T, TEffect>;
  readonly options: ResolvedOptions<T, TEffect>;
  readonly events: TypedEvents<QueueConsumerEvents>;
  readonly settle: MessageSettler;
  readonly store: StoreCalls<TEffect> | undefined;
  /** Aborted when the consumer stops: waits for a busy key end at once. */
  readonly stopping: AbortSignal;
  /** The running handlers' controllers, for `stop()` and a failure of the consumer to abort. */
  readonly controllers: Set<AbortController>;
  /** Ends the consumer: a resource it needs is missing or refuses it. */
  fail(error: ConsumerResourceError): void;
}

/** One message being handled: what its settling needs to know. */
interface Work {
  readonly message: ReceivedQueueMessage;
  readonly hold: MessageHold;
  readonly controller: AbortController;
  readonly heartbeat: VisibilityHeartbeat;
  claim: IdempotencyClaim | undefined;
  /** Set once the heartbeat (or the claim's extension) found the message or its claim lost. */
  lostError: MessageOwnershipLostError | undefined;
}

export class MessageProcessor<T, TEffect> {
  readonly #c: ProcessingContext<T, TEffect>;

  constructor(context: ProcessingContext<T, TEffect>) {
    this.#c = context;
  }

  /** Processes one received message; never throws. `receivedAt`: when its receive was sent. */
  async process(item: DequeuedMessageItem, receivedAt: TimeMark): Promise<void> {
    const { options, settle, events } = this.#c;
    const message = toReceived(item);
    const hold = new MessageHold(this.#c.queue, message.messageId, item.popReceipt, receivedAt, {
      visibilityTimeoutInSeconds: options.visibilityTimeoutInSeconds,
      requestTimeoutInMs: options.requestTimeoutInMs,
    });
    try {
      events.emit("received", { message });
      if (await settle.settleRemembered(message, hold)) return;
      if (message.dequeueCount > options.maxDequeueCount) {
        const reason =
          `The message was received ${message.dequeueCount} times (maxDequeueCount ${options.maxDequeueCount}) without being settled: ` +
          "its consumers stopped or crashed while processing it.";
        await settle.poison(message, hold, reason, undefined);
        return;
      }
      let body: T;
      try {
        body = options.codec.decode(item.messageText);
      } catch (error) {
        const decodeError = isMessageDecodeError(error)
          ? error
          : new MessageDecodeError(
              `The codec '${options.codec.name}' could not decode the message body: ${describe(error)}`,
              {
                codec: options.codec.name,
                messageId: message.messageId,
                cause: error,
              },
            );
        await settle.poison(message, hold, decodeError.message, decodeError);
        return;
      }
      await this.#handle(message, hold, body);
    } catch (error) {
      if (isConsumerResourceError(error)) this.#c.fail(error);
      else settle.reportError(error, "process message", message);
    }
  }

  async #handle(message: ReceivedQueueMessage, hold: MessageHold, body: T): Promise<void> {
    const { options, settle, store } = this.#c;
    const controller = new AbortController();
    this.#c.controllers.add(controller);
    const loseOwnership = (error: MessageOwnershipLostError) => {
      work.lostError ??= error;
      if (!controller.signal.aborted) controller.abort(error);
    };
    // The callbacks run on the first beat at the earliest, once `work` exists.
    const heartbeat = new VisibilityHeartbeat(hold, {
      intervalInMs: options.heartbeatIntervalInMs,
      visibilityTimeoutInSeconds: options.visibilityTimeoutInSeconds,
      onLost: loseOwnership,
      onError: (error) => {
        if (isConsumerResourceError(error)) this.#c.fail(error);
        else settle.reportError(error, "keep the message invisible", message);
      },
      onBeat: async () => {
        if (!work.claim || !store || work.lostError) return;
        try {
          work.claim = await store.extend(work.claim, options.visibilityTimeoutInSeconds * 1000, hold);
        } catch (error) {
          if (!isIdempotencyClaimLostError(error)) throw error;
          loseOwnership(claimLost(message.messageId, "extend-claim", error));
        }
      },
    });
    const work: Work = { message, hold, controller, heartbeat, claim: undefined, lostError: undefined };
    try {
      if (store && !(await this.#claimKey(work, store, body))) return;
      const claim = work.claim;
      const effects: TEffect[] = [];
      const context: MessageContext<TEffect> = {
        message,
        abortSignal: controller.signal,
        get popReceipt() {
          return hold.popReceipt;
        },
        idempotency: claim && { key: claim.key, partitionKey: claim.partitionKey, takenOverFrom: claim.takenOverFrom },
        addEffects(...added: TEffect[]) {
          if (!claim)
            throw new TypeError("addEffects() needs an idempotency store: set the consumer's `idempotency` option.");
          effects.push(...added);
        },
      };
      const started = performance.now();
      let result: unknown;
      let failure: { error: unknown } | undefined;
      try {
        result = await this.#c.handler(body, context);
      } catch (error) {
        failure = { error };
      }
      await heartbeat.stop();
      if (failure) {
        if (controller.signal.aborted) await this.#afterAbort(work, controller.signal.reason);
        else await this.#fail(work, failure.error);
        return;
      }
      // The handler finished although it was told the claim was lost: its done mark cannot be written.
      if (work.lostError?.lost === "claim") return settle.lost(message, work.lostError);
      if (work.claim && store) {
        try {
          await store.complete(work.claim, result, effects, hold);
        } catch (error) {
          if (isIdempotencyClaimLostError(error))
            settle.lost(message, claimLost(message.messageId, "complete-claim", error));
          else if (isConsumerResourceError(error)) throw error;
          else await this.#fail(work, error);
          return;
        }
      }
      if (work.lostError) {
        // Done (and its done mark written, while the claim was still ours), but the message may be someone else's now.
        settle.remember(message.messageId, { kind: "done", key: work.claim?.key ?? message.messageId, result });
        return settle.lost(message, work.lostError);
      }
      await this.#deleteDone(work, result, performance.now() - started);
    } finally {
      this.#c.controllers.delete(controller);
      await heartbeat.stop();
    }
  }

  /** Deletes a message whose work is done; remembers it when it cannot be deleted (see `settle.ts`). */
  async #deleteDone(work: Work, result: unknown, durationInMs: number): Promise<void> {
    const { message, hold } = work;
    const status = await this.#c.settle.delete(message, hold);
    if (status === "lost") return;
    if (status !== "done") {
      this.#c.settle.remember(message.messageId, { kind: "done", key: work.claim?.key ?? message.messageId, result });
    }
    if (status === "unknown") return;
    this.#c.events.emit("processed", { message, result, durationInMs, messageDeleted: status === "done" });
  }

  /**
   * Claims the message's idempotency key into `work.claim`. False when the message was settled
   * instead: its key is done (deleted as a duplicate), the key could not be derived (poisoned), the
   * claim failed (a failed attempt), or the consumer stopped while another consumer held the key
   * (the message is made visible again). While another consumer holds the key, the message waits
   * here, kept invisible by its heartbeat: waiting is no delivery, so it never counts towards
   * poisoning.
   */
  async #claimKey(work: Work, store: StoreCalls<TEffect>, body: T): Promise<boolean> {
    const idempotency = this.#c.options.idempotency!;
    const { settle, options, events } = this.#c;
    const { message, hold, heartbeat, controller } = work;
    let key: string;
    let partitionKey: string | undefined;
    try {
      key = idempotency.key(body, message);
      partitionKey = idempotency.partitionKey?.(body, message);
      if (typeof key !== "string" || key === "")
        throw new TypeError(`the key function returned ${JSON.stringify(key)}`);
    } catch (error) {
      await heartbeat.stop();
      await settle.poison(message, hold, `Could not derive the idempotency key: ${describe(error)}`, error);
      return false;
    }
    const request = {
      key,
      partitionKey,
      owner: options.consumerId,
      messageId: message.messageId,
      dequeueCount: message.dequeueCount,
      ttlInMs: options.visibilityTimeoutInSeconds * 1000,
      firstDelivery: idempotency.keyIsMessageId && message.dequeueCount === 1,
    };
    for (;;) {
      let outcome;
      try {
        outcome = await store.claim(request, hold, controller.signal);
      } catch (error) {
        await heartbeat.stop();
        if (isConsumerResourceError(error)) throw error;
        if (controller.signal.aborted) await this.#afterAbort(work, controller.signal.reason);
        else
          await this.#fail(
            work,
            new Error(`Could not claim idempotency key '${key}': ${describe(error)}`, { cause: error }),
          );
        return false;
      }
      if (outcome.status === "claimed") {
        work.claim = outcome.claim;
        return true;
      }
      if (outcome.status === "done") {
        await heartbeat.stop();
        if ((await settle.delete(message, hold)) === "done")
          events.emit("duplicate", { message, key, result: outcome.result });
        return false;
      }
      const untilExpiry = Math.max(0, outcome.expiresOn.getTime() - Date.now()) + 100;
      const waitInMs = Math.min(untilExpiry, options.heartbeatIntervalInMs);
      events.emit("deferred", { message, key, owner: outcome.owner, expiresOn: outcome.expiresOn, waitInMs });
      const waited = await sleep(waitInMs, AbortSignal.any([controller.signal, this.#c.stopping])).then(
        () => true,
        () => false,
      );
      if (waited) continue;
      await heartbeat.stop();
      if (controller.signal.aborted) await this.#afterAbort(work, controller.signal.reason);
      else if (await settle.release(message, hold))
        logger.verbose(`message ${message.messageId} put back: stopping while its key '${key}' is busy`);
      return false;
    }
  }

  /** The handler (or claim) failed because its signal was aborted: by `stop()`, a lost message or claim, or a failure of the consumer. */
  async #afterAbort(work: Work, reason: unknown): Promise<void> {
    const { message, hold, claim } = work;
    // The consumer is failing: its resources are gone or refused; the message comes back by itself.
    if (isConsumerResourceError(reason)) return;
    if (isMessageOwnershipLostError(reason)) {
      if (claim && reason.lost === "message") await this.#releaseClaim(message, claim);
      this.#c.settle.lost(message, reason);
      return;
    }
    // Stopped: give the message back at once, without counting it as a failure of the message.
    if (claim) await this.#releaseClaim(message, claim);
    if (await this.#c.settle.release(message, hold)) {
      const error = isConsumerStoppedError(reason) ? reason : new ConsumerStoppedError();
      this.#c.events.emit("failed", { message, error, willRetry: true, retryInSeconds: 0 });
    }
  }

  async #fail(work: Work, error: unknown): Promise<void> {
    const { message, hold, claim } = work;
    const { options, settle, events } = this.#c;
    if (isConsumerResourceError(error)) throw error;
    if (claim) await this.#releaseClaim(message, claim);
    if (hold.state === "receiptLost") {
      // It cannot be updated any more: it comes back when the visibility timeout of the update that landed ends.
      const retryInSeconds = Math.max(0, Math.ceil(hold.remainingInMs() / 1000));
      events.emit("failed", { message, error, willRetry: true, retryInSeconds });
      return;
    }
    if (message.dequeueCount >= options.maxDequeueCount) {
      events.emit("failed", { message, error, willRetry: false, retryInSeconds: undefined });
      const reason = `Failed on each of ${message.dequeueCount} receptions (maxDequeueCount ${options.maxDequeueCount}); last error: ${describe(error)}`;
      await settle.poison(message, hold, reason, error);
      return;
    }
    const delayInMs = options.retryBackoff.delayInMs(message.dequeueCount, 0);
    const retryInSeconds = Math.min(MAX_VISIBILITY_TIMEOUT_IN_SECONDS, Math.max(0, Math.ceil(delayInMs / 1000)));
    const status = await settle.setVisibility(message, hold, retryInSeconds);
    if (status === "done" || status === "receiptLost") {
      logger.verbose(
        `message ${message.messageId} failed on reception ${message.dequeueCount} (${describe(error)}); visible again in ${retryInSeconds} s`,
      );
      events.emit("failed", { message, error, willRetry: true, retryInSeconds });
    }
  }

  async #releaseClaim(message: ReceivedQueueMessage, claim: IdempotencyClaim): Promise<void> {
    try {
      await this.#c.store!.release(claim);
    } catch (error) {
      if (isConsumerResourceError(error)) throw error;
      // It expires with the visibility timeout anyway.
      this.#c.settle.reportError(error, "release the idempotency claim", message);
    }
  }
}

export function toReceived(item: DequeuedMessageItem): ReceivedQueueMessage {
  return {
    messageId: item.messageId,
    messageText: item.messageText,
    dequeueCount: item.dequeueCount,
    insertedOn: item.insertedOn,
    expiresOn: item.expiresOn,
  };
}
