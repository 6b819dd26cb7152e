/**
 * Key encoders for the advice of "Designing a Scalable Partitioning Strategy for Azure Table
 * Storage": the service sorts PartitionKey, then RowKey, as strings ("111" before "2"), so
 *
 * - numbers that must sort as numbers are zero-padded to a fixed width ({@link padNumber});
 * - newest-first order comes from an inverted timestamp ({@link invertedTimestampKey});
 * - entities with more than two key properties get a composite key of their values joined by a
 *   separator ({@link compositeKey}), escaped so that the key splits back into the same values;
 * - an append-only or prepend-only sequence (timestamps, counters) that would send every insert to
 *   the last range partition is spread by a stable hash bucket prefix ({@link bucketedKey}).
 *
 * Every encoder is pure and deterministic; none talks to the service.
 */
import { checkNonEmptyString, checkNumber } from "../internal/validate.js";

/**
 * A non-negative whole number as a zero-padded string of `width` digits, so that keys sort as the
 * numbers do ("002" before "111").
 *
 * @param value - a whole number from 0 up (a `bigint` for values past `Number.MAX_SAFE_INTEGER`).
 * @param width - how many digits; the value must fit.
 * @throws RangeError when the value is negative, not whole, or does not fit in `width` digits.
 *
 * @example
 * ```ts
 * import { padNumber } from "azure-storage-concurrency/tables";
 *
 * padNumber(55, 3); // "055"
 * padNumber(1234, 5); // "01234"
 * ```
 */
export function padNumber(value: number | bigint, width: number): string {
  checkNumber("width", width, { min: 1, max: 64, integer: true });
  let digits: string;
  if (typeof value === "bigint") {
    if (value < 0n) throw new RangeError(`\`value\` must be 0 or more, got ${value}.`);
    digits = value.toString();
  } else {
    checkNumber("value", value, { min: 0, max: Number.MAX_SAFE_INTEGER, integer: true });
    digits = String(value);
  }
  if (digits.length > width) {
    throw new RangeError(
      `\`value\` ${digits} does not fit in ${width} digits: choose a larger \`width\` for every key of this kind.`,
    );
  }
  return digits.padStart(width, "0");
}

/**
 * Reads back a key written by {@link padNumber}.
 *
 * @throws RangeError when `key` is not all digits or is past `Number.MAX_SAFE_INTEGER` (use `BigInt(key)`).
 *
 * @example
 * ```ts
 * import { parsePaddedNumber } from "azure-storage-concurrency/tables";
 *
 * parsePaddedNumber("055"); // 55
 * ```
 */
export function parsePaddedNumber(key: string): number {
  if (!/^\d+$/.test(key)) throw new RangeError(`\`key\` must be digits only, got ${JSON.stringify(key)}.`);
  const value = Number(key);
  if (!Number.isSafeInteger(value))
    throw new RangeError(`\`key\` ${key} is past Number.MAX_SAFE_INTEGER: read it with BigInt(key).`);
  return value;
}

/** .NET `DateTime.MaxValue.Ticks`: the inverted-ticks key that .NET code writes is this minus the ticks. */
const MAX_TICKS = 3_155_378_975_999_999_999n;
/** Ticks (100 ns) from 0001-01-01 to 1970-01-01. */
const EPOCH_TICKS = 621_355_968_000_000_000n;
const TICKS_PER_MS = 10_000n;

function toEpochMs(date: Date | number, name: string): number {
  const ms = typeof date === "number" ? date : date instanceof Date ? date.getTime() : Number.NaN;
  if (!Number.isFinite(ms))
    throw new TypeError(`\`${name}\` must be a valid Date or a number of milliseconds since 1970.`);
  return ms;
}

/**
 * A 19-digit key that sorts newest first: `DateTime.MaxValue.Ticks - ticks(date)`, the same key .NET
 * code writes with `(DateTime.MaxValue.Ticks - date.Ticks).ToString("D19")`, so both can share a table.
 * Resolution is one millisecond: add a unique suffix (with {@link compositeKey}) when two entities
 * can share a millisecond.
 *
 * As a PartitionKey it is the prepend-only pattern the document warns about; use it as a RowKey, or
 * spread it with {@link bucketedKey}.
 *
 * @example
 * ```ts
 * import { invertedTimestampKey } from "azure-storage-concurrency/tables";
 *
 * // The latest entry is the first row of the partition: a query with top 1 finds it.
 * await table.createEntity({ partitionKey: "device-7", rowKey: invertedTimestampKey(new Date()), celsius: 21.5 });
 * ```
 */
