/**
 * The queue consumer's public types: its options, what a handler is given, and its events.
 */
import type { QueueClient } from "@azure/storage-queue";
import type { BackoffStrategy } from "../retry/backoff.js";
import type { MessageCodec } from "./codecs.js";
import type { IdempotencyStore } from "./idempotency/store.js";

/** A received message, as the consumer's events report it (before or without decoding). */
export interface ReceivedQueueMessage {
  readonly messageId: string;
  /** The raw message text. */
  readonly messageText: string;
  /** How many times the message has been received, this time included. */
  readonly dequeueCount: number;
  readonly insertedOn: Date | undefined;
  readonly expiresOn: Date | undefined;
}

/** What a handler is given besides the decoded body. */
export interface MessageContext<TEffect = never> {
  /** The message as received. */
  readonly message: ReceivedQueueMessage;
  /**
   * Aborted when the consumer stops and the grace period has run out ({@link ConsumerStoppedError}),
   * or when the consumer loses the message or its idempotency claim ({@link MessageOwnershipLostError}).
   * Pass it to every call the handler makes.
   */
  readonly abortSignal: AbortSignal;
  /** The message's current pop receipt (it changes with every visibility update). */
  readonly popReceipt: string;
  /** The idempotency claim, when the consumer has an idempotency store. */
  readonly idempotency: IdempotencyContext | undefined;
  /**
   * Adds effects to be committed atomically with the key's done mark (Table store: transaction
   * actions in `idempotency.partitionKey`; memory store: functions). They are committed only if the
   * handler succeeds and the claim is still held, in the same write as the done mark, so they
   * happen exactly once per key. Throws a TypeError when the consumer has no idempotency store.
   */
  addEffects(...effects: TEffect[]): void;
}

/** The idempotency part of a {@link MessageContext}. */
export interface IdempotencyContext {
  /** The idempotency key. */
  readonly key: string;
  /** The inbox record's partition: effects committed with the done mark must be in it. */
  readonly partitionKey: string;
  /** The consumer whose claim this one took over (it crashed or lost the message), if any. */
  readonly takenOverFrom: string | undefined;
}

/**
 * Processes one message. Resolve to settle it (the message is deleted; with an idempotency
 * store, the resolved value is kept as the key's small result); throw to fail this attempt.
 */
export type MessageHandler<T, TEffect = never> = (body: T, context: MessageContext<TEffect>) => Promise<unknown>;

/** Idempotency settings of a {@link QueueConsumerOptions}. */
export interface IdempotencyOptions<T, TEffect> {
  /** Where claims and done marks live: {@link TableIdempotencyStore} or {@link MemoryIdempotencyStore}. */
  readonly store: IdempotencyStore<TEffect>;
  /**
   * The idempotency key of a message. Derive it from the body when producers may send the same
   * work twice as two messages (e.g. an order id); the message id only catches redeliveries.
   * @default (body, message) => message.messageId
   */
  readonly key?: (body: T, message: ReceivedQueueMessage) => string;
  /**
   * The partition of the key's inbox record (Table store). Set it when the handler's effects must
   * commit atomically with the done mark and belong in a partition of their own choosing (e.g. the
   * customer id); by default each key is its own partition.
   * @default the key
   */
  readonly partitionKey?: (body: T, message: ReceivedQueueMessage) => string;
}

