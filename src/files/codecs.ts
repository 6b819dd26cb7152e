/**
 * How `updateFileUnderLease` turns a file's bytes into the value the caller's `mutate` sees, and
 * back: bytes as they are, UTF-8 text, or JSON.
 */

/** Decodes a file's content into a value and encodes a value back into content. */
export interface FileCodec<T> {
  /** For messages: `"bytes"`, `"text"`, `"json"`. */
  readonly name: string;
  /** Turns the file's bytes into a value; throws if they are not valid for this codec. */
  decode(bytes: Buffer): T;
  /** Turns a value into the bytes to write. */
  encode(value: T): Uint8Array | string;
}

/**
 * Ready-made codecs.
 *
 * @example
 * ```ts
 * import { fileCodecs, updateFileUnderLease } from "azure-storage-concurrency/files";
 *
 * // `handle`: a held fileLock's handle (a lease id works too).
 * await updateFileUnderLease(fileClient, handle, (settings) => ({ ...settings, retries: 5 }), {
 *   codec: fileCodecs.json<{ retries: number }>(),
 * });
 * ```
 */
export const fileCodecs: {
  /** The bytes as they are (a Buffer). */
  readonly bytes: FileCodec<Buffer>;
  /** UTF-8 text. */
  readonly text: FileCodec<string>;
  /** JSON (UTF-8): `JSON.parse` to read, `JSON.stringify` to write. An empty file reads as `undefined`. */
  json<T = unknown>(options?: { readonly space?: number }): FileCodec<T>;
} = Object.freeze({
  bytes: Object.freeze({ name: "bytes", decode: (bytes: Buffer) => bytes, encode: (value: Buffer) => value }),
  text: Object.freeze({
    name: "text",
    decode: (bytes: Buffer) => bytes.toString("utf8"),
    encode: (value: string) => value,
  }),
  json<T>(options: { readonly space?: number } = {}): FileCodec<T> {
    return Object.freeze({
      name: "json",
      decode: (bytes: Buffer) => (bytes.length === 0 ? undefined : JSON.parse(bytes.toString("utf8"))) as T,
      encode: (value: T) => {
        const text = JSON.stringify(value, undefined, options.space);
        if (text === undefined)
          throw new TypeError("The value to write does not serialise to JSON (JSON.stringify gave undefined).");
        return text;
      },
    });
  },
});
