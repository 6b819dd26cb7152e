/**
 * The claim-check's options, checked once when it is made (and a send's, when it is called): a
 * TypeError or RangeError names the option and says what is allowed, before any request.
 */
import type { ContainerClient } from "@azure/storage-blob";
import {
  checkNonEmptyString,
  checkNumber,
  checkOptionalSignal,
  describeValue,
  optionalNumber,
} from "../internal/validate.js";
import { MAX_MESSAGE_BYTES, type ClaimCheckCompression } from "../queue/internal.js";
import type { OperationTracingOptions } from "../observability/scope.js";

/** The service's default message time to live: 7 days, in seconds. */
const DEFAULT_MESSAGE_TIME_TO_LIVE_IN_SECONDS = 604_800;
/** The longest idempotency key a message may carry, in characters (an inbox RowKey holds 1 KiB). */
const MAX_IDEMPOTENCY_KEY_LENGTH = 512;

/** Options for {@link ClaimCheck}. */
export interface ClaimCheckOptions {
  /**
   * Message texts larger than this many UTF-8 bytes (after the envelope that carries an
   * idempotency key, when there is one) go to a blob; 1 to 65536, the service's limit. Lower it to
   * keep large-but-legal messages out of the queue (a 60 KB message costs as much to receive as a
   * reference and a blob read).
   * @default 65536
   */
  readonly thresholdInBytes?: number;
  /**
   * The prefix of payload blob names in the container. The sweep looks only under it.
   * @default "claim-check/"
   */
  readonly blobPrefix?: string;
  /**
   * How payload blobs are compressed (`node:zlib`): `gzip`, `brotli` (smaller, slower to write), or
   * `none`. The blob's `Content-Encoding` says which, and consumers decompress whatever they find.
   * @default "none"
   */
  readonly compression?: ClaimCheckCompression;
  /**
   * The client-side time limit of each request the claim-check makes (a payload's upload or
   * download included), the SDK's own retries inside it included. A consumer cuts a download short
   * earlier when its message would become visible again before.
   * @default 30000
   */
  readonly requestTimeoutInMs?: number;
  /**
   * How long after a payload's message can no longer be delivered the sweep waits before deleting
   * the payload: it must be longer than the longest visibility timeout of the consumers (a message
   * received just before it expires is read a moment later) plus the clock skew between senders and
   * sweepers. A `QueueConsumer` refuses a claim-check whose grace is not longer than its visibility
   * timeout.
   * @default 3600000 (one hour)
   */
  readonly sweepGraceInMs?: number;
}

/** Options for {@link ClaimCheck.sendMessage}: the SDK's `sendMessage` options, and what the claim-check adds. */
export interface ClaimCheckSendOptions {
  /**
   * The message's time to live, in seconds (as the SDK's `messageTimeToLive`). A claim-check message
   * must expire: its payload lives as long as it can be delivered, and no longer. -1 (never) is refused.
   * @default 604800 (7 days, the service's default)
   */
  readonly messageTimeToLive?: number;
  /**
   * How long the message stays invisible after it is added, in seconds (as the SDK's
   * `visibilityTimeout`); shorter than the time to live.
   * @default 0
   */
  readonly visibilityTimeout?: number;
  /**
   * What the payload is, recorded as the blob's `Content-Type`.
   * @default "text/plain; charset=utf-8" for text, "application/octet-stream" for bytes
   */
  readonly contentType?: string;
  /**
   * The idempotency key consumers use by default (`QueueConsumer` with an idempotency store and no
   * `key` option): an outbox row's id, an order id. A message that has one is sent in a small JSON
   * envelope even when it is small. Without it, a message whose payload is in a blob has the blob's
   * name as its key, so that copies of one send are recognised as one message.
   */
  readonly idempotencyKey?: string;
  /** Another compression than the claim-check's, for this payload. */
  readonly compression?: ClaimCheckCompression;
  /** Cancels the upload and the send. A send cancelled after it went out may still have been added. */
  readonly abortSignal?: AbortSignal;
  /**
   * As the Azure SDK's operations take them: `tracingContext` is the parent of the call's span
   * (`asc.claim_check.send`), and so of the SDK's spans under it. Default: the active context.
   */
  readonly tracingOptions?: OperationTracingOptions;
}

/** Options of the claim-check's calls that read or settle a message. */
export interface ClaimCheckCallOptions {
  /** Cancels the requests. */
  readonly abortSignal?: AbortSignal;
  /**
   * A shorter client-side time limit for each request than the claim-check's `requestTimeoutInMs`
   * (a consumer passes what is left of its message's visibility timeout).
   */
  readonly timeLimitInMs?: number;
}

/** The options, checked and with their defaults. */
export interface ClaimCheckSettings {
  readonly container: ContainerClient;
  readonly thresholdInBytes: number;
  readonly blobPrefix: string;
  readonly compression: ClaimCheckCompression;
  readonly requestTimeoutInMs: number;
  readonly sweepGraceInMs: number;
}

