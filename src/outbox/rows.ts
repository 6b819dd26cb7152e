/**
 * The outbox's rows, in the application's own partitions (an entity group transaction covers one
 * PartitionKey, so a message that must commit with an entity lives beside it):
 *
 * - the head, RowKey `~outbox:<name>`: the partition's next sequence number. Every outbox write
 *   updates it with `If-Match` in its transaction, so the writes of one partition are numbered in
 *   the order they commit (two writers that read the same head cannot both commit);
 * - one row per message, RowKey `~outbox:<name>:<sequence, 16 digits>`: its id, its payload (in
 *   binary properties of at most 64 KiB each, optionally gzip-compressed) and its send options.
 *   Rows sort by sequence, and a relay sends them in that order.
 *
 * `~` sorts after letters and digits, so the outbox's rows sit at the end of each partition, out of
 * the way of a query over the application's own rows. The relay finds them with a RowKey range
 * (`~outbox:<name>:` up to `~outbox:<name>;`) that leaves the head out.
 */
import { randomUUID } from "node:crypto";
import { promisify } from "node:util";
import { gunzip, gzip } from "node:zlib";
import type { TableEntity } from "@azure/data-tables";
import { padNumber } from "../tables/index.js";
import { checkNonEmptyString, checkNumber, describeValue } from "../internal/validate.js";
import { OutboxPayloadTooLargeError } from "./errors.js";

/** Bytes per binary property (the service's limit for one property). */
const CHUNK_BYTES = 64 * 1024;
/** Binary properties a row's payload may take: 15 x 64 KiB stays under the 1 MiB entity limit. */
const MAX_CHUNKS = 15;
/** The largest payload an outbox row holds (after compression), in bytes: 960 KiB. */
export const MAX_OUTBOX_PAYLOAD_BYTES = CHUNK_BYTES * MAX_CHUNKS;
/** Digits of a sequence number in a RowKey. */
const SEQUENCE_DIGITS = 16;
/** The longest message id, in characters (it becomes the consumer's idempotency key). */
const MAX_ID_LENGTH = 512;

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/** One message to put in the outbox. */
export interface OutboxMessage {
  /** The message text, or bytes (sent as base64, as the queue carries them). Large payloads go through the relay's claim-check. */
  readonly body: string | Uint8Array;
  /**
   * The message's id: the idempotency key its consumers use by default, the same on every send of
   * it (a relay that crashed after sending sends it again).
   * @default a random UUID
   */
  readonly id?: string;
  /**
   * The message's time to live in the queue, in seconds, from when the relay sends it.
   * @default the relay's `messageTimeToLive` (7 days)
   */
  readonly timeToLiveInSeconds?: number;
  /** What the payload is, for its claim-check blob (`Content-Type`). */
  readonly contentType?: string;
}

/** A message row as the relay reads it. */
interface OutboxRow {
  readonly partitionKey: string;
  readonly rowKey: string;
  readonly etag: string;
  readonly id: string;
  readonly sequence: number;
  readonly body: string | Uint8Array;
  readonly timeToLiveInSeconds: number | undefined;
  readonly contentType: string | undefined;
}

/** The head row's RowKey. */
export function headRowKey(name: string): string {
  return `~outbox:${name}`;
}

/** A message row's RowKey. */
export function messageRowKey(name: string, sequence: number): string {
  return `~outbox:${name}:${padNumber(sequence, SEQUENCE_DIGITS)}`;
}

/** The RowKey range of the message rows (exclusive bounds): the head is below it. */
export function messageRowRange(name: string): { readonly after: string; readonly before: string } {
  return { after: `~outbox:${name}:`, before: `~outbox:${name};` };
}

/** Checks an outbox's name: it becomes part of RowKeys and of the relay's lock blob's name. */
export function checkOutboxName(value: unknown): string {
  const name = checkNonEmptyString("name", value);
  if (!/^[A-Za-z0-9_-]{1,40}$/.test(name))
    throw new RangeError(`\`name\` ${describeValue(name)} must be 1 to 40 letters, digits, '-' or '_'.`);
  return name;
}

