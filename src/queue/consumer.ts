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
import { isOwnershipLoss, ownershipLost, VisibilityHeartbeat } from "./heartbeat.js";
import type { IdempotencyClaim } from "./idempotency/store.js";
import { checkGracePeriod, MAX_VISIBILITY_TIMEOUT_IN_SECONDS, resolveOptions, type ResolvedOptions } from "./options.js";
import { buildPoisonMessageText, derivePoisonQueue, PoisonQueueWriter } from "./poison.js";
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
  #poison: PoisonQueueWriter | undefined;
  #removeAbortListener: (() => void) | undefined;

  /**
   * @param queueClient - the queue to consume, as a `QueueClient` of `@azure/storage-queue`.
   * @param handler - processes one decoded message; resolve to settle it, throw to fail the attempt.
   * @param options - see {@link QueueConsumerOptions}; checked here, before any request.
   */
  constructor(queueClient: QueueClient, handler: MessageHandler<T, TEffect>, options: QueueConsumerOptions<T, TEffect> = {}) {
    this.#o = resolveOptions(queueClient, handler, options);
    this.#queue = queueClient;
    this.#handler = handler;
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
  on<K extends keyof QueueConsumerEvents>(event: K, listener: (payload: QueueConsumerEvents[K]) => void): ListenerDisposable {
    return this.#events.on(event, listener);
  }

  /** Starts receiving. A consumer runs once: after `stop()`, create a new one. */
  start(): this {
    if (this.#status !== "idle") {
      throw new Error(`The consumer is ${this.#status}: a consumer starts once; create a new QueueConsumer to consume again.`);
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
          this.#reportError(error, "receive messages", undefined);
          await backOff();
          continue;
        }
        if (this.#status !== "running") {
          await Promise.all(items.map((item) => this.#release(toReceived(item), item.popReceipt)));
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
        await this.#poisonMessage(message, item.popReceipt, reason, undefined);
        return;
      }
      let body: T;
      try {
        body = this.#o.codec.decode(item.messageText);
      } catch (error) {
        const decodeError = isMessageDecodeError(error)
          ? error
          : new MessageDecodeError(`The codec '${this.#o.codec.name}' could not decode the message body: ${describe(error)}`, {
              codec: this.#o.codec.name,
              messageId: message.messageId,
              cause: error,
            });
        await this.#poisonMessage(message, item.popReceipt, decodeError.message, decodeError);
        return;
      }
      await this.#handle(message, item.popReceipt, body);
    } catch (error) {
      this.#reportError(error, "process message", message);
    }
  }

  async #handle(message: ReceivedQueueMessage, popReceipt: string, body: T): Promise<void> {
    const idempotency = this.#o.idempotency;
    const ttlInMs = this.#o.visibilityTimeoutInSeconds * 1000;
    const controller = new AbortController();
    this.#handlerControllers.add(controller);
    let claim: IdempotencyClaim | undefined;
    let lostError: MessageOwnershipLostError | undefined;
    const loseOwnership = (error: MessageOwnershipLostError) => {
      lostError ??= error;
      if (!controller.signal.aborted) controller.abort(error);
    };
    const heartbeat = new VisibilityHeartbeat(this.#queue, message.messageId, popReceipt, {
      intervalInMs: this.#o.heartbeatIntervalInMs,
      visibilityTimeoutInSeconds: this.#o.visibilityTimeoutInSeconds,
      onLost: loseOwnership,
      onError: (error) => this.#reportError(error, "keep the message invisible", message),
      onBeat: async () => {
        if (!claim || !idempotency || lostError) return;
        try {
          claim = await idempotency.store.extend(claim, ttlInMs);
        } catch (error) {
          if (!isIdempotencyClaimLostError(error)) throw error;
          loseOwnership(claimLost(message.messageId, "extend-claim", error));
        }
      },
    });
    try {
      if (idempotency) {
        let key: string;
        let partitionKey: string | undefined;
        try {
          key = idempotency.key(body, message);
          partitionKey = idempotency.partitionKey?.(body, message);
          if (typeof key !== "string" || key === "") throw new TypeError(`the key function returned ${JSON.stringify(key)}`);
        } catch (error) {
          await heartbeat.stop();
          await this.#poisonMessage(message, heartbeat.popReceipt, `Could not derive the idempotency key: ${describe(error)}`, error);
          return;
        }
        let outcome;
        try {
          outcome = await idempotency.store.claim(
            {
              key,
              partitionKey,
              owner: this.#o.consumerId,
              messageId: message.messageId,
              dequeueCount: message.dequeueCount,
              ttlInMs,
              firstDelivery: idempotency.keyIsMessageId && message.dequeueCount === 1,
            },
            { abortSignal: controller.signal },
          );
        } catch (error) {
          await heartbeat.stop();
          if (controller.signal.aborted) await this.#afterAbort(message, heartbeat, controller.signal.reason, undefined);
          else await this.#fail(message, heartbeat.popReceipt, new Error(`Could not claim idempotency key '${key}': ${describe(error)}`, { cause: error }), undefined);
          return;
        }
        if (outcome.status === "done") {
          await heartbeat.stop();
          if (await this.#delete(message, heartbeat, lostError)) {
            this.#events.emit("duplicate", { message, key, result: outcome.result });
          }
          return;
        }
        if (outcome.status === "busy") {
          await heartbeat.stop();
          const remaining = Math.ceil((outcome.expiresOn.getTime() - Date.now()) / 1000) + 1;
          const delayInSeconds = Math.min(Math.max(1, remaining), this.#o.visibilityTimeoutInSeconds);
          if (await this.#setVisibility(message, heartbeat.popReceipt, delayInSeconds, lostError)) {
            this.#events.emit("deferred", { message, key, owner: outcome.owner, delayInSeconds });
          }
          return;
        }
        claim = outcome.claim;
      }

      const effects: TEffect[] = [];
      const claimed = claim;
      const context: MessageContext<TEffect> = {
        message,
        abortSignal: controller.signal,
        get popReceipt() {
          return heartbeat.popReceipt;
        },
        idempotency: claimed && {
          key: claimed.key,
          partitionKey: claimed.partitionKey,
          takenOverFrom: claimed.takenOverFrom,
        },
        addEffects(...added: TEffect[]) {
          if (!claimed) {
            throw new TypeError("addEffects() needs an idempotency store: set the consumer's `idempotency` option.");
          }
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
        if (controller.signal.aborted) await this.#afterAbort(message, heartbeat, controller.signal.reason, claim);
        else await this.#fail(message, heartbeat.popReceipt, failure.error, claim);
        return;
      }
      if (claim && idempotency) {
        try {
          await idempotency.store.complete(claim, { result, effects });
        } catch (error) {
          if (isIdempotencyClaimLostError(error)) {
            this.#lost(message, claimLost(message.messageId, "complete-claim", error));
            return;
          }
          await this.#fail(message, heartbeat.popReceipt, error, claim);
          return;
        }
      }
      if (await this.#delete(message, heartbeat, lostError)) {
        this.#events.emit("processed", { message, result, durationInMs: performance.now() - started });
      }
    } finally {
      this.#handlerControllers.delete(controller);
      await heartbeat.stop();
    }
  }

  /** The handler failed because its signal was aborted: by `stop()`, or because ownership was lost. */
  async #afterAbort(message: ReceivedQueueMessage, heartbeat: VisibilityHeartbeat, reason: unknown, claim: IdempotencyClaim | undefined) {
    if (isMessageOwnershipLostError(reason)) {
      if (claim && reason.lost === "message") await this.#releaseClaim(message, claim);
      this.#lost(message, reason);
      return;
    }
    // Stopped: give the message back at once, without counting it as a failure of the message.
    if (claim) await this.#releaseClaim(message, claim);
    if (await this.#release(message, heartbeat.popReceipt)) {
      this.#events.emit("failed", { message, error: isConsumerStoppedError(reason) ? reason : new ConsumerStoppedError(), willRetry: true, retryInSeconds: 0 });
    }
  }

  async #fail(message: ReceivedQueueMessage, popReceipt: string, error: unknown, claim: IdempotencyClaim | undefined): Promise<void> {
    if (claim) await this.#releaseClaim(message, claim);
    if (message.dequeueCount >= this.#o.maxDequeueCount) {
      this.#events.emit("failed", { message, error, willRetry: false, retryInSeconds: undefined });
      const reason = `Failed on each of ${message.dequeueCount} receptions (maxDequeueCount ${this.#o.maxDequeueCount}); last error: ${describe(error)}`;
      await this.#poisonMessage(message, popReceipt, reason, error);
      return;
    }
    const delayInMs = this.#o.retryBackoff.delayInMs(message.dequeueCount, 0);
    const retryInSeconds = Math.min(MAX_VISIBILITY_TIMEOUT_IN_SECONDS, Math.max(0, Math.ceil(delayInMs / 1000)));
    if (await this.#setVisibility(message, popReceipt, retryInSeconds, undefined)) {
      this.#events.emit("failed", { message, error, willRetry: true, retryInSeconds });
    }
  }

  async #poisonMessage(message: ReceivedQueueMessage, popReceipt: string, reason: string, error: unknown): Promise<void> {
    const writer = (this.#poison ??= new PoisonQueueWriter(
      this.#o.poisonQueue ?? derivePoisonQueue(this.#queue),
      this.#o.poisonTimeToLiveInSeconds,
    ));
    const code = typeof error === "object" && error !== null ? ((error as { code?: unknown }).code ?? (error as Error).name) : undefined;
    const { text } = buildPoisonMessageText(message, this.#queue.name, reason, typeof code === "string" ? code : undefined);
    try {
      await writer.send(text);
    } catch (sendError) {
      // The message stays in its queue and comes back after its visibility timeout.
      this.#reportError(sendError, `move the message to the poison queue '${writer.name}'`, message);
      return;
    }
    try {
      await this.#queue.deleteMessage(message.messageId, popReceipt);
    } catch (deleteError) {
      if (isOwnershipLoss(deleteError)) this.#lost(message, ownershipLost(message.messageId, "delete", deleteError));
      else this.#reportError(deleteError, "delete the poisoned message", message);
    }
    logger.info(`message ${message.messageId} moved to '${writer.name}': ${reason}`);
    this.#events.emit("poisoned", { message, reason, error, poisonQueueName: writer.name });
  }

  /** Deletes a settled message with the newest pop receipt; false (and reported) when it could not. */
  async #delete(message: ReceivedQueueMessage, heartbeat: VisibilityHeartbeat, lostError: MessageOwnershipLostError | undefined): Promise<boolean> {
    if (lostError) {
      this.#lost(message, lostError);
      return false;
    }
    try {
      await this.#queue.deleteMessage(message.messageId, heartbeat.popReceipt);
      return true;
    } catch (error) {
      if (isOwnershipLoss(error)) this.#lost(message, ownershipLost(message.messageId, "delete", error));
      else this.#reportError(error, "delete the message", message);
      return false;
    }
  }

  async #setVisibility(message: ReceivedQueueMessage, popReceipt: string, seconds: number, lostError: MessageOwnershipLostError | undefined): Promise<boolean> {
    if (lostError) {
      this.#lost(message, lostError);
      return false;
    }
    try {
      await this.#queue.updateMessage(message.messageId, popReceipt, undefined, seconds);
      return true;
    } catch (error) {
      if (isOwnershipLoss(error)) this.#lost(message, ownershipLost(message.messageId, "update", error));
      else this.#reportError(error, "make the message visible again", message);
      return false;
    }
  }

  /** Makes a message visible again at once (received while stopping, or its handler was stopped). */
  #release(message: ReceivedQueueMessage, popReceipt: string): Promise<boolean> {
    return this.#setVisibility(message, popReceipt, 0, undefined);
  }

  async #releaseClaim(message: ReceivedQueueMessage, claim: IdempotencyClaim): Promise<void> {
    try {
      await this.#o.idempotency!.store.release(claim);
    } catch (error) {
      // It expires with the visibility timeout anyway.
      this.#reportError(error, "release the idempotency claim", message);
    }
  }

  #lost(message: ReceivedQueueMessage, error: MessageOwnershipLostError): void {
    logger.warning(error.message);
    this.#events.emit("ownershipLost", { message, error });
  }

  #reportError(error: unknown, operation: string, message: ReceivedQueueMessage | undefined): void {
    if (this.#events.has("error")) this.#events.emit("error", { error, operation, message });
    else logger.warning(`queue consumer could not ${operation}${message ? ` (message ${message.messageId})` : ""}: ${describe(error)}`);
  }
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

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
