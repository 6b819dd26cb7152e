/**
 * The pipeline's claim step (`pipeline.ts` lists the steps): from a received message to a
 * {@link Work} ready for its handler: recognise a message this
 * consumer finished before, poison one received too often or whose body does not decode, start its
 * heartbeat, and claim its idempotency key (waiting while another consumer holds it). A message
 * settled on the way (a duplicate, a poison, a failed claim, put back because the consumer stops)
 * gives no Work.
 */
import type { DequeuedMessageItem } from "@azure/storage-queue";
import { logger } from "../internal/logger.js";
import { currentScope } from "../observability/scope.js";
import { sleep } from "../internal/sleep.js";
import type { AttemptSettler } from "./settle.js";
import { sentNow } from "../lease/internal.js";
import { ClaimGuard, claimGivenUp } from "../idempotency/internal.js";
import type { StoreCalls } from "../idempotency/internal.js";
import { claimLost } from "./requests.js";
import { openMessage, type OpenedMessage } from "./claim-check-hook.js";
import { isEnvelopeText, parseEnvelope } from "./envelope.js";
import {
  ConsumerResourceError,
  isConsumerResourceError,
  isMessageDecodeError,
  MessageDecodeError,
  MessageOwnershipLostError,
} from "./errors.js";
import { isIdempotencyClaimLostError } from "../idempotency/index.js";
import { VisibilityHeartbeat } from "./heartbeat.js";
import { MessageHold, type TimeMark } from "./hold.js";
import { MAX_VISIBILITY_TIMEOUT_IN_SECONDS } from "./options.js";
import { isAmbiguous } from "./requests.js";
import { describe } from "./message-settler.js";
import type { ReceivedQueueMessage } from "./types.js";
import type { ProcessingContext, Work } from "./pipeline.js";

export class MessageReception<T, TEffect> {
  readonly #c: ProcessingContext<T, TEffect>;
  readonly #attempt: AttemptSettler<T, TEffect>;

  constructor(context: ProcessingContext<T, TEffect>, attempt: AttemptSettler<T, TEffect>) {
    this.#c = context;
    this.#attempt = attempt;
  }

  /**
   * The message's Work, or undefined when it was settled here. `receivedAt`: when its receive was
   * sent. `onDeferred` is called when the message starts waiting for a busy key.
   */
  async receive(
    item: DequeuedMessageItem,
    receivedAt: TimeMark,
    onDeferred?: () => void,
  ): Promise<Work<T, TEffect> | undefined> {
    const { options, settle, events } = this.#c;
    const message = toReceived(item);
    const hold = new MessageHold(this.#c.queue, message.messageId, item.popReceipt, receivedAt, {
      visibilityTimeoutInSeconds: options.visibilityTimeoutInSeconds,
      requestTimeoutInMs: options.requestTimeoutInMs,
      rateLimiter: options.rateLimiter,
    });
    events.emit("received", { message });
    if (await settle.settleRemembered(message, hold)) return undefined;
    const store = this.#c.store;
    // Received too often. Without a store nothing says it was done: poisoned now. With one, only
    // once the store has answered that its key is not done (`#claimKey`): a done key is a duplicate.
    if (!store && message.dequeueCount > options.maxDequeueCount) {
      await settle.poison(message, hold, receivedTooOften(message, options.maxDequeueCount), undefined);
      return undefined;
    }
    const opened = options.claimCheck ? await this.#open(item.messageText, hold) : this.#openEnvelope(message);
    if (opened?.status === "misconfigured") return undefined; // the consumer ends; the message comes back
    if (opened?.status === "retry") {
      await this.#retryLater(message, hold, opened.error);
      return undefined;
    }
    let body: T;
    try {
      if (opened?.status === "poison") throw opened.error;
      body =
        opened?.status === "gone" ? (undefined as T) : options.codec.decode(opened?.messageText ?? item.messageText);
    } catch (error) {
      const decodeError = isMessageDecodeError(error)
        ? error
        : new MessageDecodeError(
            `The codec '${options.codec.name}' could not decode the message body: ${describe(error)}`,
            { codec: options.codec.name, messageId: message.messageId, cause: error },
          );
      await settle.poison(message, hold, decodeError.message, decodeError);
      return undefined;
    }
    const work = this.#start(message, hold, body, opened);
    if (store && !(await this.#claimKey(work, store, onDeferred))) {
      await this.#attempt.finish(work);
      return undefined;
    }
    return work;
  }

