/**
 * The port of the optimistic engine: a "versioned cell", one piece of stored state with an ETag
 * that changes on every write. Adapters implement it for block blobs, table entities and container
 * metadata; the engine (`engine.ts`) knows nothing else about the services.
 *
 * A cell separates what the caller works with (`T`, e.g. a parsed JSON document) from what is
 * stored (`C`, e.g. the blob's bytes): `decode` gives the caller a fresh copy every time, `encode`
 * checks a value and turns it into what will be written. That lets the engine cache the stored
 * form and hand each caller its own copy to change.
 */

/**
 * The reserved name of the write history each cell carries: a blob or container metadata key, a
 * table entity property. Do not use it for your own data; the cells refuse values that contain it.
 *
 * @example
 * ```ts
 * import { OPTIMISTIC_LOG_KEY } from "azure-storage-concurrency/optimistic";
 *
 * const { metadata } = await blob.getProperties();
 * const { [OPTIMISTIC_LOG_KEY]: _history, ...yours } = metadata ?? {};
 * ```
 */
export const OPTIMISTIC_LOG_KEY = "asc_optimistic";

/** One version of a cell, as read or as just written. */
export interface CellVersion<C> {
  /** The stored content, in the cell's stored form. */
  readonly content: C;
  /** The version's ETag. */
  readonly etag: string;
  /** The write history stored with it ({@link OPTIMISTIC_LOG_KEY}), if any. */
  readonly log: string | undefined;
  /** What the adapter keeps beside the content (other metadata, content type); opaque to the engine. */
  readonly extras?: unknown;
}

/** The condition a write is sent with. */
export type WriteCondition =
  | {
      /** Write only if the cell still has this ETag (`If-Match`). */
      readonly ifMatch: string;
    }
  | {
      /** Write only if the cell does not exist (`If-None-Match: *`). */
      readonly ifNoneMatch: "*";
    }
  | {
      /** Last writer wins: no ETag check. */
      readonly lastWriterWins: true;
      /** `true`: send `If-Match: *`, so that the write fails when the cell is absent; `false`: create the cell when absent. */
      readonly mustExist: boolean;
    };

/** Options for {@link VersionedCell.read}. */
export interface CellReadOptions {
  /** Cancels the read. */
  readonly abortSignal?: AbortSignal | undefined;
  /** Answer {@link NOT_MODIFIED} if the cell still has this ETag (adapters without server support compare themselves). */
  readonly ifNoneMatch?: string | undefined;
}

/** Options for {@link VersionedCell.write}. */
export interface CellWriteOptions {
  /** Cancels the write. */
  readonly abortSignal?: AbortSignal | undefined;
  /** The condition to send the write with. */
  readonly condition: WriteCondition;
  /** The write history to store with the content. */
  readonly log: string;
  /** The version the content was computed from (its extras are carried over), if any. */
  readonly base: CellVersion<unknown> | undefined;
  /**
   * Call this each time the request that changes the cell is sent, the SDK's own resends included
   * (the cells of this library count them through the SDK's upload progress callback, which runs
   * once per try). It lets the engine tell a refusal of the one request sent (a 412: an ordinary
   * conflict) from a refusal that may answer the SDK's resend of a request that was applied. A cell
   * that cannot count leaves it uncalled; the engine then reads back after every refusal that may
   * answer a resend.
   */
  readonly onSend?: (() => void) | undefined;
}

/**
 * Thrown by an adapter whose write takes several requests, when one failed before the request that
 * changes the cell was sent: nothing of this write can have been applied, so the engine need not
 * read back (a 412 or 409 as `cause` is a conflict; anything else fails the update, nothing written).
 *
 * @example
 * ```ts
 * import { WriteNotSent } from "azure-storage-concurrency/optimistic";
 *
 * declare function takeLock(): Promise<void>; // your store's first request, which changes nothing
 *
 * // inside a custom cell's write(), before the request that changes anything:
 * try {
 *   await takeLock();
 * } catch (error) {
 *   throw new WriteNotSent(error);
 * }
 * ```
 */
export class WriteNotSent {
  /** The failure of the earlier request (the engine handles it as that request's error). */
  readonly cause: unknown;

  /** @param cause - the failure of the earlier request. */
  constructor(cause: unknown) {
    this.cause = cause;
  }
}

