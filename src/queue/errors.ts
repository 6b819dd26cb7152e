/**
 * The queue consumer's own errors. Each extends {@link StorageConcurrencyError} and has a guard
 * that checks the brand and the `name` (not `instanceof`, so two copies of the package agree).
 */
import { isStorageConcurrencyError, StorageConcurrencyError } from "../errors.js";

/**
 * A message body that the consumer's codec could not decode (not valid base64, not JSON, or
 * rejected by the codec's own check). Decoding is deterministic, so the consumer does not retry:
 * it moves the message to the poison queue at once with this error's message as the reason.
 */
export class MessageDecodeError extends StorageConcurrencyError {
  /** The codec that failed (`"json"`, `"base64"`, …). */
  readonly codec: string;
  /** The id of the message whose body did not decode, when known. */
  readonly messageId: string | undefined;

  constructor(message: string, options: { codec: string; messageId?: string | undefined; cause?: unknown }) {
    super(message, { code: "MessageDecodeFailed", cause: options.cause });
    this.name = "MessageDecodeError";
    this.codec = options.codec;
    this.messageId = options.messageId;
  }
}

/**
 * True when `error` is a {@link MessageDecodeError}.
 *
 * @example
 * ```ts
 * import { isMessageDecodeError, jsonCodec } from "azure-storage-concurrency/queue";
 *
 * try {
 *   jsonCodec().decode("{ not json");
 * } catch (error) {
 *   if (isMessageDecodeError(error)) console.log(`${error.codec}: ${error.message}`);
 * }
 * ```
 *
 * @deprecated Use `isStorageConcurrencyError(error, "MessageDecodeFailed")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isMessageDecodeError(error: unknown): error is MessageDecodeError {
  return isStorageConcurrencyError(error) && error.name === "MessageDecodeError";
}

/**
 * The consumer no longer owns a message or its idempotency claim: an update or delete of the
 * message failed with 404 MessageNotFound or 400 PopReceiptMismatch (another consumer received it
 * after its visibility timeout ran out, or someone deleted it), or another consumer took the
 * idempotency claim over. The consumer reports it and moves on; the message is not counted as
 * processed. A handler's `abortSignal` is aborted with this error when ownership is lost mid-work.
 */
export class MessageOwnershipLostError extends StorageConcurrencyError {
  /** The message concerned. */
  readonly messageId: string;
  /** What was lost: the message itself (its pop receipt), or the idempotency claim on its key. */
  readonly lost: "message" | "claim";
  /** The operation that found out (`"update"`, `"delete"`, `"extend-claim"`, `"complete-claim"`). */
  readonly operation: string;

  constructor(
    message: string,
    options: {
      messageId: string;
      lost: "message" | "claim";
      operation: string;
      statusCode?: number | undefined;
      serviceCode?: string | undefined;
      cause?: unknown;
    },
  ) {
    super(message, {
      code: options.lost === "message" ? "MessageOwnershipLost" : "ClaimOwnershipLost",
      statusCode: options.statusCode,
      serviceCode: options.serviceCode,
      cause: options.cause,
    });
    this.name = "MessageOwnershipLostError";
    this.messageId = options.messageId;
    this.lost = options.lost;
    this.operation = options.operation;
  }
}

/**
 * True when `error` is a {@link MessageOwnershipLostError}.
 *
 * @example
 * ```ts
 * import { QueueConsumer, isMessageOwnershipLostError } from "azure-storage-concurrency/queue";
 *
 * const consumer = new QueueConsumer(queueClient, async (body) => console.log(body));
 * consumer.on("ownershipLost", ({ message, error }) => {
 *   if (isMessageOwnershipLostError(error)) console.log(`${message.messageId}: lost the ${error.lost} (${error.serviceCode})`);
 * });
 * ```
 *
 * @deprecated Use `isStorageConcurrencyError(error, "MessageOwnershipLost") || isStorageConcurrencyError(error, "ClaimOwnershipLost")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isMessageOwnershipLostError(error: unknown): error is MessageOwnershipLostError {
  return isStorageConcurrencyError(error) && error.name === "MessageOwnershipLostError";
}

/** The reason a handler's signal is aborted when the consumer stops and the grace period has run out. */
export class ConsumerStoppedError extends StorageConcurrencyError {
  constructor(message = "The queue consumer was stopped and the grace period for in-flight handlers ran out.") {
    super(message, { code: "ConsumerStopped" });
    this.name = "ConsumerStoppedError";
  }
}

