/**
 * The queue consumer's public types: its options, what a handler is given, and its events.
 */
import type { QueueClient } from "@azure/storage-queue";
import type { BackoffStrategy } from "../retry/index.js";
import type { AdaptiveRateLimiter } from "../throttling/index.js";
import type { ConsumerClaimCheck } from "./claim-check-hook.js";
import type { MessageCodec } from "./codecs.js";
import type { IdempotencyStore, PurgeResult } from "../idempotency/index.js";

/** A received message, as the consumer's events report it (before or without decoding). */
export interface ReceivedQueueMessage {
  /** The service's id of the message (stable across receptions). */
  readonly messageId: string;
  /** The raw message text. */
  readonly messageText: string;
  /** How many times the message has been received, this time included. */
  readonly dequeueCount: number;
  /** When the message was put in the queue. */
  readonly insertedOn: Date | undefined;
  /** When the message expires (its time to live runs out) and leaves the queue unprocessed. */
  readonly expiresOn: Date | undefined;
}

/** What a handler is given besides the decoded body. */
export interface MessageContext<TEffect = never> {
  /** The message as received. */
  readonly message: ReceivedQueueMessage;
  /**
   * Aborted when the consumer stops and the grace period has run out ({@link ConsumerStoppedError}),
   * when the consumer loses the message or its idempotency claim ({@link MessageOwnershipLostError}),
   * or when the handler runs longer than `handlerTimeoutInMs` ({@link HandlerTimeoutError}).
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
  readonly addEffects: (...effects: TEffect[]) => void;
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
  /** Where claims and done marks live: {@link idempotency!TableIdempotencyStore} or {@link idempotency!MemoryIdempotencyStore}. */
  readonly store: IdempotencyStore<TEffect>;
  /**
   * The idempotency key of a message. Derive it from the body when producers may send the same
   * work twice as two messages (e.g. an order id); the message id only catches redeliveries.
   * @default the key the message carries (an outbox row's id, a claim-check payload's name: read from its envelope whatever the consumer's options), else the message id
   */
  readonly key?: (body: T, message: ReceivedQueueMessage) => string;
  /**
   * The partition of the key's inbox record (Table store). Set it when the handler's effects must
   * commit atomically with the done mark and belong in a partition of their own choosing (e.g. the
   * customer id); by default each key is its own partition.
   * @default the key
   */
  readonly partitionKey?: (body: T, message: ReceivedQueueMessage) => string;
  /**
   * What the handler's effects are, which decides whether a message's key is claimed before its
   * handler runs (issue 27):
   * - `"any"`: the handler may act outside the store (send an email, call an API, write a blob),
   *   so only one delivery of a key may run it at a time: its key is claimed first (an insert of the
   *   inbox row), then marked done. A first delivery keyed by its message id skips the claim
   *   anyway (no other delivery of it can exist yet).
   * - `"tables-only"`: everything the handler changes goes through `addEffects` (or it changes
   *   nothing), so its effects apply only with the done mark. A message's first delivery is not
   *   claimed, whatever its key: the handler runs, then its effects and the insert of the done
   *   record commit in one entity group transaction; if another delivery of the key committed
   *   first, the insert fails, the effects are discarded whole and the message is deleted as a
   *   duplicate. One table request per message instead of two, with a key from the body too. The
   *   handler may run more than once for a key (a producer's duplicate running alongside, or a
   *   redelivery after a lost delete), but its effects apply once. Redeliveries are claimed as with
   *   `"any"` (a done key is then recognised without running the handler).
   *
   * The consumer cannot tell an external effect from a pure computation, so `"tables-only"` is
   * yours to declare: a handler with external effects under it could apply them twice.
   * @default "any"
   */
  readonly effects?: "any" | "tables-only";
  /**
   * How long this consumer's done records keep their keys recognised, in milliseconds from their
   * completion; after that a message with the same key runs again. Keep it longer than a duplicate
   * can arrive: at least the message time to live (7 days by default) when producers may send a
   * message twice. Must be longer than the visibility timeout.
   * @default the store's `retentionInMs` (7 days)
   */
  readonly retentionInMs?: number;
  /**
   * Deletes expired records in the background (the store's `purge()`), so that the inbox does not
   * grow for ever: Azure Tables has no TTL. `true`: once an hour, the first run at a random time
   * within the first hour (so that consumers started together spread out); `false`: never (purge
   * from a job of your own); or your own cadence. Each run is reported (`purged`, or `error` with
   * operation `"purge expired idempotency records"`) and stopped by `stop()`.
   * @default true (when the store can purge)
   */
  readonly purge?: boolean | PurgeScheduleOptions;
}