export function invertedTimestampKey(date: Date | number = Date.now()): string {
  const ms = toEpochMs(date, "date");
  if (ms < -62_135_596_800_000 || ms > 253_402_300_799_999)
    throw new RangeError("`date` must be between years 1 and 9999.");
  const ticks = EPOCH_TICKS + BigInt(Math.trunc(ms)) * TICKS_PER_MS;
  return (MAX_TICKS - ticks).toString().padStart(19, "0");
}

/**
 * Reads back the date of a key written by {@link invertedTimestampKey} (or by .NET code with
 * inverted ticks), to the millisecond.
 *
 * @example
 * ```ts
 * import { invertedTimestampKey, parseInvertedTimestampKey } from "azure-storage-concurrency/tables";
 *
 * parseInvertedTimestampKey(invertedTimestampKey(new Date("2024-05-01T00:00:00Z"))).toISOString();
 * // "2024-05-01T00:00:00.000Z"
 * ```
 */
export function parseInvertedTimestampKey(key: string): Date {
  if (!/^\d{19}$/.test(key)) throw new RangeError(`\`key\` must be 19 digits, got ${JSON.stringify(key)}.`);
  const ticks = MAX_TICKS - BigInt(key);
  const ms = (ticks - EPOCH_TICKS) / TICKS_PER_MS - ((ticks - EPOCH_TICKS) % TICKS_PER_MS < 0n ? 1n : 0n);
  return new Date(Number(ms));
}

/** Options for {@link compositeKey} and {@link parseCompositeKey}. */
export interface CompositeKeyOptions {
  /**
   * What goes between the parts. The document's examples use `__`
   * ("2011 New York City Marathon__Full").
   * @default "__"
   */
  readonly separator?: string;
  /**
   * The character that starts an escape: in a part, this character, every character of the
   * separator, and every character the service forbids in keys (`/ \ # ?` and control characters)
   * is written as the escape character followed by four hex digits of its UTF-16 code unit.
   * @default "~"
   */
  readonly escapeCharacter?: string;
}