/**
 * True when `error` is a {@link ConsumerStoppedError}.
 *
 * @example
 * ```ts
 * import { QueueConsumer, isConsumerStoppedError } from "azure-storage-concurrency/queue";
 *
 * const consumer = new QueueConsumer(queueClient, async (body) => console.log(body));
 * consumer.on("failed", ({ error }) => {
 *   if (!isConsumerStoppedError(error)) console.warn(error);
 * });
 * ```
 *
 * @deprecated Use `isStorageConcurrencyError(error, "ConsumerStopped")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isConsumerStoppedError(error: unknown): error is ConsumerStoppedError {
  return isStorageConcurrencyError(error) && error.name === "ConsumerStoppedError";
}

/**
 * The reason a handler's `abortSignal` is aborted when it runs longer than the consumer's
 * `handlerTimeoutInMs` (a batch handler: the whole batch). The attempt counts as a failure of each
 * of its messages (retried after `retryBackoff`, poisoned at `maxDequeueCount`), whatever the
 * handler does afterwards: the consumer stops waiting for it, and its effects are not committed.
 */
export class HandlerTimeoutError extends StorageConcurrencyError {
  /** The time limit that ran out, in milliseconds. */
  readonly timeoutInMs: number;
  /** The messages of the attempt. */
  readonly messageIds: readonly string[];

  constructor(timeoutInMs: number, messageIds: readonly string[]) {
    super(
      `The handler of ${messageIds.length === 1 ? `message '${messageIds[0]}'` : `a batch of ${messageIds.length} messages`} ` +
        `did not finish within ${timeoutInMs} ms (\`handlerTimeoutInMs\`): the attempt counts as failed.`,
      { code: "HandlerTimedOut" },
    );
    this.name = "HandlerTimeoutError";
    this.timeoutInMs = timeoutInMs;
    this.messageIds = messageIds;
  }
}

/**
 * True when `error` is a {@link HandlerTimeoutError}.
 *
 * @example
 * ```ts
 * import { QueueConsumer, isHandlerTimeoutError } from "azure-storage-concurrency/queue";
 *
 * const consumer = new QueueConsumer(
 *   queueClient,
 *   async (url, { abortSignal }) => (await fetch(url, { signal: abortSignal })).status,
 *   { handlerTimeoutInMs: 5_000 },
 * );
 * consumer.on("failed", ({ message, error }) => {
 *   if (isHandlerTimeoutError(error)) console.warn(`${message.messageId} took longer than ${error.timeoutInMs} ms`);
 * });
 * ```
 *
 * @deprecated Use `isStorageConcurrencyError(error, "HandlerTimedOut")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isHandlerTimeoutError(error: unknown): error is HandlerTimeoutError {
  return isStorageConcurrencyError(error) && error.name === "HandlerTimeoutError";
}

/**
 * Which of the consumer's resources a {@link ConsumerResourceError} is about. `claimCheck`: a
 * message references a claim-check payload blob (large outbox and claim-check messages do) and the
 * consumer has no `claimCheck` option to read it with (its `resourceName` is the blob's container).
 */
export type ConsumerResource = "queue" | "poisonQueue" | "idempotencyStore" | "claimCheck";

/**
 * A resource the consumer needs is missing, refuses this credential, or cannot be reached: the
 * queue, the poison queue or the idempotency store (its table). `start()` rejects with it when its
 * checks fail; after start, a queue or table deleted under the consumer, or a 403, ends the consumer
 * with it (status `failed`, {@link QueueConsumer.closed} rejects, one `error` event). The message
 * names the resource and says how to fix it; `transient` says whether trying again may help (a
 * network failure at start) or not (404, 403). Messages being processed when it happens are left
 * as they are and come back after their visibility timeout: such a failure never counts towards
 * poisoning a message.
 */
export class ConsumerResourceError extends StorageConcurrencyError {
  /** The resource concerned. */
  readonly resource: ConsumerResource;
  /** Its name (the queue's or table's name). */
  readonly resourceName: string;
  /** Whether trying again later may help. */
  readonly transient: boolean;

