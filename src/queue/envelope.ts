/**
 * What a claim-check message looks like in the queue, and how big a message may be.
 *
 * Size: Azure Queue Storage takes message text of up to 64 KiB, counted as the UTF-8 bytes of the
 * text the service stores (Put Message: "The encoded message can be up to 64 KiB"; "this size refers
 * to the size of the UTF-8 encoded message content", learn.microsoft.com/archive/blogs/avkashchauhan;
 * Azurite checks `Buffer.from(messageText, "utf8").length > 65536` in MessagesHandler.enqueue). The
 * JavaScript SDK sends the text as given inside its XML body (no base64: see `queue/codecs.ts`), and
 * the XML escaping of `<` or `&` is undone by the service before it counts. So a text fits when its
 * UTF-8 byte length is at most {@link MAX_MESSAGE_BYTES}: 65,536 ASCII characters, 21,845 three-byte
 * characters, 49,152 bytes of binary data once base64-encoded (the .NET and Functions convention).
 *
 * Envelope: a message that is not plain text is a small JSON object whose first member is
 * `"kind":"azure-storage-concurrency/claim-check@1"`, so that telling it from a plain message costs
 * one `startsWith`. It carries an idempotency key (an outbox row's id, or the payload blob's name)
 * and either the message text itself (`text`, a small message that needs a key) or where its
 * payload is (`blob`). A message that needs neither is sent as it is: no envelope, no overhead, and
 * consumers that know nothing of claim-checks read it as before.
 */
import { isStorageConcurrencyError } from "../errors.js";
import { MessageDecodeError } from "./errors.js";

/** The largest message text Azure Queue Storage accepts, in UTF-8 bytes (64 KiB). */
export const MAX_MESSAGE_BYTES = 64 * 1024;

/** The envelope's `kind`. */
export const ENVELOPE_KIND = "azure-storage-concurrency/claim-check@1";
const PREFIX = `{"kind":"${ENVELOPE_KIND}"`;

/** How a payload blob's bytes were compressed (the blob's `Content-Encoding`). */
export type ClaimCheckCompression = "none" | "gzip" | "brotli";

/** An envelope that carries the message text itself (a small message with an idempotency key). */
interface InlineEnvelope {
  readonly kind: typeof ENVELOPE_KIND;
  /** The idempotency key consumers use by default. */
  readonly key: string;
  /** The message text, exactly as the sender gave it. */
  readonly text: string;
}

/** An envelope that says where the payload is: a claim-check reference. */
export interface BlobEnvelope {
  readonly kind: typeof ENVELOPE_KIND;
  /** The idempotency key consumers use by default (the blob's name when the sender gave none). */
  readonly key: string;
  /** The payload blob's container. */
  readonly container: string;
  /** The payload blob's name. */
  readonly blob: string;
  /** The payload's size, in bytes, before compression. */
  readonly size: number;
  /** The blob's size, in bytes (after compression). */
  readonly stored: number;
  /** How the blob's bytes are compressed. */
  readonly compression: ClaimCheckCompression;
  /** What the payload is (`Content-Type`). */
  readonly contentType: string;
  /** `text`: the payload is the message text in UTF-8; `base64`: binary data, given to the consumer as base64 text. */
  readonly body: "text" | "base64";
}

type Envelope = InlineEnvelope | BlobEnvelope;

/** The UTF-8 size of a message text, as the service counts it. */
export function messageBytes(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

/** True when `messageText` is a claim-check envelope (one `startsWith`: plain messages pay nothing more). */
export function isEnvelopeText(messageText: string): boolean {
  return messageText.startsWith(PREFIX);
}

/** The message text of an envelope. */
export function envelopeText(envelope: Envelope): string {
  // `kind` first: the prefix test above relies on it.
  return JSON.stringify(envelope);
}

/**
 * Reads an envelope; `undefined` for a plain message. A text that starts like an envelope but is not
 * a valid one throws a {@link MessageDecodeError}: reading it again cannot succeed (the consumer
 * poisons it).
 */
export function parseEnvelope(messageText: string): Envelope | undefined {
  if (!isEnvelopeText(messageText)) return undefined;
  const invalid = (why: string) =>
    new MessageDecodeError(`The message is a claim-check envelope that cannot be read: ${why}.`, {
      codec: "claim-check",
    });
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(messageText) as Record<string, unknown>;
  } catch {
    throw invalid("it is not valid JSON");
  }
  if (typeof parsed.key !== "string" || parsed.key === "") throw invalid("its `key` is missing");
  if (typeof parsed.text === "string") return { kind: ENVELOPE_KIND, key: parsed.key, text: parsed.text };
  const { container, blob, size, stored, compression, contentType, body } = parsed;
  if (typeof container !== "string" || typeof blob !== "string" || blob === "")
    throw invalid("it names no payload blob");
  if (!isCount(size) || !isCount(stored)) throw invalid("its sizes are not whole numbers");
  if (compression !== "none" && compression !== "gzip" && compression !== "brotli")
    throw invalid(`its compression ${JSON.stringify(compression)} is unknown`);
  if (body !== "text" && body !== "base64") throw invalid(`its body kind ${JSON.stringify(body)} is unknown`);
  return {
    kind: ENVELOPE_KIND,
    key: parsed.key,
    container,
    blob,
    size,
    stored,
    compression,
    contentType: typeof contentType === "string" ? contentType : "application/octet-stream",
    body,
  };
}

/** The reference of an envelope, or undefined for a plain text or an inline envelope; never throws. */
export function blobEnvelopeOf(messageText: string): BlobEnvelope | undefined {
  try {
    const envelope = parseEnvelope(messageText);
    return envelope && "blob" in envelope ? envelope : undefined;
  } catch (error) {
    if (isStorageConcurrencyError(error)) return undefined;
    throw error;
  }
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0;
}
