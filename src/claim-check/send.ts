/**
 * Sending through the claim-check: a message that fits goes to the queue as it is (or in a small
 * envelope when it carries an idempotency key); a larger one is uploaded to a payload blob first,
 * and a reference to it is sent instead.
 *
 * Order and faults (each request under the client-side time limit):
 * 1. upload the payload (its metadata says until when its message may be delivered; see
 *    payload.ts). A missing container is created (404 ContainerNotFound), then the upload is sent
 *    again. An upload is idempotent: its name is new for every send.
 * 2. send the reference. A send is not idempotent: when its answer is lost, the SDK's retry may add
 *    a second copy; both copies refer to the same payload and carry the same idempotency key, so a
 *    consumer with an idempotency store handles them once, and deletes the payload only after one of
 *    them was settled.
 * 3. when the send fails, the payload is left for the sweep: a copy of the message may be in the
 *    queue after all (an earlier try of the SDK's may have been applied), and the sweep removes the
 *    payload only once no copy can be delivered. Nothing is ever deleted that a message may need.
 */
import type { QueueClient } from "@azure/storage-queue";
import type { ContainerClient } from "@azure/storage-blob";
import { serviceCodeOf, statusOf } from "../errors.js";
import { withTimeLimit } from "../internal/time-limit.js";
import { sdkTracing } from "../observability/scope.js";
import { classifyError } from "../retry/index.js";
import { envelopeText, ENVELOPE_KIND, MAX_MESSAGE_BYTES, messageBytes, type BlobEnvelope } from "../queue/internal.js";
import { ClaimCheckSendError } from "./errors.js";
import type { CheckedSendOptions, ClaimCheckSettings } from "./options.js";
import { compress, contentEncodingOf, PAYLOAD_METADATA, payloadBlobName } from "./payload.js";

/** What {@link ClaimCheck.sendMessage} did. */
export interface ClaimCheckSendResult {
  /** The service's id of the message. */
  readonly messageId: string;
  /** The message's pop receipt (to update or delete it without receiving it). */
  readonly popReceipt: string;
  /** When it was added. */
  readonly insertedOn: Date;
  /** When it expires. */
  readonly expiresOn: Date;
  /** When it becomes visible. */
  readonly nextVisibleOn: Date;
  /** The payload blob's name, when the payload went to a blob; undefined when the message carried it. */
  readonly payloadBlob: string | undefined;
  /** The idempotency key the message carries (the one given, or the payload blob's name), if any. */
  readonly idempotencyKey: string | undefined;
  /** The size of the message text sent, in UTF-8 bytes. */
  readonly messageBytes: number;
}

/** Sends `body` through the claim-check: see the file header. */
export async function sendThroughClaimCheck(
  settings: ClaimCheckSettings,
  queue: QueueClient,
  body: string | Uint8Array,
  options: CheckedSendOptions,
): Promise<ClaimCheckSendResult> {
  const text =
    typeof body === "string" ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("base64");
  const key = options.idempotencyKey;
  const inline = key === undefined ? text : envelopeText({ kind: ENVELOPE_KIND, key, text });
  const inlineBytes = messageBytes(inline);
  if (inlineBytes <= settings.thresholdInBytes) {
    const sent = await sendText(settings, queue, inline, options);
    return { ...sent, payloadBlob: undefined, idempotencyKey: key, messageBytes: inlineBytes };
  }

  const payload = typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body);
  const stored = await compress(payload, options.compression);
  const startedAt = Date.now();
  // The upload (twice, with a container creation between, at worst) and the send each end within their
  // time limit: no copy of the message can be added after four of them.
  const deliverableUntil = startedAt + 4 * settings.requestTimeoutInMs + options.messageTimeToLive * 1000;
  const blobName = payloadBlobName(settings.blobPrefix, deliverableUntil);
  const contentType =
    options.contentType ?? (typeof body === "string" ? "text/plain; charset=utf-8" : "application/octet-stream");
  await upload(settings, blobName, stored, {
    contentType,
    contentEncoding: contentEncodingOf(options.compression),
    metadata: {
      [PAYLOAD_METADATA.deliverableUntil]: String(deliverableUntil),
      [PAYLOAD_METADATA.messageTimeToLive]: String(options.messageTimeToLive),
    },
    abortSignal: options.abortSignal,
  });

  const envelope: BlobEnvelope = {
    kind: ENVELOPE_KIND,
    key: key ?? blobName,
    container: settings.container.containerName,
    blob: blobName,
    size: payload.length,
    stored: stored.length,
    compression: options.compression,
    contentType,
    body: typeof body === "string" ? "text" : "base64",
  };
  const reference = envelopeText(envelope);
  // A reference is a few hundred bytes (the key is at most 512 characters, the prefix 200).
  if (messageBytes(reference) > MAX_MESSAGE_BYTES) throw new RangeError("The claim-check reference is too large.");
  try {
    const sent = await sendText(settings, queue, reference, options);
    return { ...sent, payloadBlob: blobName, idempotencyKey: envelope.key, messageBytes: messageBytes(reference) };
  } catch (error) {
    const mayHaveBeenSent = !isRefusal(error);
    const status = statusOf(error);
    throw new ClaimCheckSendError(
      `Could not send the claim-check reference to queue '${queue.name}' (${status ?? "no answer"}${serviceCodeOf(error) ? ` ${serviceCodeOf(error)}` : ""}). ` +
        (mayHaveBeenSent
          ? `The message may have been added all the same: its payload '${blobName}' is kept for it, and the sweep removes it once the message can no longer be delivered.`
          : `The queue refused it: its payload '${blobName}' is left for the sweep, which removes it after ${new Date(deliverableUntil).toISOString()} (plus the grace).`),
      {
        statusCode: status,
        serviceCode: serviceCodeOf(error),
        transient: classifyError(error).transient,
        cause: error,
        payloadBlob: blobName,
        mayHaveBeenSent,
      },
    );
  }
}