/** Checks the messages of one write; gives each its id. */
export function checkMessages(messages: unknown): { message: OutboxMessage; id: string }[] {
  if (!Array.isArray(messages))
    throw new TypeError("`messages` must be an array of { body, id?, timeToLiveInSeconds? }.");
  const ids = new Set<string>();
  return messages.map((message: unknown, index) => {
    if (typeof message !== "object" || message === null)
      throw new TypeError(`\`messages[${index}]\` must be an object { body, id?, timeToLiveInSeconds? }.`);
    const m = message as OutboxMessage;
    if (typeof m.body !== "string" && !(m.body instanceof Uint8Array))
      throw new TypeError(`\`messages[${index}].body\` must be a string or a Uint8Array.`);
    const id = m.id === undefined ? randomUUID() : checkNonEmptyString(`messages[${index}].id`, m.id);
    if (id.length > MAX_ID_LENGTH)
      throw new RangeError(
        `\`messages[${index}].id\` has ${id.length} characters; at most ${MAX_ID_LENGTH} are allowed.`,
      );
    if (ids.has(id))
      throw new RangeError(`\`messages[${index}].id\` ${describeValue(id)} is given twice in one write.`);
    ids.add(id);
    if (m.timeToLiveInSeconds !== undefined)
      checkNumber(`messages[${index}].timeToLiveInSeconds`, m.timeToLiveInSeconds, { min: 1, integer: true });
    if (m.contentType !== undefined) checkNonEmptyString(`messages[${index}].contentType`, m.contentType);
    return { message: m, id };
  });
}

/** The row of one message (its payload compressed and cut into binary properties). */
export async function messageRow(
  partitionKey: string,
  name: string,
  sequence: number,
  message: OutboxMessage,
  id: string,
  compression: "none" | "gzip",
): Promise<TableEntity> {
  const raw = typeof message.body === "string" ? Buffer.from(message.body, "utf8") : Buffer.from(message.body);
  const stored = compression === "gzip" ? await gzipAsync(raw) : raw;
  if (stored.length > MAX_OUTBOX_PAYLOAD_BYTES) {
    throw new OutboxPayloadTooLargeError(
      `The message '${id}' has ${stored.length} bytes${compression === "gzip" ? " after gzip" : ""}; an outbox row holds at most ${MAX_OUTBOX_PAYLOAD_BYTES} (15 properties of 64 KiB). ` +
        'Upload larger data to a blob of your own in the same write and put its name in the message, or turn on the outbox\'s `compression: "gzip"`.',
      { messageId: id, payloadBytes: stored.length },
    );
  }
  const chunks: Record<string, Uint8Array> = {};
  for (let i = 0; i * CHUNK_BYTES < stored.length; i++)
    chunks[`Body${i}`] = new Uint8Array(stored.subarray(i * CHUNK_BYTES, (i + 1) * CHUNK_BYTES));
  return {
    partitionKey,
    rowKey: messageRowKey(name, sequence),
    OutboxId: id,
    Sequence: sequence,
    BodyKind: typeof message.body === "string" ? "text" : "bytes",
    Compression: compression,
    BodyBytes: stored.length,
    ...chunks,
    ...(message.timeToLiveInSeconds === undefined ? {} : { TimeToLive: message.timeToLiveInSeconds }),
    ...(message.contentType === undefined ? {} : { ContentType: message.contentType }),
  };
}

/** Reads a message row; throws a TypeError naming what is wrong with a row the outbox did not write. */
export async function readMessageRow(entity: Record<string, unknown>): Promise<OutboxRow> {
  const where = `outbox row (${JSON.stringify(entity.partitionKey)}, ${JSON.stringify(entity.rowKey)})`;
  const { OutboxId: id, Sequence: sequence, BodyKind: kind, Compression: compression, BodyBytes: bytes } = entity;
  if (typeof id !== "string" || id === "") throw new TypeError(`The ${where} has no OutboxId.`);
  if (typeof sequence !== "number") throw new TypeError(`The ${where} has no Sequence.`);
  if (kind !== "text" && kind !== "bytes") throw new TypeError(`The ${where} has an unknown BodyKind.`);
  if (compression !== "none" && compression !== "gzip") throw new TypeError(`The ${where} has an unknown Compression.`);
  const parts: Buffer[] = [];
  for (let i = 0; entity[`Body${i}`] !== undefined; i++) {
    const chunk = entity[`Body${i}`];
    if (!(chunk instanceof Uint8Array)) throw new TypeError(`The ${where}'s Body${i} is not binary.`);
    parts.push(Buffer.from(chunk));
  }
  const stored = Buffer.concat(parts);
  if (stored.length !== bytes)
    throw new TypeError(`The ${where} holds ${stored.length} payload bytes, not ${String(bytes)}.`);
  const payload = compression === "gzip" ? await gunzipAsync(stored) : stored;
  return {
    partitionKey: String(entity.partitionKey),
    rowKey: String(entity.rowKey),
    etag: String(entity.etag),
    id,
    sequence,
    body: kind === "text" ? payload.toString("utf8") : new Uint8Array(payload),
    timeToLiveInSeconds: typeof entity.TimeToLive === "number" ? entity.TimeToLive : undefined,
    contentType: typeof entity.ContentType === "string" ? entity.ContentType : undefined,
  };
}
