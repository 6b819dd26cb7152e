/**
 * Reading a message through the claim-check: a plain message is its own text; an envelope gives
 * the text it carries, or the payload of the blob it names (one GET, under the time limit, checked
 * for its length, decompressed).
 *
 * What a failure means, for a consumer: a {@link MessageDecodeError} cannot get better by reading
 * again (an envelope that is not valid, another container, a payload that does not decompress): the
 * message is poisoned. A {@link ClaimCheckPayloadMissingError}: the payload is gone (see its doc).
 * Anything else (no answer, a 5xx, a body cut short) is transient: the message is tried again later.
 */
import { serviceCodeOf, statusOf, StorageRequestError } from "../errors.js";
import { withTimeLimit } from "../internal/time-limit.js";
import { readStream } from "../internal/stream.js";
import { sdkTracing } from "../observability/scope.js";
import { MessageDecodeError } from "../queue/index.js";
import { describeError } from "../internal/describe-error.js";
import { parseEnvelope, type BlobEnvelope } from "../queue/internal.js";
import { ClaimCheckPayloadMissingError } from "./errors.js";
import type { ClaimCheckCallOptions, ClaimCheckSettings } from "./options.js";
import { decompress } from "./payload.js";

/** A message's text as it was sent, with what its envelope said. */
export interface ResolvedMessage {
  /** The message text as the sender gave it: the payload, read from its blob for a claim-check reference. */
  readonly messageText: string;
  /** The idempotency key the message carries (an outbox row's id, or its payload blob's name), if any. */
  readonly idempotencyKey: string | undefined;
  /** The payload blob's name, when the message is a reference to one. */
  readonly payloadBlob: string | undefined;
}

/** Resolves a received message's text: see the file header. */
export async function resolveMessageText(
  settings: ClaimCheckSettings,
  messageText: string,
  options: ClaimCheckCallOptions,
): Promise<ResolvedMessage> {
  const envelope = parseEnvelope(messageText);
  if (!envelope) return { messageText, idempotencyKey: undefined, payloadBlob: undefined };
  if ("text" in envelope) return { messageText: envelope.text, idempotencyKey: envelope.key, payloadBlob: undefined };
  const container = settings.container.containerName;
  if (envelope.container !== container) {
    throw new MessageDecodeError(
      `The message's payload is in container '${envelope.container}', and this claim-check reads container '${container}': give the consumer a ClaimCheck on the container its senders use.`,
      { codec: "claim-check" },
    );
  }
  const stored = await download(settings, envelope, options);
  let payload: Buffer;
  try {
    payload = await decompress(stored, envelope.compression);
  } catch (error) {
    throw new MessageDecodeError(
      `The payload '${envelope.blob}' does not decompress as ${envelope.compression}: ${describeError(error)}`,
      { codec: "claim-check", cause: error },
    );
  }
  if (payload.length !== envelope.size) {
    throw new MessageDecodeError(
      `The payload '${envelope.blob}' holds ${payload.length} bytes once decompressed; its message says ${envelope.size}.`,
      { codec: "claim-check" },
    );
  }
  return {
    messageText: envelope.body === "text" ? payload.toString("utf8") : payload.toString("base64"),
    idempotencyKey: envelope.key,
    payloadBlob: envelope.blob,
  };
}

/** The time limit of one request: the claim-check's, or the caller's when shorter. */
export function limitOf(settings: ClaimCheckSettings, options: ClaimCheckCallOptions): number {
  return Math.min(settings.requestTimeoutInMs, options.timeLimitInMs ?? Infinity);
}

async function download(
  settings: ClaimCheckSettings,
  envelope: BlobEnvelope,
  options: ClaimCheckCallOptions,
): Promise<Buffer> {
  const blob = settings.container.getBlobClient(envelope.blob);
  let bytes: Buffer;
  try {
    bytes = await withTimeLimit(
      `read the claim-check payload '${envelope.blob}'`,
      limitOf(settings, options),
      options.abortSignal,
      async (abortSignal) => {
        const response = await blob.download(0, undefined, { abortSignal, tracingOptions: sdkTracing() });
        return readStream(response.readableStreamBody);
      },
    );
  } catch (error) {
    // 404 ContainerNotFound is about the container (deleted, or a wrong name): not this payload.
    if (statusOf(error) === 404 && serviceCodeOf(error) !== "ContainerNotFound") {
      throw new ClaimCheckPayloadMissingError(
        `The message's payload '${envelope.blob}' is not in container '${envelope.container}': another copy of the message was settled (its payload is deleted after that), or someone deleted it.`,
        { container: envelope.container, blobName: envelope.blob, idempotencyKey: envelope.key, cause: error },
      );
    }
    throw error;
  }
  if (bytes.length !== envelope.stored) {
    // A body cut short on the way: reading again may succeed.
    throw new StorageRequestError(
      `Could not read the claim-check payload '${envelope.blob}': ${bytes.length} of its ${envelope.stored} bytes arrived. This is transient: try again.`,
      { code: "ClaimCheckPayloadIncomplete", transient: true },
    );
  }
  return bytes;
}