  constructor(
    message: string,
    options: {
      resource: ConsumerResource;
      resourceName: string;
      transient: boolean;
      statusCode?: number | undefined;
      serviceCode?: string | undefined;
      cause?: unknown;
    },
  ) {
    super(message, {
      code: "ConsumerResourceFailed",
      statusCode: options.statusCode,
      serviceCode: options.serviceCode,
      cause: options.cause,
    });
    this.name = "ConsumerResourceError";
    this.resource = options.resource;
    this.resourceName = options.resourceName;
    this.transient = options.transient;
  }
}

/**
 * True when `error` is a {@link ConsumerResourceError}.
 *
 * @example
 * ```ts
 * import { QueueConsumer, isConsumerResourceError } from "azure-storage-concurrency/queue";
 *
 * const consumer = new QueueConsumer(queueClient, async (body) => console.log(body));
 * try {
 *   await consumer.start();
 * } catch (error) {
 *   // e.g. "The queue 'orders' does not exist (404 QueueNotFound). Create it ..."
 *   if (isConsumerResourceError(error)) console.error(error.resource, error.resourceName, error.message);
 *   throw error;
 * }
 * ```
 *
 * @deprecated Use `isStorageConcurrencyError(error, "ConsumerResourceFailed")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isConsumerResourceError(error: unknown): error is ConsumerResourceError {
  return isStorageConcurrencyError(error) && error.name === "ConsumerResourceError";
}

/**
 * The service refused (403) the entity group transaction that carries one message's effects with its
 * done mark: the credential may write the consumer's own rows (its claims and plain done marks
 * went through) but not this transaction, for instance a SAS limited to a partition or row range
 * that one effect leaves. The transaction is all-or-nothing, so nothing of it was written. It is a
 * failure of that message's attempt, not of the consumer: the claim is released, the message is
 * retried after `retryBackoff` and poisoned at `maxDequeueCount` (with this error as the reason),
 * a `failed` event carries it, and the consumer goes on with the other messages. A refusal of the
 * consumer's own requests (receive, claim, a done mark without effects, the poison queue), or a
 * credential refused outright (403 AuthenticationFailed), still ends the consumer with a
 * {@link ConsumerResourceError}.
 *
 * Seen on Azurite with a table-scoped SAS: Azurite (3.37) refuses every `$batch` made with one (it
 * signs the request as if its table were named `$batch`), while the service documents and accepts
 * them; see docs/queue-processing.md, "Least privilege and entity group transactions".
 */
export class EffectsRefusedError extends StorageConcurrencyError {
  /** The idempotency key whose done mark and effects were refused. */
  readonly key: string;

  constructor(
    key: string,
    options: { statusCode?: number | undefined; serviceCode?: string | undefined; cause?: unknown },
  ) {
    super(
      `The service refused the transaction of idempotency key '${key}' (its effects and done mark) with ` +
        `${options.statusCode ?? 403}${options.serviceCode ? ` ${options.serviceCode}` : ""}; nothing of it was written. ` +
        "The credential may write the inbox rows but not this transaction: one of the effects' rows is outside what it " +
        "allows (a SAS with a partition or row range, or without add (a), update (u) or delete (d) on the table). " +
        "(Azurite refuses every transaction made with a table-scoped SAS, which the service accepts.) " +
        "This message's attempt failed; the consumer goes on.",
      {
        code: "EffectsRefused",
        statusCode: options.statusCode,
        serviceCode: options.serviceCode,
        cause: options.cause,
      },
    );
    this.name = "EffectsRefusedError";
    this.key = key;
  }
}

/**
 * True when `error` is an {@link EffectsRefusedError}.
 *
 * @example
 * ```ts
 * import { QueueConsumer, isEffectsRefusedError } from "azure-storage-concurrency/queue";
 *
 * const consumer = new QueueConsumer(queueClient, async () => undefined);
 * consumer.on("failed", ({ message, error }) => {
 *   if (isEffectsRefusedError(error)) console.warn(`message ${message.messageId}: ${error.message}`);
 * });
 * ```
 *
 * @deprecated Use `isStorageConcurrencyError(error, "EffectsRefused")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isEffectsRefusedError(error: unknown): error is EffectsRefusedError {
  return isStorageConcurrencyError(error) && error.name === "EffectsRefusedError";
}
