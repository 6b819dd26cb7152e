/**
 * A payload blob: its name, its metadata, and its bytes (optionally compressed).
 *
 * The lifecycle rule every payload follows (docs/claim-check.md, "When a payload is deleted"):
 *
 * - it is uploaded before its message is sent, with the time until which that message can be
 *   delivered in its metadata (`deliverableuntil`, epoch milliseconds): the upload's start + the
 *   time the upload and the send may take (their client-side time limits) + the message's time to
 *   live. A queue message cannot be received after it expires, and a send cannot be applied after
 *   its time limit has cut it off, so no copy of the message exists past that time;
 * - it is deleted after a copy of its message was settled (processed, or deleted as a duplicate),
 *   unless it was kept for the poison queue (`poisonedon` in its metadata);
 * - the sweep deletes it only once `deliverableuntil` + the grace has passed, and never one kept
 *   for the poison queue. The grace covers clock skew between the sender and the sweeper and a
 *   consumer that received the message just before it expired and reads the payload a moment
 *   later: it must be longer than the longest visibility timeout of the consumers.
 *
 * Names sort by that time (`<prefix><yyyymmddThhmmssZ>/<uuid>`), so the sweep lists in the order
 * payloads become deletable and stops at the first one that is not.
 */
import { randomUUID } from "node:crypto";
import { promisify } from "node:util";
import { brotliCompress, brotliDecompress, constants, gunzip, gzip } from "node:zlib";
import type { ClaimCheckCompression } from "../queue/internal.js";

/** Metadata names on a payload blob (lowercase: the service keeps metadata names case-insensitively). */
export const PAYLOAD_METADATA = {
  /** Epoch milliseconds until which a copy of the payload's message may be delivered. */
  deliverableUntil: "deliverableuntil",
  /** The message's time to live, in seconds. */
  messageTimeToLive: "messagettl",
  /** Set (ISO 8601) when the payload's message went to the poison queue: the sweep keeps it. */
  poisonedOn: "poisonedon",
} as const;

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);
const brotliAsync = promisify(brotliCompress);
const unbrotliAsync = promisify(brotliDecompress);

/** The blob's `Content-Encoding` for a compression. */
export function contentEncodingOf(compression: ClaimCheckCompression): string | undefined {
  return compression === "gzip" ? "gzip" : compression === "brotli" ? "br" : undefined;
}

/** Compresses a payload for its blob. */
export async function compress(bytes: Buffer, compression: ClaimCheckCompression): Promise<Buffer> {
  if (compression === "gzip") return gzipAsync(bytes);
  // Quality 5 of 11: most of brotli's gain at a fraction of its default's time (16 MiB in well under a second).
  if (compression === "brotli") return brotliAsync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 5 } });
  return bytes;
}

/** Decompresses a payload blob's bytes. */
export async function decompress(bytes: Buffer, compression: ClaimCheckCompression): Promise<Buffer> {
  if (compression === "gzip") return gunzipAsync(bytes);
  if (compression === "brotli") return unbrotliAsync(bytes);
  return bytes;
}

/** `2025-01-02T03:04:05.678Z` as `20250102T030405Z`: fixed width, sorts as time does. */
export function timeKey(epochMs: number): string {
  return new Date(epochMs)
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
}

/** A new payload blob's name: sorted by the time its message stops being deliverable. */
export function payloadBlobName(prefix: string, deliverableUntilMs: number): string {
  return `${prefix}${timeKey(deliverableUntilMs)}/${randomUUID()}`;
}

/** The time key at the start of a payload name (after `prefix`), or undefined for a name of another shape. */
export function timeKeyOfName(prefix: string, name: string): string | undefined {
  if (!name.startsWith(prefix)) return undefined;
  const key = name.slice(prefix.length, prefix.length + 16);
  return /^\d{8}T\d{6}Z$/.test(key) ? key : undefined;
}

/** When the payload's message stops being deliverable, from the blob's metadata; undefined when unreadable. */
export function deliverableUntilOf(metadata: Readonly<Record<string, string>> | undefined): number | undefined {
  const raw = metadata?.[PAYLOAD_METADATA.deliverableUntil];
  if (raw === undefined || !/^\d{1,16}$/.test(raw)) return undefined;
  return Number(raw);
}
