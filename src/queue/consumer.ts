/**
 * `QueueConsumer`: at-least-once delivery from Azure Queue Storage, made into exactly-once effects.
 *
 * The source documents: the Queue service offers neither optimistic nor pessimistic concurrency. A
 * received message is only hidden for its visibility timeout; deleting it needs the pop receipt,
 * which changes with every update; a consumer that is too slow or dies lets the message be
 * received again. So consumers must be idempotent. This consumer:
 *
 * 1. checks in `start()` that its queue, poison queue and idempotency table can be used
 *    (`startup.ts`), and fails loudly otherwise;
 * 2. receives up to `batchSize` (≤ 32) messages per call, keeping at most `concurrency` handlers
 *    running and receiving again once no more than `newBatchThreshold` are (Azure Functions' queue
 *    trigger: batchSize 16 of at most 32, newBatchThreshold; QueuesOptions,
 *    https://learn.microsoft.com/azure/azure-functions/functions-bindings-storage-queue#host-json);
 * 3. waits after empty receives with randomised exponential backoff, reset by the next message
 *    (the WebJobs SDK's RandomizedExponentialBackoffStrategy, 100 ms up to maxPollingInterval);
 * 4. processes each message through the pipeline (`pipeline.ts`): decode and claim its idempotency
 *    key (`claim.ts`), run the handler (`run.ts`: one message, or a batch: `batch.ts`; within
 *    `handlerTimeoutInMs`) while a heartbeat keeps the message invisible, then settle it
 *    (`settle.ts`): complete the claim, delete; retry later or poison on failure;
 * 4b. purges its idempotency store's expired records in the background (`purger.ts`);
 * 5. limits every request it makes on its own with `requestTimeoutInMs` (`requests.ts`), and tells
 *    a lost answer from a lost message by the visibility window (`hold.ts`);
 * 6. ends with status `failed` (and {@link QueueConsumer.closed} rejecting) when its queue or table
 *    is deleted or its credential refused: reported once, never counted against a message;
 * 7. stops gracefully: no more receives, running handlers get a grace period, then their signals
 *    are aborted; `stop()` resolves when nothing of the consumer runs any more, or at its
 *    `timeoutInMs` with what is still running.
 */
import type { DequeuedMessageItem, QueueClient } from "@azure/storage-queue";
import { withTimeLimit } from "../internal/time-limit.js";
import { runThrottled, throttleScopeOf } from "../throttling/index.js";
import { logger } from "../internal/logger.js";
import { sleep } from "../internal/sleep.js";
import { StoreCalls } from "../idempotency/internal.js";
import { serviceCodeOf, statusOf } from "../errors.js";
import {
  ConsumerStoppedError,
  EffectsRefusedError,
  isConsumerResourceError,
  type ConsumerResourceError,
} from "./errors.js";
import { TypedEvents, type ListenerDisposable } from "./events.js";
import { markNow, MessageHold } from "./hold.js";
import { checkStopOptions, resolveOptions, type ResolvedOptions } from "./options.js";
import type { BatchMessageHandler } from "./batch.js";
import { MessageProcessor, type ConsumerHandler } from "./run.js";
import { BackgroundPurge } from "./purger.js";
import { toReceived } from "./claim.js";
import { isResourceFailure, resourceError } from "./requests.js";
import { MessageSettler } from "./message-settler.js";
import { checkResources } from "./startup.js";
import type {
  MessageHandler,
  QueueConsumerEvents,
  QueueConsumerOptions,
  QueueConsumerStatus,
  ReceivedQueueMessage,
  StopOptions,
  StopResult,
} from "./types.js";
import { describeError } from "../internal/describe-error.js";

/**
 * How {@link QueueConsumer.withBatchHandler} hands its batch handler to the constructor, in place
 * of a message handler: a class of this module alone, so no caller can make one, and no state
 * outside the call carries the handler.
 */
class BatchHandlerArgument<T, TEffect> {
  constructor(readonly handler: BatchMessageHandler<T, TEffect>) {}
}

/**
 * Consumes a queue with bounded concurrency, visibility heartbeats, poison handling and optional
 * idempotency. Create it, subscribe to events, `await start()` it, and `await stop()` it.
 *
 * @example
 * ```ts
 * import { QueueClient } from "@azure/storage-queue";
 * import { TableClient } from "@azure/data-tables";
 * import { QueueConsumer, jsonCodec } from "azure-storage-concurrency/queue";
 * import { TableIdempotencyStore } from "azure-storage-concurrency/idempotency";
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
 * await consumer.start(); // rejects with a ConsumerResourceError if the queue or the table is missing
 * process.once("SIGTERM", () => void consumer.stop({ timeoutInMs: 40_000 }));
 * await consumer.closed; // rejects if the queue or table is deleted under it, or the credential is refused
 * ```
 */
