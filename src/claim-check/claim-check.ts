/**
 * `ClaimCheck`: queue messages of any size. A message over the threshold (64 KiB of UTF-8 by
 * default, the service's limit) is stored in a blob and a small reference is sent instead; a
 * consumer (the `claimCheck` option of `QueueConsumer`, or {@link ClaimCheck.receiveMessages})
 * reads it back, so handlers see the payload either way. Messages that fit go as they are.
 *
 * The pattern is the "claim check" of Enterprise Integration Patterns, as the Azure Architecture
 * Center describes it for queues (learn.microsoft.com/azure/architecture/patterns/claim-check);
 * Durable Task's Azure Storage backend, MassTransit's `MessageData` and NServiceBus's data bus do
 * the same. What this one adds is the lifecycle, proven under faults: a payload is written before
 * its message, deleted only after a copy of the message was settled, kept for the poison queue,
 * and swept only once no copy can be delivered (send.ts, lifecycle.ts, sweep.ts, payload.ts).
 */
import type { ContainerClient } from "@azure/storage-blob";
import type { DequeuedMessageItem, QueueClient, QueueReceiveMessageOptions } from "@azure/storage-queue";
import { withTimeLimit } from "../internal/time-limit.js";
import { checkTracingOptions, sdkTracing } from "../observability/scope.js";
import type { ConsumerClaimCheck } from "../queue/index.js";
import { deletePayload, keepPayload, type PayloadDeletion } from "./lifecycle.js";
import {
  checkCallOptions,
  checkSendOptions,
  resolveClaimCheckOptions,
  type ClaimCheckCallOptions,
  type ClaimCheckOptions,
  type ClaimCheckSendOptions,
  type ClaimCheckSettings,
} from "./options.js";
import { resolveMessageText, type ResolvedMessage } from "./read.js";
import { sendThroughClaimCheck, type ClaimCheckSendResult } from "./send.js";
import { sweepPayloads, type ClaimCheckSweepOptions, type ClaimCheckSweepResult } from "./sweep.js";
import { traceSend, traceSweep } from "./telemetry.js";

/** A received message, resolved: {@link ClaimCheck.receiveMessages}. */
export interface ClaimCheckReceivedMessage extends DequeuedMessageItem {
  /** The message text as the sender gave it (the payload, for a reference); the raw text when `error` is set. */
  readonly messageText: string;
  /** The text as it is in the queue: the reference, for a payload in a blob. Pass the message to `deleteMessage`. */
  readonly rawMessageText: string;
  /** The idempotency key the message carries, if any. */
  readonly idempotencyKey: string | undefined;
  /** The payload blob's name, when the message is a reference to one. */
  readonly payloadBlob: string | undefined;
  /**
   * Why the message could not be resolved, if it could not (a {@link ClaimCheckPayloadMissingError},
   * a `MessageDecodeError` for an envelope that cannot be read, or a transient failure): it stays
   * invisible for its visibility timeout and comes back.
   */
  readonly error: unknown;
}

/** What {@link ClaimCheck.receiveMessages} resolves to. */
export interface ClaimCheckReceiveResult {
  /** The messages received, each resolved (or with its `error`). */
  readonly receivedMessageItems: readonly ClaimCheckReceivedMessage[];
}

/** What {@link ClaimCheck.deleteMessage} did. */
export interface ClaimCheckDeleteResult {
  /** What became of the payload: `deleted`, `kept` (its message was poisoned meanwhile), `none` (no payload blob). */
  readonly payload: PayloadDeletion;
}

/**
 * Sends queue messages of any size through a blob container, and reads them back.
 *
 * @example
 * ```ts
 * import { ClaimCheck } from "azure-storage-concurrency/claim-check";
 *
 * const claimCheck = new ClaimCheck(containerClient, { compression: "gzip" });
 * // A 1 MiB report: uploaded to a blob, and a reference of a few hundred bytes goes to the queue.
 * await claimCheck.sendMessage(queueClient, JSON.stringify({ rows: "x".repeat(1 << 20) }), {
 *   contentType: "application/json",
 *   messageTimeToLive: 24 * 3600,
 * });
 *
 * const { receivedMessageItems } = await claimCheck.receiveMessages(queueClient, { numberOfMessages: 8 });
 * for (const message of receivedMessageItems) {
 *   if (message.error) continue; // comes back after its visibility timeout
 *   console.log(JSON.parse(message.messageText));
 *   await claimCheck.deleteMessage(queueClient, message); // the message, then its payload
 * }
 * // Now and then (e.g. hourly): remove the payloads of messages that can no longer be delivered.
 * await claimCheck.sweep();
 * ```
 */
export class ClaimCheck implements ConsumerClaimCheck {
  readonly #settings: ClaimCheckSettings;

  /**
   * @param containerClient - where payloads are stored (created on first use when missing).
   * @param options - see {@link ClaimCheckOptions}; checked here.
   */
  constructor(containerClient: ContainerClient, options: ClaimCheckOptions = {}) {
    this.#settings = resolveClaimCheckOptions(containerClient, options);
  }

  /** The payload container's name. */
  get containerName(): string {
    return this.#settings.container.containerName;
  }

  /** Message texts above this many UTF-8 bytes go to a blob. */
  get thresholdInBytes(): number {
    return this.#settings.thresholdInBytes;
  }

  /** How long after a payload's message can no longer be delivered the sweep may delete it. */
  get sweepGraceInMs(): number {
    return this.#settings.sweepGraceInMs;
  }