/** A definite refusal: a 4xx other than 408 and 429 (no try of the request can have been applied). */
function isRefusal(error: unknown): boolean {
  const status = statusOf(error);
  return status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429;
}

async function sendText(
  settings: ClaimCheckSettings,
  queue: QueueClient,
  text: string,
  options: CheckedSendOptions,
): Promise<Omit<ClaimCheckSendResult, "payloadBlob" | "idempotencyKey" | "messageBytes">> {
  const response = await withTimeLimit(
    `send a message to queue '${queue.name}'`,
    settings.requestTimeoutInMs,
    options.abortSignal,
    (abortSignal) =>
      queue.sendMessage(text, {
        messageTimeToLive: options.messageTimeToLive,
        ...(options.visibilityTimeout === undefined ? {} : { visibilityTimeout: options.visibilityTimeout }),
        abortSignal,
        tracingOptions: sdkTracing(),
      }),
  );
  return {
    messageId: response.messageId,
    popReceipt: response.popReceipt,
    insertedOn: response.insertedOn,
    expiresOn: response.expiresOn,
    nextVisibleOn: response.nextVisibleOn,
  };
}

interface UploadOptions {
  readonly contentType: string;
  readonly contentEncoding: string | undefined;
  readonly metadata: Record<string, string>;
  readonly abortSignal: AbortSignal | undefined;
}

/** Uploads a payload in one Put Blob; creates the container when it is missing, then uploads again. */
async function upload(settings: ClaimCheckSettings, blobName: string, bytes: Buffer, options: UploadOptions) {
  const { container } = settings;
  const put = () =>
    withTimeLimit(
      `upload the claim-check payload '${blobName}' to container '${container.containerName}'`,
      settings.requestTimeoutInMs,
      options.abortSignal,
      (abortSignal) =>
        container.getBlockBlobClient(blobName).uploadData(bytes, {
          blobHTTPHeaders: {
            blobContentType: options.contentType,
            ...(options.contentEncoding ? { blobContentEncoding: options.contentEncoding } : {}),
          },
          metadata: options.metadata,
          abortSignal,
          tracingOptions: sdkTracing(),
        }),
    );
  try {
    await put();
  } catch (error) {
    if (statusOf(error) !== 404 || serviceCodeOf(error) !== "ContainerNotFound") throw error;
    await createContainer(container, settings.requestTimeoutInMs, options.abortSignal);
    await put();
  }
}

async function createContainer(container: ContainerClient, timeLimitInMs: number, abortSignal?: AbortSignal) {
  await withTimeLimit(`create container '${container.containerName}'`, timeLimitInMs, abortSignal, (signal) =>
    container.createIfNotExists({ abortSignal: signal, tracingOptions: sdkTracing() }),
  );
}
