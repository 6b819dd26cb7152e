/**
 * `QueueConsumer`: at-least-once delivery from Azure Queue Storage, made into exactly-once effects.
 *
 * The source documents: the Queue service offers neither optimistic nor pessimistic concurrency. A
 * received message is only hidden for its visibility timeout; deleting it needs the pop receipt,
 * which changes with every update; a consumer that is too slow or dies lets the message be
 * received again. So consumers must be idempotent. This consumer:
 *
 * 1. receives up to `batchSize` (≤ 32) messages per call, keeping at most `concurrency` handlers
 *    running and receiving again once no more than `newBatchThreshold` are (Azure Functions' queue
 *    trigger: batchSize 16 of at most 32, newBatchThreshold; QueuesOptions,
 *    https://learn.microsoft.com/azure/azure-functions/functions-bindings-storage-queue#host-json);
 * 2. waits after empty receives with randomised exponential backoff, reset by the next message
 *    (the WebJobs SDK's RandomizedExponentialBackoffStrategy, 100 ms up to maxPollingInterval);
 * 3. decodes the body with a codec; a body that does not decode goes to the poison queue at once;
 * 4. keeps the message invisible while its handler runs (a heartbeat, always with the newest pop
 *    receipt; sqs-consumer's `heartbeatInterval`, which must be below the visibility timeout);
 * 5. with an idempotency store, claims the message's key first: a key already done is settled
 *    without running the handler, a key being processed elsewhere is put back for later, and the
 *    handler's done mark (and its effects, when the store can commit them atomically) is written
 *    only while the claim is still held;
 * 6. settles: delete on success; on failure make the message visible again after a backoff, and
 *    after `maxDequeueCount` receptions move it to `<queue>-poison` with the reason;
 * 7. treats 404 / 400 PopReceiptMismatch on an update or delete as "someone else owns it now":
 *    reported as `ownershipLost`, never a crash, never counted as processed;
 * 8. stops gracefully: no more receives, running handlers get a grace period, then their signals
 *    are aborted; `stop()` resolves when nothing of the consumer runs any more.
 */
import type { DequeuedMessageItem } from "@azure/storage-queue";
import type { QueueClient } from "@azure/storage-queue";
import { logger } from "../internal/logger.js";
import { sleep } from "../internal/sleep.js";
import {
  ConsumerStoppedError,
  isConsumerStoppedError,
  isIdempotencyClaimLostError,
  isMessageDecodeError,
  isMessageOwnershipLostError,
  MessageDecodeError,
  MessageOwnershipLostError,
} from "./errors.js";
import { TypedEvents, type ListenerDisposable } from "./events.js";
import { VisibilityHeartbeat } from "./heartbeat.js";
import type { ClaimOutcome, IdempotencyClaim } from "./idempotency/store.js";
import {
  checkGracePeriod,
  MAX_VISIBILITY_TIMEOUT_IN_SECONDS,
  resolveOptions,
  type ResolvedOptions,
} from "./options.js";
import { describe, MessageSettler } from "./settle.js";
import type {
  MessageContext,
  MessageHandler,
  QueueConsumerEvents,
  QueueConsumerOptions,
  QueueConsumerStatus,
  ReceivedQueueMessage,
  StopOptions,
} from "./types.js";

/**
 * Consumes a queue with bounded concurrency, visibility heartbeats, poison handling and optional
 * idempotency. Create it, subscribe to events, `start()` it, and `await stop()` it.
 *
 * @example
 * ```ts
 * import { QueueClient } from "@azure/storage-queue";
 * import { TableClient } from "@azure/data-tables";
 * import { QueueConsumer, TableIdempotencyStore, jsonCodec } from "azure-storage-concurrency";
 *
 * const cs = process.env.AZURE_STORAGE_CONNECTION_STRING!;
 * const orders = new QueueClient(cs, "orders");
 * const inbox = TableClient.fromConnectionString(cs, "inbox");
 * await inbox.createTable();
 *
 * const consumer = new QueueConsumer(
 *   orders,
 *   async (order: { orderId: string; amount: number }, { idempotency, addEffects }) => {
 *     // Written in the same entity group transaction as the order's done mark: exactly once.
 *     addEffects(["upsert", { partitionKey: idempotency!.partitionKey, rowKey: "charge", amount: order.amount }]);
 *     return { charged: order.amount };
 *   },
 *   {
 *     codec: jsonCodec<{ orderId: string; amount: number }>(),
 *     idempotency: { store: new TableIdempotencyStore(inbox), key: (order) => order.orderId },
 *   },
 * );
 * consumer.on("poisoned", ({ message, reason }) => console.warn(`poisoned ${message.messageId}: ${reason}`));
 * consumer.start();
 * process.once("SIGTERM", () => void consumer.stop());
 * ```
 */