// Characters the service forbids in keys (see validation.ts for the sources).
// eslint-disable-next-line no-control-regex -- the control characters are the point: the service refuses them
const FORBIDDEN_IN_KEYS = /[/\\#?\u0000-\u001f\u007f-\u009f]/;

function compositeSettings(options: CompositeKeyOptions) {
  const separator = checkNonEmptyString("separator", options.separator ?? "__");
  const escape = checkNonEmptyString("escapeCharacter", options.escapeCharacter ?? "~");
  if (escape.length !== 1) throw new RangeError("`escapeCharacter` must be one character.");
  if (separator.includes(escape)) throw new RangeError("`separator` must not contain `escapeCharacter`.");
  if (FORBIDDEN_IN_KEYS.test(separator) || FORBIDDEN_IN_KEYS.test(escape)) {
    throw new RangeError(
      "`separator` and `escapeCharacter` must not contain characters the service forbids in keys (/ \\ # ? or control characters).",
    );
  }
  if (/[0-9a-fA-F]/.test(escape)) throw new RangeError("`escapeCharacter` must not be a hex digit.");
  return { separator, escape };
}

/**
 * Joins several values into one key (the document: "more than two key properties: concatenate their
 * values into a composite key"). Each part is escaped so that {@link parseCompositeKey} gives the same
 * parts back, whatever they contain, and so that the key has no character the service forbids.
 *
 * Keys sort part by part when every part but the last has a fixed width (pad numbers with
 * {@link padNumber}); otherwise a part that is a prefix of another ("Ann" and "Anna") sorts by
 * whatever follows it, the separator or the next letter.
 *
 * @example
 * ```ts
 * import { compositeKey, padNumber } from "azure-storage-concurrency/tables";
 *
 * compositeKey(["2011 New York City Marathon", "Full"]); // "2011 New York City Marathon__Full"
 * compositeKey([`BIB:${padNumber(1234, 5)}`, "John", "M", "55"]); // "BIB:01234__John__M__55"
 * compositeKey(["a/b", "c"]); // "a~002fb__c"
 * ```
 */
export function compositeKey(parts: readonly string[], options: CompositeKeyOptions = {}): string {
  const { separator, escape } = compositeSettings(options);
  if (!Array.isArray(parts) || parts.length === 0) throw new TypeError("`parts` must be a non-empty array of strings.");
  return parts
    .map((part, index) => {
      if (typeof part !== "string") {
        throw new TypeError(`\`parts[${index}]\` must be a string (pad numbers with padNumber), got ${typeof part}.`);
      }
      let out = "";
      for (const ch of part) {
        if (ch === escape || separator.includes(ch) || FORBIDDEN_IN_KEYS.test(ch)) {
          // `ch` is one code point; forbidden and separator characters are single code units.
          out += escape + ch.charCodeAt(0).toString(16).padStart(4, "0");
        } else out += ch;
      }
      return out;
    })
    .join(separator);
}

/**
 * Splits a key written by {@link compositeKey} (with the same options) back into its parts.
 *
 * @throws RangeError when the key holds a malformed escape.
 *
 * @example
 * ```ts
 * import { parseCompositeKey } from "azure-storage-concurrency/tables";
 *
 * parseCompositeKey("BIB:01234__John__M__55"); // ["BIB:01234", "John", "M", "55"]
 * ```
 */
export function parseCompositeKey(key: string, options: CompositeKeyOptions = {}): string[] {
  const { separator, escape } = compositeSettings(options);
  if (typeof key !== "string") throw new TypeError("`key` must be a string.");
  return key.split(separator).map((part) => {
    let out = "";
    for (let i = 0; i < part.length; i++) {
      const ch = part[i]!;
      if (ch !== escape) {
        out += ch;
        continue;
      }
      const hex = part.slice(i + 1, i + 5);
      if (!/^[0-9a-f]{4}$/i.test(hex))
        throw new RangeError(`\`key\` has a malformed escape at ${JSON.stringify(part.slice(i, i + 5))}.`);
      out += String.fromCharCode(Number.parseInt(hex, 16));
      i += 4;
    }
    return out;
  });
}

/**
 * A stable 32-bit hash (FNV-1a over the UTF-8 bytes) of `value`, the same in every process and
 * every version of this library. Used for bucket prefixes.
 */
export function stableHash(value: string): number {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(value)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/**
 * Which of `bucketCount` buckets `value` falls in, from a stable hash: always the same bucket for the
 * same value, spread evenly over many values.
 *
 * @example
 * ```ts
 * import { bucketOf } from "azure-storage-concurrency/tables";
 *
 * bucketOf("device-42", 16); // a number from 0 to 15, the same on every run
 * ```
 */
export function bucketOf(value: string, bucketCount: number): number {
  if (typeof value !== "string") throw new TypeError("`value` must be a string.");
  checkNumber("bucketCount", bucketCount, { min: 1, max: 1_000_000, integer: true });
  return stableHash(value) % bucketCount;
}

/** Options for {@link bucketedKey}. */
export interface BucketedKeyOptions {
  /** How many buckets (partitions, or range-partition starting points) to spread over. */
  readonly bucketCount: number;
  /**
   * What goes between the bucket number and the key.
   * @default "_"
   */
  readonly separator?: string;
  /**
   * The value to hash, when it is not the key itself: hash a device id and append a timestamp, and
   * every reading of a device stays in one bucket while devices spread over all of them.
   * @default the key
   */
  readonly hashOf?: string;
}

function bucketWidth(bucketCount: number): number {
  return String(Math.max(0, bucketCount - 1)).length;
}

/**
 * Prefixes a key with its stable hash bucket, zero-padded (`"07_2024-05-01T10:00"`), so that an
 * append-only or prepend-only sequence of keys spreads over `bucketCount` places in the key space
 * instead of always hitting the last range partition. Reading a range back then takes one query per
 * bucket: see {@link bucketPrefixes}.
 *
 * @example
 * ```ts
 * import { bucketedKey, invertedTimestampKey } from "azure-storage-concurrency/tables";
 *
 * // Readings of one device stay together; devices spread over 16 partitions.
 * const partitionKey = bucketedKey("device-42", { bucketCount: 16 }); // e.g. "11_device-42"
 * // Or spread a time series itself, hashing something that varies:
 * const key = bucketedKey(invertedTimestampKey(), { bucketCount: 8, hashOf: "reading-9f1c" });
 * ```
 */
export function bucketedKey(key: string, options: BucketedKeyOptions): string {
  if (typeof key !== "string") throw new TypeError("`key` must be a string.");
  const separator = options.separator ?? "_";
  if (typeof separator !== "string") throw new TypeError("`separator` must be a string.");
  const bucket = bucketOf(options.hashOf ?? key, options.bucketCount);
  return `${String(bucket).padStart(bucketWidth(options.bucketCount), "0")}${separator}${key}`;
}

/**
 * Every bucket prefix {@link bucketedKey} can write for `bucketCount` (with the separator), in order:
 * the starting points of a fan-out query over a bucketed key space.
 *
 * @example
 * ```ts
 * import { bucketPrefixes } from "azure-storage-concurrency/tables";
 *
 * bucketPrefixes(4); // ["0_", "1_", "2_", "3_"]
 * ```
 */
export function bucketPrefixes(bucketCount: number, separator = "_"): string[] {
  checkNumber("bucketCount", bucketCount, { min: 1, max: 1_000_000, integer: true });
  const width = bucketWidth(bucketCount);
  return Array.from({ length: bucketCount }, (_, bucket) => `${String(bucket).padStart(width, "0")}${separator}`);
}