/** Options for {@link QueueConsumer}. */
export interface QueueConsumerOptions<T, TEffect = never> {
  /**
   * How message text becomes the handler's value.
   * @default textCodec
   */
  readonly codec?: MessageCodec<T>;
  /**
   * How many messages to ask for per receive call (the service's limit is 32).
   * @default 16
   */
  readonly batchSize?: number;
  /**
   * The most handlers running at once.
   * @default batchSize
   */
  readonly concurrency?: number;
  /**
   * Receive again once no more than this many handlers are still running (Azure Functions'
   * `newBatchThreshold`). Lower keeps fewer messages invisible-but-waiting; higher keeps the
   * handlers busier.
   * @default Math.floor(concurrency / 2)
   */
  readonly newBatchThreshold?: number;
  /**
   * How long a received message stays invisible, and how far each heartbeat pushes it (whole
   * seconds: the service counts seconds; 1 to 604800). An idempotency claim expires with it.
   * @default 30
   */
  readonly visibilityTimeoutInSeconds?: number;
  /**
   * How often a running handler's message is made invisible again. Must be shorter than the
   * visibility timeout; a third of it leaves room for two failed updates.
   * @default visibilityTimeoutInSeconds * 1000 / 3
   */
  readonly heartbeatIntervalInMs?: number;
  /**
   * After this many receptions a failing message goes to the poison queue (Azure Functions'
   * default is 5). A message received more often than this without being settled (its consumers
   * kept crashing) is poisoned before its handler runs.
   * @default 5
   */
  readonly maxDequeueCount?: number;
  /**
   * How long a failed message stays invisible before its next attempt, from its dequeue count
   * (rounded up to whole seconds).
   * @default exponentialBackoff({ deltaInMs: 1_000, minInMs: 0, maxInMs: 60_000 }) (about 1 s, 3 s, 7 s, 15 s …)
   */
  readonly retryBackoff?: BackoffStrategy;
  /**
   * How long to wait before receiving again after an empty receive, from the number of empty
   * receives in a row; reset as soon as a message arrives. Randomised so that idle consumers
   * spread out (Azure Functions polls from 100 ms up to its `maxPollingInterval`, 1 min).
   * @default exponentialBackoff({ deltaInMs: 100, minInMs: 0, maxInMs: 60_000 }) (about 100 ms, 300 ms, 700 ms … 60 s)
   */
  readonly pollingBackoff?: BackoffStrategy;
  /**
   * The poison queue.
   * @default a client for `<queue>-poison` on the consumer's client's pipeline
   */
  readonly poisonQueue?: QueueClient;
  /**
   * Time to live of poison messages in seconds; -1 keeps them until someone deletes them.
   * @default -1
   */
  readonly poisonTimeToLiveInSeconds?: number;
  /** Makes effects exactly-once: claims each key before the handler runs, marks it done after. */
  readonly idempotency?: IdempotencyOptions<T, TEffect>;
  /**
   * How long {@link QueueConsumer.stop} lets running handlers finish before aborting their signals.
   * @default 30000
   */
  readonly gracePeriodInMs?: number;
  /**
   * Whether a running consumer keeps the Node.js process alive while it waits between polls, as a
   * listening server does. Set false when something else owns the process's lifetime.
   * @default true
   */
  readonly keepAlive?: boolean;
  /** A name for this consumer in claims and logs. @default a random id */
  readonly consumerId?: string;
  /** Stops the consumer when aborted (same as calling `stop()`). */
  readonly abortSignal?: AbortSignal;
}

/** The consumer's life: created, running, stopping (draining), stopped. */
export type QueueConsumerStatus = "idle" | "running" | "stopping" | "stopped";

/** The consumer's events and what each listener receives. */
export interface QueueConsumerEvents {
  /** The consumer started receiving. */
  started: Record<string, never>;
  /** A message arrived (before decoding). */
  received: { readonly message: ReceivedQueueMessage };
  /** A receive came back empty; the consumer waits `delayInMs` before the next one. */
  empty: { readonly delayInMs: number; readonly emptyReceives: number };
  /** The handler succeeded and the message was deleted. */
  processed: { readonly message: ReceivedQueueMessage; readonly result: unknown; readonly durationInMs: number };
  /** The message's key was already done: it was deleted without running the handler. */
  duplicate: { readonly message: ReceivedQueueMessage; readonly key: string; readonly result: unknown };
  /** Another consumer is processing the same key right now: the message was put back for `delayInSeconds`. */
  deferred: { readonly message: ReceivedQueueMessage; readonly key: string; readonly owner: string; readonly delayInSeconds: number };
  /** The handler failed; the message becomes visible again after `retryInSeconds` (unless it was poisoned). */
  failed: {
    readonly message: ReceivedQueueMessage;
    readonly error: unknown;
    readonly willRetry: boolean;
    readonly retryInSeconds: number | undefined;
  };
  /** The message was moved to the poison queue. */
  poisoned: {
    readonly message: ReceivedQueueMessage;
    readonly reason: string;
    readonly error: unknown;
    readonly poisonQueueName: string;
  };
  /** The message or its claim belongs to someone else now; it was not counted as processed. */
  ownershipLost: { readonly message: ReceivedQueueMessage; readonly error: unknown };
  /** Something failed outside a handler (a receive, a delete, a heartbeat); the consumer goes on. */
  error: { readonly error: unknown; readonly operation: string; readonly message: ReceivedQueueMessage | undefined };
  /** The consumer has stopped: nothing of it is running any more. */
  stopped: Record<string, never>;
}

/** Options for {@link QueueConsumer.stop}. */
export interface StopOptions {
  /**
   * How long running handlers may still take before their signals are aborted.
   * @default the consumer's `gracePeriodInMs`
   */
  readonly gracePeriodInMs?: number;
}