/** When the consumer purges its idempotency store (see {@link IdempotencyOptions.purge}). */
export interface PurgeScheduleOptions {
  /**
   * The time between two runs, in milliseconds; the first run comes at a random time within the
   * first interval.
   * @default 3600000 (one hour)
   */
  readonly intervalInMs?: number;
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
   * The most handlers running at once. A message frees its slot when its handler returns; its
   * delete goes on while the next messages are received (at most this many being settled at once).
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
  /**
   * What the poison queue receives for a poisoned message:
   * - `"envelope"`: a JSON envelope around the original text with why it was poisoned (reason,
   *   error code, dequeue count, source queue, times; {@link PoisonEnvelope}), read back with
   *   {@link parsePoisonMessage};
   * - `"raw"`: the original message text alone, unchanged, as the Azure Functions queue trigger
   *   writes it to `<queue>-poison`: for tools and handlers that read a poison queue the Functions
   *   way. The reason then reaches only the `poisoned` event and the log (`warning`).
   * @default "envelope"
   */
  readonly poisonMessageFormat?: "envelope" | "raw";
  /** Makes effects exactly-once: claims each key before the handler runs, marks it done after. */
  readonly idempotency?: IdempotencyOptions<T, TEffect>;
  /**
   * Reads messages sent through a claim-check (`ClaimCheck`, docs/claim-check.md): a reference is
   * resolved to its payload before decoding (within the message's visibility timeout), the key a
   * message carries (an outbox row's id) becomes the default idempotency key, the payload is deleted
   * after its message, and kept (and named in the poison envelope) when the message is poisoned.
   * Its sweep grace must be longer than `visibilityTimeoutInSeconds`.
   *
   * Without it, the consumer still reads the envelopes that carry their text (small outbox and
   * claim-check messages) and uses their key as the default idempotency key; a message that
   * references a payload blob ends the consumer with a `ConsumerResourceError` (`resource:
   * "claimCheck"`) that says to give it this option, and is left in the queue untouched.
   */
  readonly claimCheck?: ConsumerClaimCheck;
  /**
   * The longest a handler may run (a batch handler: the whole batch), in milliseconds. When it runs
   * out, the handler's `abortSignal` is aborted with a {@link HandlerTimeoutError}, the consumer
   * stops waiting and the attempt counts as a failure of each of its messages (retried, poisoned
   * at `maxDequeueCount`); its effects are not committed. A handler that ignores its signal may
   * still be running when the next attempt starts: pass the signal to everything it awaits.
   * @default no limit
   */
  readonly handlerTimeoutInMs?: number;
  /**
   * How long {@link QueueConsumer.stop} lets running handlers finish before aborting their signals.
   * @default 30000
   */
  readonly gracePeriodInMs?: number;
  /**
   * The client-side time limit of each call the consumer makes on its own (receive, heartbeat,
   * delete, visibility change, poison send, each idempotency store call), the SDK's own retries
   * inside it included. A call cut short is treated as possibly applied and tried again while the
   * message is certainly still hidden. The SDK's `tryTimeoutInMs` is a different thing: the
   * server-side timeout, which does not help when an answer never comes. Must be shorter than the
   * visibility timeout.
   * @default a quarter of the visibility timeout, at most 10000
   */
  readonly requestTimeoutInMs?: number;
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
  /**
   * Send the consumer's receives and deletes when the queue's adaptive rate allows (see
   * docs/throttling.md): a queue the service throttles is polled and settled more slowly instead of
   * hammered. Visibility updates (the heartbeat, a retry's delay, a release) are never held back:
   * they keep the message's hold.
   * @default undefined (requests go out at once)
   */
  readonly rateLimiter?: AdaptiveRateLimiter;
}

/**
 * The consumer's life: created (`idle`), checking its resources (`starting`), `running`,
 * `stopping` (draining), and then `stopped`, or `failed` when `start()` rejected or a resource it
 * needs went missing or refused it (see {@link QueueConsumer.closed}).
 */
export type QueueConsumerStatus = "idle" | "starting" | "running" | "stopping" | "stopped" | "failed";

