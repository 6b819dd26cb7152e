/**
 * Poison messages: a message that failed `maxDequeueCount` times, or whose body cannot be decoded,
 * is moved to the poison queue `<queue>-poison` (the Azure Functions queue trigger's convention,
 * https://learn.microsoft.com/azure/azure-functions/functions-bindings-storage-queue-trigger#poison-messages)
 * and then deleted from its queue. Azure queue messages carry no properties besides their text, so
 * the reason travels in a small JSON envelope around the original text ({@link PoisonEnvelope});
 * {@link parsePoisonMessage} reads it back.
 *
 * Order: send to the poison queue first, delete second (as the WebJobs SDK's QueueProcessor does,
 * https://github.com/Azure/azure-webjobs-sdk/blob/v2.x/src/Microsoft.Azure.WebJobs.Host/Queues/QueueProcessor.cs).
 * A crash between the two leaves the message in both queues, so it may be poisoned twice: the
 * poison queue is at-least-once too, never at-most-once.
 */
import { sdkTracing } from "../observability/scope.js";
import type { QueueClient } from "@azure/storage-queue";
import { withTimeLimit } from "../internal/time-limit.js";
import { serviceCodeOf, statusOf } from "../errors.js";
import { MAX_TRIES } from "./hold.js";
import { isAmbiguous, isResourceFailure, resourceError } from "./requests.js";

/** What the poison queue receives: the original message text and why it was poisoned. */
export interface PoisonEnvelope {
  /** Marks the envelope; always `"azure-storage-concurrency/poison@1"`. */
  readonly kind: "azure-storage-concurrency/poison@1";
  /** Why the message was poisoned (the last failure's message, or the decode error). */
  readonly reason: string;
  /** The error's `code` or `name`, when there was an error. */
  readonly errorCode: string | undefined;
  /** The original message text, unchanged. */
  readonly messageText: string;
  /** The id of the original message in its queue. */
  readonly messageId: string;
  /** How many times it had been received. */
  readonly dequeueCount: number;
  /** The queue it came from. */
  readonly sourceQueue: string;
  /** When it was inserted into its queue (ISO 8601). */
  readonly insertedOn: string | undefined;
  /** When it was poisoned (ISO 8601). */
  readonly poisonedOn: string;
  /**
   * The claim-check payload blob the message refers to (its name in the claim-check's container),
   * kept for the poison queue: delete it when you are done with the poison message
   * (`ClaimCheck.sweep` never does). Absent for a message without one.
   */
  readonly payloadBlob?: string;
}

/** The largest message text Azure Queue Storage accepts, in characters (64 KiB). */
export const MAX_MESSAGE_TEXT_LENGTH = 64 * 1024;
const MAX_REASON_LENGTH = 2_000;
const KIND = "azure-storage-concurrency/poison@1";

/** Builds the poison queue's message text for a message. When the envelope would be too large, the original text alone. */
export function buildPoisonMessageText(
  message: { messageId: string; messageText: string; dequeueCount: number; insertedOn?: Date | undefined },
  sourceQueue: string,
  reason: string,
  errorCode: string | undefined,
  payloadBlob?: string,
): { text: string; enveloped: boolean } {
  const envelope: PoisonEnvelope = {
    kind: KIND,
    reason: reason.length > MAX_REASON_LENGTH ? `${reason.slice(0, MAX_REASON_LENGTH)}…` : reason,
    errorCode,
    messageText: message.messageText,
    messageId: message.messageId,
    dequeueCount: message.dequeueCount,
    sourceQueue,
    insertedOn: message.insertedOn?.toISOString(),
    poisonedOn: new Date().toISOString(),
    ...(payloadBlob === undefined ? {} : { payloadBlob }),
  };
  const text = JSON.stringify(envelope);
  if (text.length <= MAX_MESSAGE_TEXT_LENGTH) return { text, enveloped: true };
  // The original alone still fits (it came from a queue): keep the message, lose the reason.
  return { text: message.messageText, enveloped: false };
}

/**
 * Reads a poison queue message written by the consumer; `undefined` for any other text (for
 * example a message too large for the envelope, which is moved as it was).
 *
 * @example
 * ```ts
 * import { QueueClient } from "@azure/storage-queue";
 * import { parsePoisonMessage, poisonQueueNameOf } from "azure-storage-concurrency/queue";
 *
 * const poisonQueue = new QueueClient(connectionString, poisonQueueNameOf("orders"));
 * const { receivedMessageItems } = await poisonQueue.receiveMessages({ numberOfMessages: 32 });
 * for (const item of receivedMessageItems) {
 *   const poisoned = parsePoisonMessage(item.messageText);
 *   console.log(poisoned?.reason, poisoned?.messageText);
 * }
 * ```
 */