export class QueueConsumer<T = string, TEffect = never> implements AsyncDisposable {
  readonly #queue: QueueClient;
  readonly #handler: MessageHandler<T, TEffect>;
  readonly #o: ResolvedOptions<T, TEffect>;
  readonly #events = new TypedEvents<QueueConsumerEvents>();
  readonly #settle: MessageSettler;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #handlerControllers = new Set<AbortController>();
  /** Aborts the wait between polls and wakes the loop when stopping. */
  readonly #pollAbort = new AbortController();
  /** Aborted when the grace period has run out: a receive in flight is cancelled. */
  readonly #hardAbort = new AbortController();
  #status: QueueConsumerStatus = "idle";
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #stopping: Promise<void> | undefined;
  #removeAbortListener: (() => void) | undefined;

  /**
   * @param queueClient - the queue to consume, as a `QueueClient` of `@azure/storage-queue`.
   * @param handler - processes one decoded message; resolve to settle it, throw to fail the attempt.
   * @param options - see {@link QueueConsumerOptions}; checked here, before any request.
   */
  constructor(
    queueClient: QueueClient,
    handler: MessageHandler<T, TEffect>,
    options: QueueConsumerOptions<T, TEffect> = {},
  ) {
    this.#o = resolveOptions(queueClient, handler, options);
    this.#queue = queueClient;
    this.#handler = handler;
    this.#settle = new MessageSettler(
      queueClient,
      this.#events,
      this.#o.poisonQueue,
      this.#o.poisonTimeToLiveInSeconds,
    );
  }

  /** `idle` (not started), `running`, `stopping` (draining), `stopped`. */
  get status(): QueueConsumerStatus {
    return this.#status;
  }

  /** This consumer's id, as recorded in idempotency claims. */
  get consumerId(): string {
    return this.#o.consumerId;
  }

  /** How many messages are being processed right now. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** Subscribes to an event; `dispose()` the result to unsubscribe. */
  on<K extends keyof QueueConsumerEvents>(
    event: K,
    listener: (payload: QueueConsumerEvents[K]) => void,
  ): ListenerDisposable {
    return this.#events.on(event, listener);
  }

  /** Starts receiving. A consumer runs once: after `stop()`, create a new one. */
  start(): this {
    if (this.#status !== "idle") {
      throw new Error(
        `The consumer is ${this.#status}: a consumer starts once; create a new QueueConsumer to consume again.`,
      );
    }
    const signal = this.#o.abortSignal;
    if (signal?.aborted) {
      this.#status = "stopped";
      return this;
    }
    if (signal) {
      const onAbort = () => void this.stop();
      signal.addEventListener("abort", onAbort, { once: true });
      this.#removeAbortListener = () => signal.removeEventListener("abort", onAbort);
    }
    this.#status = "running";
    this.#events.emit("started", {});
    logger.info(`queue consumer ${this.#o.consumerId} started on '${this.#queue.name}'`);
    this.#loop = this.#run();
    return this;
  }

  /**
   * Stops receiving, lets running handlers finish for the grace period, then aborts their
   * signals; resolves when nothing of the consumer is running any more (handlers settled,
   * heartbeats stopped, messages settled or released). Messages received but not started are made
   * visible again at once. Safe to call more than once.
   */
  stop(options: StopOptions = {}): Promise<void> {
    if (this.#stopping) return this.#stopping;
    const gracePeriodInMs = checkGracePeriod(options.gracePeriodInMs, this.#o.gracePeriodInMs);
    this.#removeAbortListener?.();
    if (this.#status === "idle") {
      this.#status = "stopped";
      this.#events.emit("stopped", {});
      return (this.#stopping = Promise.resolve());
    }
    this.#status = "stopping";
    this.#pollAbort.abort();
    this.#wake?.();
    this.#stopping = (async () => {
      const settled = (async () => {
        await this.#loop;
        await this.#drained();
      })();
      const grace = new AbortController();
      await Promise.race([settled, sleep(gracePeriodInMs, grace.signal).catch(() => undefined)]);
      grace.abort();
      if (this.#inFlight.size > 0 || this.#loop) {
        const reason = new ConsumerStoppedError();
        this.#hardAbort.abort(reason);
        for (const controller of this.#handlerControllers) controller.abort(reason);
      }
      await settled;
      this.#status = "stopped";
      logger.info(`queue consumer ${this.#o.consumerId} stopped`);
      this.#events.emit("stopped", {});
    })();
    return this.#stopping;
  }

  /** Same as `stop()`, for `await using consumer = new QueueConsumer(…).start()`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  async #run(): Promise<void> {
    let emptyReceives = 0;
    let previousDelayInMs = 0;
    const backOff = async () => {
      emptyReceives += 1;
      previousDelayInMs = this.#o.pollingBackoff.delayInMs(emptyReceives, previousDelayInMs);
      this.#events.emit("empty", { delayInMs: previousDelayInMs, emptyReceives });
      await sleep(previousDelayInMs, this.#pollAbort.signal, { unref: !this.#o.keepAlive }).catch(() => undefined);
    };
    try {
      while (this.#status === "running") {
        if (this.#inFlight.size > this.#o.newBatchThreshold) {
          await new Promise<void>((resolve) => (this.#wake = resolve));
          this.#wake = undefined;
          continue;
        }
        let items: DequeuedMessageItem[];
        try {
          const response = await this.#queue.receiveMessages({
            numberOfMessages: Math.min(this.#o.batchSize, this.#o.concurrency - this.#inFlight.size),
            visibilityTimeout: this.#o.visibilityTimeoutInSeconds,
            abortSignal: this.#hardAbort.signal,
          });
          items = response.receivedMessageItems;
        } catch (error) {
          if (this.#hardAbort.signal.aborted) break;
          this.#settle.reportError(error, "receive messages", undefined);
          await backOff();
          continue;
        }
        if (this.#status !== "running") {
          await Promise.all(items.map((item) => this.#settle.release(toReceived(item), item.popReceipt)));
          break;
        }
        if (items.length === 0) {
          await backOff();
          continue;
        }
        emptyReceives = 0;
        previousDelayInMs = 0;
        for (const item of items) this.#track(this.#process(item));
      }
    } finally {
      this.#loop = undefined;
    }
  }

  #track(work: Promise<void>): void {
    this.#inFlight.add(work);
    void work.finally(() => {
      this.#inFlight.delete(work);
      this.#wake?.();
    });
  }

  async #drained(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  async #process(item: DequeuedMessageItem): Promise<void> {
    const message = toReceived(item);
    try {
      this.#events.emit("received", { message });
      if (message.dequeueCount > this.#o.maxDequeueCount) {
        const reason =
          `The message was received ${message.dequeueCount} times (maxDequeueCount ${this.#o.maxDequeueCount}) without being settled: ` +
          "its consumers stopped or crashed while processing it.";
        await this.#settle.poison(message, item.popReceipt, reason, undefined);
        return;
      }
      let body: T;
      try {
        body = this.#o.codec.decode(item.messageText);
      } catch (error) {
        const decodeError = isMessageDecodeError(error)
          ? error
          : new MessageDecodeError(
              `The codec '${this.#o.codec.name}' could not decode the message body: ${describe(error)}`,
              {
                codec: this.#o.codec.name,
                messageId: message.messageId,
                cause: error,
              },
            );
        await this.#settle.poison(message, item.popReceipt, decodeError.message, decodeError);
        return;
      }
      await this.#handle(message, item.popReceipt, body);
    } catch (error) {
      this.#settle.reportError(error, "process message", message);
    }
  }

  async #handle(message: ReceivedQueueMessage, popReceipt: string, body: T): Promise<void> {
    const idempotency = this.#o.idempotency;
    const ttlInMs = this.#o.visibilityTimeoutInSeconds * 1000;
    const controller = new AbortController();
    this.#handlerControllers.add(controller);
    const loseOwnership = (error: MessageOwnershipLostError) => {
      work.lostError ??= error;
      if (!controller.signal.aborted) controller.abort(error);
    };
    // The callbacks run on the first beat at the earliest, once `work` exists.
    const heartbeat = new VisibilityHeartbeat(this.#queue, message.messageId, popReceipt, {
      intervalInMs: this.#o.heartbeatIntervalInMs,
      visibilityTimeoutInSeconds: this.#o.visibilityTimeoutInSeconds,
      onLost: loseOwnership,
      onError: (error) => this.#settle.reportError(error, "keep the message invisible", message),
      onBeat: async () => {
        if (!work.claim || !idempotency || work.lostError) return;
        try {
          work.claim = await idempotency.store.extend(work.claim, ttlInMs);
        } catch (error) {
          if (!isIdempotencyClaimLostError(error)) throw error;
          loseOwnership(claimLost(message.messageId, "extend-claim", error));
        }
      },
    });
    const work: Work = { message, controller, heartbeat, claim: undefined, lostError: undefined };
    try {
      if (idempotency && !(await this.#claimKey(work, body))) return;
      const claim = work.claim;
      const effects: TEffect[] = [];
      const context: MessageContext<TEffect> = {
        message,
        abortSignal: controller.signal,
        get popReceipt() {
          return heartbeat.popReceipt;
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
        result = await this.#handler(body, context);
      } catch (error) {
        failure = { error };
      }
      await heartbeat.stop();
      if (failure) {
        if (controller.signal.aborted) await this.#afterAbort(work, controller.signal.reason);
        else await this.#fail(message, heartbeat.popReceipt, failure.error, work.claim);
        return;
      }
      if (work.claim && idempotency) {
        try {
          await idempotency.store.complete(work.claim, { result, effects });
        } catch (error) {
          if (isIdempotencyClaimLostError(error))
            this.#settle.lost(message, claimLost(message.messageId, "complete-claim", error));
          else await this.#fail(message, heartbeat.popReceipt, error, work.claim);
          return;
        }
      }
      if (await this.#settle.delete(message, heartbeat.popReceipt, work.lostError)) {
        this.#events.emit("processed", { message, result, durationInMs: performance.now() - started });
      }
    } finally {
      this.#handlerControllers.delete(controller);
      await heartbeat.stop();
    }
  }

  /**
   * Claims the message's idempotency key into `work.claim`. False when the message was settled
   * instead: its key is done (deleted as a duplicate), busy elsewhere (put back for later), the key
   * could not be derived (poisoned), or the claim failed (a failed attempt).
   */
  async #claimKey(work: Work, body: T): Promise<boolean> {
    const idempotency = this.#o.idempotency!;
    const { message, heartbeat, controller } = work;
    let key: string;
    let partitionKey: string | undefined;
    try {
      key = idempotency.key(body, message);
      partitionKey = idempotency.partitionKey?.(body, message);
      if (typeof key !== "string" || key === "")
        throw new TypeError(`the key function returned ${JSON.stringify(key)}`);
    } catch (error) {
      await heartbeat.stop();
      await this.#settle.poison(
        message,
        heartbeat.popReceipt,
        `Could not derive the idempotency key: ${describe(error)}`,
        error,
      );
      return false;
    }
    let outcome: ClaimOutcome;
    try {
      outcome = await idempotency.store.claim(
        {
          key,
          partitionKey,
          owner: this.#o.consumerId,
          messageId: message.messageId,
          dequeueCount: message.dequeueCount,
          ttlInMs: this.#o.visibilityTimeoutInSeconds * 1000,
          firstDelivery: idempotency.keyIsMessageId && message.dequeueCount === 1,
        },
        { abortSignal: controller.signal },
      );
    } catch (error) {
      await heartbeat.stop();
      if (controller.signal.aborted) await this.#afterAbort(work, controller.signal.reason);
      else
        await this.#fail(
          message,
          heartbeat.popReceipt,
          new Error(`Could not claim idempotency key '${key}': ${describe(error)}`, { cause: error }),
          undefined,
        );
      return false;
    }
    if (outcome.status === "claimed") {
      work.claim = outcome.claim;
      return true;
    }
    await heartbeat.stop();
    if (outcome.status === "done") {
      if (await this.#settle.delete(message, heartbeat.popReceipt, work.lostError)) {
        this.#events.emit("duplicate", { message, key, result: outcome.result });
      }
      return false;
    }
    // Busy: hide the message until the other claim would expire, then look again.
    const remaining = Math.ceil((outcome.expiresOn.getTime() - Date.now()) / 1000) + 1;
    const delayInSeconds = Math.min(Math.max(1, remaining), this.#o.visibilityTimeoutInSeconds);
    if (await this.#settle.setVisibility(message, heartbeat.popReceipt, delayInSeconds, work.lostError)) {
      this.#events.emit("deferred", { message, key, owner: outcome.owner, delayInSeconds });
    }
    return false;
  }

  /** The handler (or claim) failed because its signal was aborted: by `stop()`, or because ownership was lost. */
  async #afterAbort(work: Work, reason: unknown): Promise<void> {
    const { message, heartbeat, claim } = work;
    if (isMessageOwnershipLostError(reason)) {
      if (claim && reason.lost === "message") await this.#releaseClaim(message, claim);
      this.#settle.lost(message, reason);
      return;
    }
    // Stopped: give the message back at once, without counting it as a failure of the message.
    if (claim) await this.#releaseClaim(message, claim);
    if (await this.#settle.release(message, heartbeat.popReceipt)) {
      const error = isConsumerStoppedError(reason) ? reason : new ConsumerStoppedError();
      this.#events.emit("failed", { message, error, willRetry: true, retryInSeconds: 0 });
    }
  }

  async #fail(
    message: ReceivedQueueMessage,
    popReceipt: string,
    error: unknown,
    claim: IdempotencyClaim | undefined,
  ): Promise<void> {
    if (claim) await this.#releaseClaim(message, claim);
    if (message.dequeueCount >= this.#o.maxDequeueCount) {
      this.#events.emit("failed", { message, error, willRetry: false, retryInSeconds: undefined });
      const reason = `Failed on each of ${message.dequeueCount} receptions (maxDequeueCount ${this.#o.maxDequeueCount}); last error: ${describe(error)}`;
      await this.#settle.poison(message, popReceipt, reason, error);
      return;
    }
    const delayInMs = this.#o.retryBackoff.delayInMs(message.dequeueCount, 0);
    const retryInSeconds = Math.min(MAX_VISIBILITY_TIMEOUT_IN_SECONDS, Math.max(0, Math.ceil(delayInMs / 1000)));
    if (await this.#settle.setVisibility(message, popReceipt, retryInSeconds, undefined)) {
      logger.verbose(
        `message ${message.messageId} failed on reception ${message.dequeueCount} (${describe(error)}); visible again in ${retryInSeconds} s`,
      );
      this.#events.emit("failed", { message, error, willRetry: true, retryInSeconds });
    }
  }

  async #releaseClaim(message: ReceivedQueueMessage, claim: IdempotencyClaim): Promise<void> {
    try {
      await this.#o.idempotency!.store.release(claim);
    } catch (error) {
      // It expires with the visibility timeout anyway.
      this.#settle.reportError(error, "release the idempotency claim", message);
    }
  }
}

/** One message being handled: what its settling needs to know. */
interface Work {
  readonly message: ReceivedQueueMessage;
  readonly controller: AbortController;
  readonly heartbeat: VisibilityHeartbeat;
  claim: IdempotencyClaim | undefined;
  /** Set once the heartbeat (or the claim's extension) found the message or its claim lost. */
  lostError: MessageOwnershipLostError | undefined;
}

function toReceived(item: DequeuedMessageItem): ReceivedQueueMessage {
  return {
    messageId: item.messageId,
    messageText: item.messageText,
    dequeueCount: item.dequeueCount,
    insertedOn: item.insertedOn,
    expiresOn: item.expiresOn,
  };
}

function claimLost(messageId: string, operation: string, cause: unknown): MessageOwnershipLostError {
  return new MessageOwnershipLostError(
    `Another consumer took over the idempotency claim of message '${messageId}'; its done mark and effects were not written.`,
    { messageId, lost: "claim", operation, cause },
  );
}