/** A send's options, checked, with defaults. */
export interface CheckedSendOptions {
  readonly messageTimeToLive: number;
  readonly visibilityTimeout: number | undefined;
  readonly contentType: string | undefined;
  readonly idempotencyKey: string | undefined;
  readonly compression: ClaimCheckCompression;
  readonly abortSignal: AbortSignal | undefined;
}

export function resolveClaimCheckOptions(container: unknown, options: unknown): ClaimCheckSettings {
  if (
    typeof container !== "object" ||
    container === null ||
    typeof (container as ContainerClient).getBlockBlobClient !== "function"
  ) {
    throw new TypeError("`containerClient` must be a ContainerClient from @azure/storage-blob.");
  }
  if (typeof options !== "object" || options === null) throw new TypeError("`options` must be an object.");
  const o = options as ClaimCheckOptions;
  const blobPrefix = o.blobPrefix === undefined ? "claim-check/" : checkPrefix(o.blobPrefix);
  return {
    container: container as ContainerClient,
    thresholdInBytes: optionalNumber("thresholdInBytes", o.thresholdInBytes, MAX_MESSAGE_BYTES, {
      min: 1,
      max: MAX_MESSAGE_BYTES,
      integer: true,
    }),
    blobPrefix,
    compression: checkCompression("compression", o.compression) ?? "none",
    requestTimeoutInMs: optionalNumber("requestTimeoutInMs", o.requestTimeoutInMs, 30_000, { min: 1 }),
    sweepGraceInMs: optionalNumber("sweepGraceInMs", o.sweepGraceInMs, 3_600_000, { min: 0 }),
  };
}

export function checkSendOptions(options: unknown, settings: ClaimCheckSettings): CheckedSendOptions {
  if (typeof options !== "object" || options === null) throw new TypeError("`options` must be an object.");
  const o = options as ClaimCheckSendOptions;
  if (o.messageTimeToLive === -1) {
    throw new RangeError(
      "`messageTimeToLive` must not be -1 (never expire) for a claim-check message: its payload blob must be kept as long as the message can be delivered, and the sweep could never remove it. Give it a time to live in seconds.",
    );
  }
  const messageTimeToLive = optionalNumber(
    "messageTimeToLive",
    o.messageTimeToLive,
    DEFAULT_MESSAGE_TIME_TO_LIVE_IN_SECONDS,
    { min: 1, integer: true },
  );
  const visibilityTimeout =
    o.visibilityTimeout === undefined
      ? undefined
      : checkNumber("visibilityTimeout", o.visibilityTimeout, { min: 0, max: 604_800, integer: true });
  if (visibilityTimeout !== undefined && visibilityTimeout >= messageTimeToLive) {
    throw new RangeError(
      `\`visibilityTimeout\` (${visibilityTimeout} s) must be shorter than \`messageTimeToLive\` (${messageTimeToLive} s): the message would expire before anyone could receive it.`,
    );
  }
  const contentType = o.contentType === undefined ? undefined : checkNonEmptyString("contentType", o.contentType);
  let idempotencyKey: string | undefined;
  if (o.idempotencyKey !== undefined) {
    idempotencyKey = checkNonEmptyString("idempotencyKey", o.idempotencyKey);
    if (idempotencyKey.length > MAX_IDEMPOTENCY_KEY_LENGTH)
      throw new RangeError(
        `\`idempotencyKey\` has ${idempotencyKey.length} characters; at most ${MAX_IDEMPOTENCY_KEY_LENGTH} are allowed (it travels in every message and becomes an inbox row's key).`,
      );
  }
  checkOptionalSignal("abortSignal", o.abortSignal);
  return {
    messageTimeToLive,
    visibilityTimeout,
    contentType,
    idempotencyKey,
    compression: checkCompression("compression", o.compression) ?? settings.compression,
    abortSignal: o.abortSignal,
  };
}

export function checkCallOptions(options: unknown): ClaimCheckCallOptions {
  if (typeof options !== "object" || options === null) throw new TypeError("`options` must be an object.");
  const o = options as ClaimCheckCallOptions;
  checkOptionalSignal("abortSignal", o.abortSignal);
  if (o.timeLimitInMs !== undefined) checkNumber("timeLimitInMs", o.timeLimitInMs, { min: 1 });
  return o;
}

function checkCompression(name: string, value: unknown): ClaimCheckCompression | undefined {
  if (value === undefined) return undefined;
  if (value === "none" || value === "gzip" || value === "brotli") return value;
  throw new TypeError(`\`${name}\` must be "none", "gzip" or "brotli", got ${describeValue(value)}.`);
}

function checkPrefix(value: unknown): string {
  const prefix = checkNonEmptyString("blobPrefix", value);
  // eslint-disable-next-line no-control-regex -- the control characters are the point: blob names may not hold them
  if (prefix.length > 200 || /[\\?#\u0000-\u001f]/.test(prefix) || prefix.startsWith("/")) {
    throw new RangeError(
      `\`blobPrefix\` ${describeValue(prefix)} is not a usable blob name prefix: at most 200 characters, no \\, ?, # or control characters, not starting with /.`,
    );
  }
  return prefix;
}