export class QueueConsumer<T = string, TEffect = never> implements AsyncDisposable {
  readonly #queue: QueueClient;
  readonly #o: ResolvedOptions<T, TEffect>;
  readonly #events = new TypedEvents<QueueConsumerEvents>();
  readonly #settle: MessageSettler;
  readonly #store: StoreCalls<TEffect> | undefined;
  readonly #processor: MessageProcessor<T, TEffect>;
  /** Messages being processed, by the promise of their processing. */
  readonly #inFlight = new Map<Promise<void>, ReceivedQueueMessage>();
  /**
   * Messages of {@link #inFlight} that hold a handler slot: from their receive until their handler
   * has returned (or they were settled without one). The others are being settled (deleted, made
   * visible again), which needs no slot: the next messages are received meanwhile.
   */
  #active = 0;
  /** Handler calls that outlived `handlerTimeoutInMs` (their messages are settled), until they return. */
  readonly #abandoned = new Map<Promise<unknown>, readonly ReceivedQueueMessage[]>();
  readonly #purge: BackgroundPurge | undefined;
  readonly #controllers = new Set<AbortController>();
  /** Aborted when stopping: ends the wait between polls, the start checks and waits for busy keys. */
  readonly #stopAbort = new AbortController();
  /** Aborted when the grace period has run out or the consumer fails: a receive in flight is cancelled. */
  readonly #hardAbort = new AbortController();
  readonly #closed: Promise<void>;
  #closedSettle!: { resolve: () => void; reject: (error: unknown) => void };
  #status: QueueConsumerStatus = "idle";
  #starting: Promise<void> | undefined;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #shutdown: Promise<void> | undefined;
  #failure: unknown;
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
    // A batch handler comes only from withBatchHandler, wrapped in a class no caller can reach.
    const given: unknown = handler;
    const consumerHandler: ConsumerHandler<T, TEffect> =
      given instanceof BatchHandlerArgument
        ? { kind: "batch", handler: (given as BatchHandlerArgument<T, TEffect>).handler }
        : { kind: "message", handler };
    this.#o = resolveOptions(queueClient, consumerHandler.handler, options);
    this.#queue = queueClient;
    this.#settle = new MessageSettler(queueClient, this.#events, this.#o);
    const idempotency = this.#o.idempotency;
    // A missing table or a refused credential ends the consumer (a ConsumerResourceError) instead of
    // failing the message; a 403 on the transaction that carries a message's effects fails that
    // message only (an EffectsRefusedError).
    this.#store =
      idempotency &&
      new StoreCalls(idempotency.store, this.#o.requestTimeoutInMs, {
        retentionInMs: idempotency.retentionInMs,
        resourceFailure: (operation, error) =>
          resourceError("idempotencyStore", idempotency.store.resourceName ?? idempotency.store.name, operation, error),
        effectsRefused: (key, error) =>
          new EffectsRefusedError(key, {
            statusCode: statusOf(error),
            serviceCode: serviceCodeOf(error),
            cause: error,
          }),
      });
    this.#processor = new MessageProcessor<T, TEffect>(
      {
        queue: queueClient,
        options: this.#o,
        events: this.#events,
        settle: this.#settle,
        store: this.#store,
        stopping: this.#stopAbort.signal,
        controllers: this.#controllers,
        fail: (error) => this.#fail(error),
        abandoned: (call, messages) => {
          this.#abandoned.set(call, messages);
          void call.finally(() => this.#abandoned.delete(call));
        },
      },
      consumerHandler,
    );
    if (idempotency?.purgeIntervalInMs !== undefined) {
      this.#purge = new BackgroundPurge(idempotency.store, {
        intervalInMs: idempotency.purgeIntervalInMs,
        requestTimeoutInMs: this.#o.requestTimeoutInMs,
        onPurged: (result) => this.#events.emit("purged", result),
        onError: (error) => this.#settle.reportError(error, "purge expired idempotency records", undefined),
      });
    }
    this.#closed = new Promise<void>((resolve, reject) => (this.#closedSettle = { resolve, reject }));
    this.#closed.catch(() => undefined); // observed through `closed`; never an unhandled rejection
  }

  /**
   * A consumer whose handler takes a batch: up to `batchSize` decoded messages at once (those of
   * one receive), each with its own context (key, claim, `addEffects`, `abortSignal`), and one
   * outcome per message. Everything else is as for a single-message handler: each message has its
   * own heartbeat, claim, retries and poisoning, and is settled by its own outcome. With the Table
   * store, the done marks and effects of messages whose keys share a partition (the
   * `idempotency.partitionKey` option) commit in shared entity group transactions (at most 100
   * operations and 4 MiB each); a claim lost in one of them fails alone.
   *
   * @param queueClient - the queue to consume.
   * @param handler - processes a batch; resolve with nothing (all processed) or one outcome per message; throw to fail them all.
   * @param options - as for the constructor; `batchSize` is the largest batch, `handlerTimeoutInMs` bounds a whole batch.
   *
   * @example
   * ```ts
   * import { TableClient, type TransactionAction } from "@azure/data-tables";
   * import { QueueConsumer, jsonCodec } from "azure-storage-concurrency/queue";
   * import { TableIdempotencyStore } from "azure-storage-concurrency/idempotency";
   *
   * interface Reading { deviceId: string; readingId: string; celsius: number }
   * declare function isPlausible(reading: Reading): boolean;
   *
   * const consumer = QueueConsumer.withBatchHandler<Reading, TransactionAction>(
   *   queueClient,
   *   async (readings) =>
   *     readings.map(({ body, idempotency, addEffects }) => {
   *       if (!isPlausible(body)) return { status: "failed", error: new RangeError(`implausible: ${body.celsius}`) };
   *       // The readings of one device share a partition: their rows and done marks commit together.
   *       addEffects(["upsert", { partitionKey: idempotency!.partitionKey, rowKey: body.readingId, celsius: body.celsius }]);
   *       return { status: "processed" };
   *     }),
   *   {
   *     codec: jsonCodec<Reading>(),
   *     batchSize: 32,
   *     handlerTimeoutInMs: 20_000,
   *     idempotency: {
   *       store: new TableIdempotencyStore(tableClient),
   *       key: (reading) => reading.readingId,
   *       partitionKey: (reading) => reading.deviceId,
   *     },
   *   },
   * );
   * await consumer.start();
   * ```
   */
  static withBatchHandler<T = string, TEffect = never>(
    queueClient: QueueClient,
    handler: BatchMessageHandler<T, TEffect>,
    options: QueueConsumerOptions<T, TEffect> = {},
  ): QueueConsumer<T, TEffect> {
    if (typeof handler !== "function")
      throw new TypeError("`handler` must be an async function (messages, context) => outcomes.");
    const batch = new BatchHandlerArgument(handler) as unknown as MessageHandler<T, TEffect>;
    return new QueueConsumer<T, TEffect>(queueClient, batch, options);
  }

  /** `idle` (not started), `starting` (checking), `running`, `stopping` (draining), `stopped`, `failed`. */
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

  /**
   * Settles when the consumer has ended: resolves once it has stopped, rejects with the
   * {@link ConsumerResourceError} that made it fail (status `failed`): its queue or table was
   * deleted, or its credential refused, after `start()`; or `start()` itself rejected.
   */
  get closed(): Promise<void> {
    return this.#closed;
  }

  /** Subscribes to an event; `dispose()` the result to unsubscribe. */
  on<K extends keyof QueueConsumerEvents>(
    event: K,
    listener: (payload: QueueConsumerEvents[K]) => void,
  ): ListenerDisposable {
    return this.#events.on(event, listener);
  }

  /**
   * Checks the queue, the poison queue and the idempotency table (see `docs/queue-processing.md`),
   * then starts receiving. Rejects with a {@link ConsumerResourceError} naming the missing or
   * refused resource and the fix (the consumer is then `failed`). A consumer runs once: after
   * `stop()`, create a new one.
   */
  async start(): Promise<this> {
    if (this.#status !== "idle") {
      throw new Error(
        `The consumer is ${this.#status}: a consumer starts once; create a new QueueConsumer to consume again.`,
      );
    }
    const signal = this.#o.abortSignal;
    if (signal?.aborted) {
      this.#finish();
      return this;
    }
    if (signal) {
      const onAbort = () => void this.stop();
      signal.addEventListener("abort", onAbort, { once: true });
      this.#removeAbortListener = () => signal.removeEventListener("abort", onAbort);
    }
    this.#status = "starting";
    try {
      this.#starting = checkResources(
        {
          queue: this.#queue,
          poison: this.#settle.poisonWriter,
          store: this.#store,
          requestTimeoutInMs: this.#o.requestTimeoutInMs,
        },
        this.#stopAbort.signal,
      );
      await this.#starting;
    } catch (error) {
      if (this.#stopAbort.signal.aborted) return this; // stopped while starting
      this.#removeAbortListener?.();
      this.#failure = error;
      logger.error(`queue consumer ${this.#o.consumerId} could not start: ${errorMessage(error)}`);
      this.#finish();
      throw error;
    }
    if (this.#status !== "starting") return this;
    this.#status = "running";
    this.#events.emit("started", {});
    logger.info(`queue consumer ${this.#o.consumerId} started on '${this.#queue.name}'`);
    this.#loop = this.#run();
    this.#purge?.start();
    return this;
  }

  /**
   * Stops receiving, lets running handlers finish for the grace period, then aborts their signals;
   * resolves when nothing of the consumer is running any more (handlers settled, heartbeats
   * stopped, messages settled or released), with `timedOut: false`. Messages received but not
   * started are made visible again at once. Safe to call more than once (the first call's grace
   * period counts).
   *
   * A handler that ignores its signal can keep that from ever happening: with `timeoutInMs`,
   * `stop()` resolves at that deadline at the latest, with `timedOut: true` and the messages still
   * being processed. They go on in the background (their heartbeats too, so that nobody else
   * receives them meanwhile) until their handlers return; `status` stays `stopping` and
   * {@link closed} settles only then. Exit the process to end them: their messages come back after
   * the visibility timeout.
   */
  async stop(options: StopOptions = {}): Promise<StopResult> {
    const { gracePeriodInMs, timeoutInMs } = checkStopOptions(options, this.#o.gracePeriodInMs);
    const stopped = this.#beginStop(gracePeriodInMs);
    if (timeoutInMs === undefined) {
      await stopped;
      return { timedOut: false, stillRunning: [] };
    }
    const deadline = new AbortController();
    const timedOut = await Promise.race([
      stopped.then(() => false),
      sleep(timeoutInMs, deadline.signal).then(
        () => true,
        () => false,
      ),
    ]);
    deadline.abort();
    if (!timedOut) return { timedOut: false, stillRunning: [] };
    const stillRunning = [...this.#inFlight.values(), ...[...this.#abandoned.values()].flat()];
    logger.warning(
      `queue consumer ${this.#o.consumerId}: stop() reached its ${timeoutInMs} ms deadline with ${stillRunning.length} message(s) still being processed`,
    );
    return { timedOut: true, stillRunning };
  }

  /** Same as `stop()`, for `await using consumer = await new QueueConsumer(…).start()`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  #beginStop(gracePeriodInMs: number): Promise<void> {
    if (this.#shutdown) return this.#shutdown;
    this.#removeAbortListener?.();
    if (this.#status === "idle") {
      this.#finish();
      return (this.#shutdown = Promise.resolve());
    }
    this.#status = "stopping";
    this.#stopAbort.abort();
    this.#wake?.();
    this.#shutdown = (async () => {
      await this.#starting?.catch(() => undefined);
      const settled = this.#settled();
      const grace = new AbortController();
      await Promise.race([settled, sleep(gracePeriodInMs, grace.signal).catch(() => undefined)]);
      grace.abort();
      if (this.#inFlight.size > 0 || this.#abandoned.size > 0 || this.#loop) {
        const reason = new ConsumerStoppedError();
        this.#hardAbort.abort(reason);
        for (const controller of this.#controllers) controller.abort(reason);
      }
      await settled;
      this.#finish();
    })();
    return this.#shutdown;
  }

  /** Ends the consumer after a resource failure: reported once, everything aborted at once. */
  #fail(error: ConsumerResourceError): void {
    if (this.#failure !== undefined || this.#status === "stopped" || this.#status === "failed") {
      logger.verbose(`queue consumer ${this.#o.consumerId} (ending already): ${error.message}`);
      return;
    }
    this.#failure = error;
    logger.error(`queue consumer ${this.#o.consumerId} fails: ${error.message}`);
    this.#events.emit("error", { error, operation: "consume", message: undefined });
    this.#removeAbortListener?.();
    this.#status = "stopping";
    this.#stopAbort.abort();
    this.#hardAbort.abort(error);
    for (const controller of this.#controllers) controller.abort(error);
    this.#wake?.();
    this.#shutdown ??= (async () => {
      await this.#settled();
      this.#finish();
    })();
  }

  /** Resolves when the receive loop and the background purge have ended and no handler runs. */
  async #settled(): Promise<void> {
    await Promise.all([this.#loop, this.#purge?.stop()]);
    while (this.#inFlight.size > 0 || this.#abandoned.size > 0) {
      await Promise.allSettled([...this.#inFlight.keys(), ...this.#abandoned.keys()]);
    }
  }

  #finish(): void {
    const error = this.#failure;
    this.#status = error === undefined ? "stopped" : "failed";
    logger.info(`queue consumer ${this.#o.consumerId} ${this.#status}`);
    this.#events.emit("stopped", { error });
    if (error === undefined) this.#closedSettle.resolve();
    else this.#closedSettle.reject(error);
  }

  async #run(): Promise<void> {
    let emptyReceives = 0;
    let previousDelayInMs = 0;
    const backOff = async () => {
      emptyReceives += 1;
      previousDelayInMs = this.#o.pollingBackoff.delayInMs(emptyReceives, previousDelayInMs);
      this.#events.emit("empty", { delayInMs: previousDelayInMs, emptyReceives });
      await sleep(previousDelayInMs, this.#stopAbort.signal, { unref: !this.#o.keepAlive }).catch(() => undefined);
    };
    try {
      while (this.#status === "running") {
        // Receive once few enough handlers run, and not while as many messages as `concurrency` are still being settled.
        if (this.#active > this.#o.newBatchThreshold || this.#inFlight.size - this.#active >= this.#o.concurrency) {
          await new Promise<void>((resolve) => (this.#wake = resolve));
          this.#wake = undefined;
          // Handlers that return in the same turn free their slots before the receive is sized.
          await new Promise<void>((resolve) => setImmediate(resolve));
          continue;
        }
        let items: DequeuedMessageItem[];
        const receivedAt = markNow();
        try {
          const receive = () =>
            withTimeLimit(
              `receive messages from queue '${this.#queue.name}'`,
              this.#o.requestTimeoutInMs,
              this.#hardAbort.signal,
              (abortSignal) =>
                this.#queue.receiveMessages({
                  numberOfMessages: Math.min(this.#o.batchSize, this.#o.concurrency - this.#active),
                  visibilityTimeout: this.#o.visibilityTimeoutInSeconds,
                  abortSignal,
                }),
            );
          const scope = () => throttleScopeOf(this.#queue.url, { service: "queue" });
          const response = await runThrottled(this.#o.rateLimiter, scope, receive, this.#hardAbort.signal);
          items = response.receivedMessageItems;
        } catch (error) {
          if (this.#hardAbort.signal.aborted) break;
          if (isResourceFailure(error)) {
            this.#fail(
              resourceError("queue", this.#queue.name, `receive messages from queue '${this.#queue.name}'`, error),
            );
            break;
          }
          this.#settle.reportError(error, "receive messages", undefined);
          await backOff();
          continue;
        }
        if (this.#status !== "running") {
          await Promise.all(items.map((item) => this.#putBack(item, receivedAt)));
          break;
        }
        if (items.length === 0) {
          await backOff();
          continue;
        }
        emptyReceives = 0;
        previousDelayInMs = 0;
        const slots = items.map(() => this.#takeSlot());
        const works = this.#processor.process(items, receivedAt, slots);
        items.forEach((item, index) => this.#track(item, works[index]!, slots[index]!));
      }
    } finally {
      this.#loop = undefined;
    }
  }

  /** Makes a message received while stopping visible again at once. */
  async #putBack(item: DequeuedMessageItem, receivedAt: ReturnType<typeof markNow>): Promise<void> {
    const hold = new MessageHold(this.#queue, item.messageId, item.popReceipt, receivedAt, this.#o);
    try {
      await this.#settle.release(toReceived(item), hold);
    } catch (error) {
      if (isConsumerResourceError(error)) this.#fail(error);
      else this.#settle.reportError(error, "make the message visible again", toReceived(item));
    }
  }

  /** Takes a handler slot; the function returned gives it back (once, however often it is called). */
  #takeSlot(): () => void {
    this.#active += 1;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.#active -= 1;
      this.#wake?.();
    };
  }

  #track(item: DequeuedMessageItem, work: Promise<void>, freeSlot: () => void): void {
    this.#inFlight.set(work, toReceived(item));
    void work.finally(() => {
      this.#inFlight.delete(work);
      freeSlot();
      this.#wake?.();
    });
  }
}

function errorMessage(error: unknown): string {
  return describeError(error);
}