/** The consumer's events and what each listener receives. */
export interface QueueConsumerEvents {
  /** The consumer started receiving. */
  started: Record<string, never>;
  /** A message arrived (before decoding). */
  received: {
    /** The message as received. */
    readonly message: ReceivedQueueMessage;
  };
  /** A receive came back empty; the consumer waits `delayInMs` before the next one. */
  empty: {
    /** The wait before the next receive, in milliseconds (from `pollingBackoff`). */
    readonly delayInMs: number;
    /** Empty receives in a row, this one included. */
    readonly emptyReceives: number;
  };
  /** The handler succeeded, its claim (if any) was completed, and the message was deleted. */
  processed: {
    /** The message. */
    readonly message: ReceivedQueueMessage;
    /** What the handler resolved to. */
    readonly result: unknown;
    /** How long the handler took, in milliseconds (decoding and claiming not included). */
    readonly durationInMs: number;
    /**
     * False when the message could not be deleted because the answer to one of its updates was
     * lost with its new pop receipt: it comes back after its visibility timeout and is then
     * deleted as a duplicate (by this consumer, or by any consumer when there is an idempotency
     * store), without running the handler again.
     */
    readonly messageDeleted: boolean;
  };
  /** The message's key was already done: it was deleted without running the handler. */
  duplicate: {
    /** The message. */
    readonly message: ReceivedQueueMessage;
    /** Its idempotency key. */
    readonly key: string;
    /** The result recorded when the key was done (undefined when it could not be kept: see `resultNotKept`). */
    readonly result: unknown;
  };
  /**
   * The handler's result could not be kept with the done mark (over 30,000 characters of JSON, or
   * not JSON): the key was marked done without it, so the handler does not run again for this key
   * (later duplicates report `result: undefined`). Emitted before `processed`, which still carries
   * the result. Return a small result (an id, a status) and store large outputs elsewhere.
   */
  resultNotKept: {
    /** The message. */
    readonly message: ReceivedQueueMessage;
    /** Its idempotency key. */
    readonly key: string;
    /** Why the store refused the result: a RangeError (too large) or a TypeError (not JSON-serialisable). */
    readonly error: unknown;
  };
  /**
   * Another consumer (or another message of this one) is processing the same key right now: this
   * message waits, kept invisible by its heartbeat, and claims again after `waitInMs`. Waiting is
   * not a delivery: it never counts towards `maxDequeueCount`.
   */
  deferred: {
    /** The message. */
    readonly message: ReceivedQueueMessage;
    /** Its idempotency key. */
    readonly key: string;
    /** The consumer id holding the key's claim. */
    readonly owner: string;
    /** When that claim expires unless its holder extends it. */
    readonly expiresOn: Date;
    /** How long this message waits before claiming again: until that claim would expire, at most the heartbeat interval. */
    readonly waitInMs: number;
  };
  /** The handler failed; the message becomes visible again after `retryInSeconds` (unless it was poisoned). */
  failed: {
    /** The message. */
    readonly message: ReceivedQueueMessage;
    /** What the handler threw ({@link ConsumerStoppedError} when `stop()` aborted it). */
    readonly error: unknown;
    /** False when this was the last reception allowed (`maxDequeueCount`): the message goes to the poison queue next. */
    readonly willRetry: boolean;
    /** When the message becomes visible again, in seconds from now (0 when the consumer stopped); undefined when it will not be retried. */
    readonly retryInSeconds: number | undefined;
  };
  /** The message was moved to the poison queue. */
  poisoned: {
    /** The message as it was received from the source queue. */
    readonly message: ReceivedQueueMessage;
    /** Why: too many receptions, a body that did not decode, or a key that could not be derived. */
    readonly reason: string;
    /** The error behind it, if any (the last handler error, a {@link MessageDecodeError}, …). */
    readonly error: unknown;
    /** The poison queue's name. */
    readonly poisonQueueName: string;
  };
  /** The message or its claim belongs to someone else now; it was not counted as processed. */
  ownershipLost: {
    /** The message. */
    readonly message: ReceivedQueueMessage;
    /** A {@link MessageOwnershipLostError} saying what was lost (the message or the claim) and by which operation. */
    readonly error: unknown;
  };
  /**
   * Something failed outside a handler (a receive, a delete, a heartbeat, a background purge); the consumer goes on.
   * Once, with a {@link ConsumerResourceError} and operation `"consume"`, when the consumer fails
   * (its queue or table was deleted, or its credential refused); it then stops with status `failed`.
   */
  error: {
    /** The failure. */
    readonly error: unknown;
    /** What the consumer was doing, e.g. `"receive messages"` or `"delete the message"`. */
    readonly operation: string;
    /** The message concerned, when there is one. */
    readonly message: ReceivedQueueMessage | undefined;
  };
  /** A background purge of the idempotency store finished (see {@link IdempotencyOptions.purge}). */
  purged: PurgeResult;
  /** The consumer has stopped (or failed): nothing of it is running any more. */
  stopped: {
    /** Why it failed ({@link ConsumerResourceError}); undefined when it was stopped. */
    readonly error: unknown;
  };
}

/** Options for {@link QueueConsumer.stop}. */
export interface StopOptions {
  /**
   * How long running handlers may still take before their signals are aborted.
   * @default the consumer's `gracePeriodInMs`
   */
  readonly gracePeriodInMs?: number;
  /**
   * The most `stop()` waits, in milliseconds from the call, at least the grace period. A handler
   * that ignores its aborted signal keeps running; `stop()` then resolves at this deadline with
   * `timedOut: true` and the messages still being processed (see {@link StopResult}).
   * @default no deadline: `stop()` waits for every handler
   */
  readonly timeoutInMs?: number;
}

/** What {@link QueueConsumer.stop} resolves to. */
export interface StopResult {
  /** True when `timeoutInMs` ran out before everything had stopped. */
  readonly timedOut: boolean;
  /**
   * The messages still being processed at the deadline (empty unless `timedOut`): their handlers
   * ignored the aborted signal. They go on in the background, kept invisible by their heartbeats,
   * until their handlers return or the process exits.
   */
  readonly stillRunning: readonly ReceivedQueueMessage[];
}