export function parsePoisonMessage(messageText: string): PoisonEnvelope | undefined {
  if (!messageText.startsWith("{")) return undefined;
  try {
    const parsed = JSON.parse(messageText) as Partial<PoisonEnvelope>;
    return parsed.kind === KIND && typeof parsed.messageText === "string" ? (parsed as PoisonEnvelope) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The name of a queue's poison queue: `<queue>-poison`.
 *
 * @example
 * ```ts
 * import { poisonQueueNameOf } from "azure-storage-concurrency/queue";
 *
 * poisonQueueNameOf("orders"); // "orders-poison"
 * ```
 */
export function poisonQueueNameOf(queueName: string): string {
  return `${queueName}-poison`;
}

/** The URL of a queue named `name` next to the queue at `queueUrl` (same account, same query string). */
export function siblingQueueUrl(queueUrl: string, name: string): string {
  const url = new URL(queueUrl);
  const segments = url.pathname.split("/");
  const last = segments.length - 1 - [...segments].reverse().findIndex((s) => s !== "");
  segments[last] = encodeURIComponent(name);
  url.pathname = segments.join("/");
  return url.toString();
}

/**
 * A client for `<queue>-poison` built from the consumer's own client: same URL but the last path
 * segment, same pipeline (credentials, retries, proxies). A client whose credential is a SAS for
 * one queue only cannot reach another queue: pass `poisonQueue` to the consumer then.
 */
export function derivePoisonQueue(queue: QueueClient): QueueClient {
  const pipeline = (queue as unknown as { pipeline?: unknown }).pipeline;
  const Client = queue.constructor as new (url: string, pipeline: unknown) => QueueClient;
  if (pipeline === undefined || typeof Client !== "function") {
    throw new TypeError("Cannot derive the poison queue's client from `queueClient`: pass the `poisonQueue` option.");
  }
  return new Client(siblingQueueUrl(queue.url, poisonQueueNameOf(queue.name)), pipeline);
}

/** How the poison writer limits its requests. */
interface PoisonSendOptions {
  /** The client-side time limit of each request. */
  readonly requestTimeoutInMs: number;
  /** How long the source message is certainly still hidden: an ambiguous send is tried again only while it is. */
  readonly remainingInMs: () => number;
}

/**
 * Sends to a poison queue. It sends first and creates the queue only when the send answers 404
 * QueueNotFound, then sends again: a credential that may only add messages to an existing poison
 * queue (a queue-scoped SAS with add rights, the least privilege) can poison, because it never
 * needs the create rights it lacks.
 *
 * Sending is not idempotent: when the answer to a send is lost after the service applied it, the
 * retry (the SDK's, or this writer's) adds a second, identical copy. Copies carry the same
 * `messageId`, `dequeueCount` and `poisonedOn`, so readers can tell them apart from a message
 * poisoned twice.
 */
export class PoisonQueueWriter {
  readonly #queue: QueueClient;
  readonly #timeToLiveInSeconds: number;

  /** @param timeToLiveInSeconds - the poison messages' time to live; -1 keeps them until deleted. */
  constructor(queue: QueueClient, timeToLiveInSeconds: number) {
    this.#queue = queue;
    this.#timeToLiveInSeconds = timeToLiveInSeconds;
  }

  get name(): string {
    return this.#queue.name;
  }

  /** The poison queue's client. */
  get client(): QueueClient {
    return this.#queue;
  }

  /** Sends `text`; rejects with the last failure (a resource failure as {@link ConsumerResourceError}). */
  async send(text: string, options: PoisonSendOptions): Promise<void> {
    // Tries of the send and of the creation, each after an ambiguous failure, while the source message is hidden.
    const again = (error: unknown, tries: number) =>
      isAmbiguous(error) && tries < MAX_TRIES && options.remainingInMs() > 0;
    let sends = 0;
    let creates = 0;
    for (;;) {
      try {
        sends += 1;
        await withTimeLimit(
          `send to the poison queue '${this.name}'`,
          options.requestTimeoutInMs,
          undefined,
          (abortSignal) =>
            this.#queue.sendMessage(text, {
              messageTimeToLive: this.#timeToLiveInSeconds,
              abortSignal,
              tracingOptions: sdkTracing(),
            }),
        );
        return;
      } catch (error) {
        if (isQueueMissing(error)) {
          if (creates >= MAX_TRIES) throw error; // someone keeps deleting it
        } else if (isResourceFailure(error)) {
          throw resourceError("poisonQueue", this.name, "send to the poison queue", error);
        } else if (again(error, sends)) {
          continue;
        } else {
          throw error;
        }
      }
      // 404 QueueNotFound: create it (the only request that needs create rights), then send again.
      for (;;) {
        try {
          creates += 1;
          await this.create(options.requestTimeoutInMs);
          break;
        } catch (error) {
          if (!again(error, creates)) throw error;
        }
      }
    }
  }

  /** Creates the poison queue if it does not exist. */
  async create(requestTimeoutInMs: number): Promise<void> {
    try {
      await withTimeLimit(`create the poison queue '${this.name}'`, requestTimeoutInMs, undefined, (abortSignal) =>
        this.#queue.createIfNotExists({ abortSignal, tracingOptions: sdkTracing() }),
      );
    } catch (error) {
      if (isResourceFailure(error)) throw resourceError("poisonQueue", this.name, "create the poison queue", error);
      throw error;
    }
  }
}

function isQueueMissing(error: unknown): boolean {
  return statusOf(error) === 404 && serviceCodeOf(error) === "QueueNotFound";
}