  /**
   * Reads a message sent through the claim-check (`claim-check-hook.ts`), within what is left of its
   * visibility timeout; a message that cannot be read (a {@link MessageDecodeError}) is `poison`.
   */
  async #open(messageText: string, hold: MessageHold): Promise<OpenedMessage | { status: "poison"; error: unknown }> {
    const { options, store } = this.#c;
    const idempotency = options.idempotency;
    try {
      return await openMessage(options.claimCheck!, messageText, {
        timeLimitInMs: Math.max(options.requestTimeoutInMs, hold.remainingInMs() - options.requestTimeoutInMs),
        canAskStore: !!store && !!idempotency?.keyIsMessageId && idempotency.partitionKey === undefined,
      });
    } catch (error) {
      return { status: "poison", error };
    }
  }

  /**
   * A claim-check envelope received by a consumer without the `claimCheck` option (the message
   * text of anything an `OutboxRelay` or `ClaimCheck.sendMessage` sent with a key): its key is the
   * message's idempotency key all the same, so that a relay's second send after a crash has no
   * second effect whatever the consumer's options (issue 25). An inline envelope carries its text:
   * it is read here. One that references a payload blob cannot be read without a `ClaimCheck`: the
   * consumer ends at once with a {@link ConsumerResourceError} (`resource: "claimCheck"`) that says
   * what to configure, and the message is left as it is (it comes back after its visibility
   * timeout, with its payload, for a consumer configured to read it). Plain messages pay one
   * `startsWith`.
   */
  #openEnvelope(
    message: ReceivedQueueMessage,
  ): OpenedMessage | { status: "poison"; error: unknown } | { status: "misconfigured" } | undefined {
    if (!isEnvelopeText(message.messageText)) return undefined;
    let envelope;
    try {
      envelope = parseEnvelope(message.messageText)!;
    } catch (error) {
      return { status: "poison", error };
    }
    if ("text" in envelope) return { status: "resolved", messageText: envelope.text, idempotencyKey: envelope.key };
    this.#c.fail(
      new ConsumerResourceError(
        `Message '${message.messageId}' is a claim-check reference to the payload blob '${envelope.blob}' in container ` +
          `'${envelope.container}' (an outbox or claim-check message too large for the queue), and the consumer has no ` +
          "`claimCheck` option to read it with. Give the consumer `claimCheck: new ClaimCheck(containerClient)` for that " +
          "container. The message was left in the queue, untouched, with its payload.",
        { resource: "claimCheck", resourceName: envelope.container, transient: false },
      ),
    );
    return { status: "misconfigured" };
  }

  /** A payload that could not be read for a reason that may pass: the message comes back after `retryBackoff`. */
  async #retryLater(message: ReceivedQueueMessage, hold: MessageHold, error: unknown): Promise<void> {
    const { options, settle, events } = this.#c;
    settle.reportError(error, "read the message's claim-check payload", message);
    const delayInMs = options.retryBackoff.delayInMs(message.dequeueCount, 0);
    const retryInSeconds = Math.min(MAX_VISIBILITY_TIMEOUT_IN_SECONDS, Math.max(0, Math.ceil(delayInMs / 1000)));
    const status = await settle.setVisibility(message, hold, retryInSeconds);
    if (status === "done" || status === "receiptLost")
      events.emit("failed", { message, error, willRetry: true, retryInSeconds });
  }

  /** The Work of a decoded message: its abort controller and its heartbeat, which extends its claim. */
  #start(
    message: ReceivedQueueMessage,
    hold: MessageHold,
    body: T,
    opened: OpenedMessage | undefined,
  ): Work<T, TEffect> {
    const { options, settle, store } = this.#c;
    const controller = new AbortController();
    this.#c.controllers.add(controller);
    const loseOwnership = (error: MessageOwnershipLostError) => loseOwnershipOf(work, error);
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
          work.claimGuard?.extending();
          work.claim = await store.extend(work.claim, options.visibilityTimeoutInSeconds * 1000, hold);
          work.claimGuard?.extended();
        } catch (error) {
          if (!isIdempotencyClaimLostError(error)) throw error;
          loseOwnership(claimLost(message.messageId, "extend-claim", error));
        }
      },
    });
    const work: Work<T, TEffect> = {
      message,
      body,
      hold,
      carriedKey: opened?.status === "resolved" || opened?.status === "gone" ? opened.idempotencyKey : undefined,
      payloadGone: opened?.status === "gone",
      controller,
      heartbeat,
      claim: undefined,
      claimGuard: undefined,
      lostError: undefined,
      effects: [],
      closed: false,
      trace: currentScope(),
    };
    return work;
  }

  /**
   * Claims the message's idempotency key into `work.claim`. False when the message was settled
   * instead: its key is done (deleted as a duplicate, however often it was received), the key could
   * not be derived (poisoned), it was received more than `maxDequeueCount` times and its key is not
   * done (claimed, released and poisoned), the claim failed (a failed attempt), or the consumer
   * stopped while another consumer held the key (the message is made visible again). While another
   * consumer holds the key, the message waits here, kept invisible by its heartbeat: waiting is no
   * delivery, so it never counts towards poisoning.
   *
   * A claim that fails without an answer (a network failure, a time limit, a 5xx) says nothing
   * about the done record: the message is retried later and never poisoned for it, whatever its
   * dequeue count. Only an answer poisons: "not done", or a refusal of the key itself (a 4xx or a
   * check of the store's), which no done record can have been written for.
   */
  async #claimKey(work: Work<T, TEffect>, store: StoreCalls<TEffect>, onDeferred?: () => void): Promise<boolean> {
    const idempotency = this.#c.options.idempotency!;
    const { settle, options, events } = this.#c;
    const { message, hold, heartbeat, controller, body } = work;
    let key: string;
    let partitionKey: string | undefined;
    try {
      // The key the message carries (an outbox row's id) is the default, before the message id.
      key =
        idempotency.keyIsMessageId && work.carriedKey !== undefined ? work.carriedKey : idempotency.key(body, message);
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
      firstDelivery: claimIsDeferred(idempotency, work),
    };
    for (;;) {
      let outcome;
      const sent = sentNow(); // the claim lasts its duration from here at least (see claim-guard.ts)
      try {
        outcome = await store.claim(request, hold, controller.signal);
      } catch (error) {
        await heartbeat.stop();
        if (isConsumerResourceError(error)) throw error;
        if (controller.signal.aborted) await this.#attempt.afterAbort(work, controller.signal.reason);
        else
          await this.#attempt.fail(
            work,
            new Error(`Could not claim idempotency key '${key}': ${describe(error)}`, { cause: error }),
            { mayPoison: !isAmbiguous(error) },
          );
        return false;
      }
      if (outcome.status === "claimed") {
        work.claim = outcome.claim;
        if (work.payloadGone) {
          // Not done, and its payload gone: no copy of it was settled, the payload was lost.
          await heartbeat.stop();
          await this.#attempt.poisonClaimed(
            work,
            `Its claim-check payload is gone and its key '${key}' is not done: the payload was lost (deleted by hand?).`,
          );
          return false;
        }
        if (message.dequeueCount > options.maxDequeueCount) {
          await heartbeat.stop();
          await this.#attempt.poisonClaimed(work, receivedTooOften(message, options.maxDequeueCount));
          return false;
        }
        // A first delivery's claim wrote no record: nobody but a redelivery can take its key, and the hold guards that.
        if (outcome.claim.etag !== undefined) {
          work.claimGuard = new ClaimGuard(request.ttlInMs, sent, (expiry) => {
            const cause = claimGivenUp(key, request.ttlInMs, expiry);
            loseOwnershipOf(
              work,
              new MessageOwnershipLostError(`${cause.message} (message '${message.messageId}')`, {
                messageId: message.messageId,
                lost: "claim",
                operation: "expiry-guard",
                cause,
              }),
            );
          });
        }
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
      onDeferred?.();
      const waited = await sleep(waitInMs, AbortSignal.any([controller.signal, this.#c.stopping])).then(
        () => true,
        () => false,
      );
      if (waited) continue;
      await heartbeat.stop();
      if (controller.signal.aborted) await this.#attempt.afterAbort(work, controller.signal.reason);
      else if (await settle.release(message, hold))
        logger.verbose(`message ${message.messageId} put back: stopping while its key '${key}' is busy`);
      return false;
    }
  }
}