/**
 * What {@link VersionedCell.read} answers when `ifNoneMatch` matched.
 *
 * @example
 * ```ts
 * import { NOT_MODIFIED, type CellReadOptions, type CellVersion } from "azure-storage-concurrency/optimistic";
 *
 * declare function readFromMyStore(): Promise<CellVersion<string> | undefined>;
 *
 * // a custom cell's read(), over a store that cannot answer If-None-Match itself:
 * async function read({ ifNoneMatch }: CellReadOptions) {
 *   const version = await readFromMyStore();
 *   return version !== undefined && version.etag === ifNoneMatch ? NOT_MODIFIED : version;
 * }
 * ```
 */
export const NOT_MODIFIED: unique symbol = Symbol("azure-storage-concurrency.not-modified");

/**
 * A versioned cell: the port every optimistic adapter implements. Build one with
 * {@link blobJsonCell}, {@link blobTextCell}, {@link blobBytesCell}, {@link tableEntityCell} or
 * {@link containerMetadataCell}; implement it yourself for other stores.
 *
 * Contract: `read` answers `undefined` when the cell does not exist and throws on any other
 * failure; `write` resolves with the new ETag or rejects with the service's error as it came
 * (a 412 when the ETag no longer matches, a 409 when creating something that exists), and stores
 * `log` with the content so that a later `read` returns it. Two writes with the same `condition`
 * can never both be applied (that is what lets the engine resend a write whose outcome it could not
 * tell), and what the write history means is stated once, in `write-log.ts`.
 *
 * @example
 * ```ts
 * import { optimisticUpdate, type CellVersion, type VersionedCell, type WriteCondition } from "azure-storage-concurrency/optimistic";
 *
 * declare const myStore: {
 *   get(key: string): Promise<CellVersion<string> | undefined>;
 *   put(key: string, content: string, log: string, condition: WriteCondition): Promise<string>; // the new ETag
 * };
 *
 * // A cell over your own store, which must support compare-and-set on an ETag.
 * const cell: VersionedCell<string, string> = {
 *   key: "my-store|greeting",
 *   description: "greeting in my store",
 *   read: async () => myStore.get("greeting"), // { content, etag, log } or undefined
 *   write: async (content, { condition, log }) => myStore.put("greeting", content, log, condition),
 *   decode: (content) => content,
 *   encode: (value) => value,
 * };
 * await optimisticUpdate(cell, (current) => `${current ?? ""}!`);
 * ```
 */
export interface VersionedCell<T, C = unknown> {
  /** Identity of the stored state within this process (kind + URL + keys); equal keys mean the same cell. */
  readonly key: string;
  /** The cell in words, for messages: `blob 'counters/visits.json'`. */
  readonly description: string;
  /** Reads the current version, `undefined` when absent. */
  read(options: CellReadOptions): Promise<CellVersion<C> | undefined | typeof NOT_MODIFIED>;
  /** Writes `content` under `options.condition`; resolves with the new ETag. */
  write(content: C, options: CellWriteOptions): Promise<string>;
  /** A fresh caller-side copy of stored content; throws a typed error when the content is unreadable. */
  decode(content: C): T;
  /** Checks a caller's value and turns it into stored content; throws `TypeError`/`RangeError` or a typed error. */
  encode(value: T): C;
  /** Size of stored content, to keep big values out of the per-process cache. */
  sizeInBytes?(content: C): number;
  /**
   * For a cell whose write changes only what it is given (a table entity in Merge mode keeps the
   * properties it was not sent): what the cell holds after `written` is written on top of `stored`.
   * Without it, a write replaces the whole value. The engine uses it to hand every caller sharing a
   * round the whole value, to send the union of their changes, and to cache only whole values (a
   * blind last-writer-wins write to such a cell is not cached).
   */
  mergeWrite?(stored: C, written: C): C;
}

/**
 * An upload progress callback (`onProgress` of @azure/storage-blob, `requestOptions.onUploadProgress`
 * of @azure/data-tables) that calls `onSend` once per try of the request: the SDK's HTTP client
 * counts each try's bytes from zero again, and reports the first chunk as the try starts (even an
 * empty body reports 0). Checked against Azurite in tests/integration/optimistic/send-count.test.ts.
 */
export function countSends(
  onSend: (() => void) | undefined,
): ((progress: { readonly loadedBytes: number }) => void) | undefined {
  if (!onSend) return undefined;
  let last = -1;
  return ({ loadedBytes }) => {
    if (last < 0 || loadedBytes <= last) onSend();
    last = loadedBytes;
  };
}