  /**
   * Sends `body` to `queueClient`: as it is when it fits (text as the message text, bytes as
   * base64), or as a reference to a payload blob uploaded first. A send that fails after the upload
   * rejects with a {@link ClaimCheckSendError} and leaves the payload for the sweep.
   *
   * @param queueClient - the queue.
   * @param body - the message text, or bytes (sent as base64, as .NET and Azure Functions expect them).
   * @param options - the SDK's `messageTimeToLive` and `visibilityTimeout` (seconds), and the claim-check's own.
   */
  async sendMessage(
    queueClient: QueueClient,
    body: string | Uint8Array,
    options: ClaimCheckSendOptions = {},
  ): Promise<ClaimCheckSendResult> {
    if (typeof queueClient?.sendMessage !== "function")
      throw new TypeError("`queueClient` must be a QueueClient from @azure/storage-queue.");
    if (typeof body !== "string" && !(body instanceof Uint8Array))
      throw new TypeError("`body` must be a string or a Uint8Array (a Buffer).");
    const checked = checkSendOptions(options, this.#settings);
    const parent = checkTracingOptions(options.tracingOptions);
    return traceSend(queueClient, parent, () => sendThroughClaimCheck(this.#settings, queueClient, body, checked));
  }

  /**
   * The text of a received message as it was sent: the payload for a reference (read from its blob),
   * the carried text for an envelope, the text itself for a plain message.
   *
   * @throws ClaimCheckPayloadMissingError when the payload is gone; MessageDecodeError when the
   *   envelope cannot be read or the payload does not decompress; a transient error otherwise.
   */
  resolve(messageText: string, options: ClaimCheckCallOptions = {}): Promise<ResolvedMessage> {
    if (typeof messageText !== "string") throw new TypeError("`messageText` must be a string.");
    return resolveMessageText(this.#settings, messageText, checkCallOptions(options));
  }

  /**
   * Receives messages (the SDK's `receiveMessages`, under the time limit) and resolves each one. A
   * message that cannot be resolved comes with its `error` and stays invisible until its
   * visibility timeout ends.
   */
  async receiveMessages(
    queueClient: QueueClient,
    options: QueueReceiveMessageOptions = {},
  ): Promise<ClaimCheckReceiveResult> {
    if (typeof queueClient?.receiveMessages !== "function")
      throw new TypeError("`queueClient` must be a QueueClient from @azure/storage-queue.");
    const { abortSignal } = checkCallOptions(options);
    const response = await withTimeLimit(
      `receive messages from queue '${queueClient.name}'`,
      this.#settings.requestTimeoutInMs,
      abortSignal,
      (signal) => queueClient.receiveMessages({ ...options, abortSignal: signal, tracingOptions: sdkTracing() }),
    );
    const items = await Promise.all(
      response.receivedMessageItems.map(async (item): Promise<ClaimCheckReceivedMessage> => {
        try {
          const resolved = await this.resolve(item.messageText, { abortSignal });
          return { ...item, ...resolved, rawMessageText: item.messageText, error: undefined };
        } catch (error) {
          return {
            ...item,
            rawMessageText: item.messageText,
            idempotencyKey: undefined,
            payloadBlob: undefined,
            error,
          };
        }
      }),
    );
    return { receivedMessageItems: items };
  }

  /**
   * Deletes a received message (with its pop receipt), then its payload. The payload is deleted
   * only once the message is, and kept if the message was poisoned meanwhile.
   *
   * @param message - as {@link receiveMessages} gave it (or any `{ messageId, popReceipt, messageText }` of a raw receive).
   */
  async deleteMessage(
    queueClient: QueueClient,
    message: {
      readonly messageId: string;
      readonly popReceipt: string;
      readonly rawMessageText?: string;
      readonly messageText: string;
    },
    options: ClaimCheckCallOptions = {},
  ): Promise<ClaimCheckDeleteResult> {
    if (typeof queueClient?.deleteMessage !== "function")
      throw new TypeError("`queueClient` must be a QueueClient from @azure/storage-queue.");
    const checked = checkCallOptions(options);
    await withTimeLimit(
      `delete message '${message.messageId}' from queue '${queueClient.name}'`,
      this.#settings.requestTimeoutInMs,
      checked.abortSignal,
      (abortSignal) =>
        queueClient.deleteMessage(message.messageId, message.popReceipt, { abortSignal, tracingOptions: sdkTracing() }),
    );
    return { payload: await this.deletePayload(message.rawMessageText ?? message.messageText, checked) };
  }

  /**
   * Deletes the payload of a message that was settled (deleted from its queue); keeps it when its
   * message went to the poison queue. Nothing for a message without a payload blob.
   */
  deletePayload(rawMessageText: string, options: ClaimCheckCallOptions = {}): Promise<PayloadDeletion> {
    return deletePayload(this.#settings, rawMessageText, checkCallOptions(options));
  }

  /**
   * Keeps the payload of a message that is about to go to the poison queue (call it before sending
   * the poison copy): neither a settled copy nor the sweep deletes it then. Resolves with the payload
   * blob's name, or undefined when the message has none.
   */
  keepPayload(rawMessageText: string, options: ClaimCheckCallOptions = {}): Promise<string | undefined> {
    return keepPayload(this.#settings, rawMessageText, checkCallOptions(options));
  }

  /**
   * Deletes the payloads whose messages can no longer be delivered: orphans of failed sends and of
   * crashes. Safe to run at any time and from several processes; run it now and then (hourly, or
   * daily). Never deletes a payload kept for the poison queue.
   */
  async sweep(options: ClaimCheckSweepOptions = {}): Promise<ClaimCheckSweepResult> {
    const parent = checkTracingOptions(options.tracingOptions);
    return traceSweep(this.#settings.container, parent, () => sweepPayloads(this.#settings, options));
  }
}
