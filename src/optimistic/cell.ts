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
 * import { OPTIMISTIC_LOG_KEY } from "azure-storage-concurrency";
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
}

/**
 * Thrown by an adapter whose write takes several requests, when one failed before the request that
 * changes the cell was sent: nothing can have been applied, so the engine need not read back.
 *
 * @example
 * ```ts
 * import { WriteNotSent } from "azure-storage-concurrency";
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
 * import { NOT_MODIFIED, type CellReadOptions, type CellVersion } from "azure-storage-concurrency";
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
 * `log` with the content so that a later `read` returns it.
 *
 * @example
 * ```ts
 * import { optimisticUpdate, type CellVersion, type VersionedCell, type WriteCondition } from "azure-storage-concurrency";
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
   * What the cell holds after `content` was written on top of `base`, when that is not simply
   * `content` (a table Merge keeps the properties it was not given).
   */
  storedAfterWrite?(content: C, base: CellVersion<C> | undefined): C;
}