/**
 * Whether a message's key is claimed only with its done mark (a `firstDelivery` claim: nothing is
 * written before the handler runs; the done mark is an insert that fails if the key has a record).
 * Only on a first delivery (a redelivery is claimed, so that a done key is recognised without
 * running the handler, and so that poisoning asks the store first), and only when no other
 * delivery can apply effects twice:
 * - the key is the message id, not one carried by the message: no other delivery of it can exist
 *   yet (a redelivery only comes once this consumer's hold has run out), so even external effects
 *   happen once;
 * - or the handler declared `effects: "tables-only"`: another delivery of the key (a producer's
 *   duplicate) may run at the same time, but effects apply only in the done mark's transaction, and
 *   of two inserts of one record exactly one succeeds (issue 27).
 * A message whose claim-check payload is gone is settled by the store's answer alone: it is claimed.
 */
export function claimIsDeferred(
  idempotency: { readonly keyIsMessageId: boolean; readonly tablesOnlyEffects: boolean },
  work: {
    readonly message: { readonly dequeueCount: number };
    readonly carriedKey: string | undefined;
    readonly payloadGone: boolean;
  },
): boolean {
  if (work.message.dequeueCount !== 1 || work.payloadGone) return false;
  return idempotency.tablesOnlyEffects || (idempotency.keyIsMessageId && work.carriedKey === undefined);
}

function receivedTooOften(message: ReceivedQueueMessage, maxDequeueCount: number): string {
  return (
    `The message was received ${message.dequeueCount} times (maxDequeueCount ${maxDequeueCount}) without being settled: ` +
    "its consumers stopped or crashed while processing it."
  );
}

/** The message or its claim is lost: the handler is told (its signal aborted), once. */
function loseOwnershipOf(work: Work<unknown, unknown>, error: MessageOwnershipLostError): void {
  work.lostError ??= error;
  if (!work.controller.signal.aborted) work.controller.abort(error);
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
