/**
 * Multi-index rows: one logical record stored under several RowKeys of one partition, so that every
 * important query is a point query or a row range scan. The partitioning guide's marathon example
 * keeps each runner twice, as `BIB:01234__John__M__55` and `AGE:055__1234__John__M`, written
 * together in one entity group transaction.
 *
 * Every write of a record is one transaction over all of its rows, each row checked with If-Match,
 * so concurrent writers cannot interleave: one commits, the others get a
 * {@link MultiIndexConflictError} and read again ({@link MultiIndexTable.modify} does that loop).
 *
 * Deletes are tombstones. `submitTransaction` sends every "delete" action with `If-Match: *`
 * (sdk/tables/data-tables/src/TableClient.ts, `submitTransaction`: the delete case passes no
 * options), so a transaction cannot delete a row only if it is unchanged. Instead, a row a write
 * vacates (a record deleted, or an index key that changed) is replaced, with If-Match, by a small
 * tombstone row in the same transaction; the tombstones are then removed one by one with
 * ETag-checked `deleteEntity` calls. Reads treat a tombstone as absent, creates reuse one, and a
 * tombstone left behind by a crash does no harm.
 *
 * Rows carry the record's properties plus `_index` (which index the row belongs to), `_version`
 * (one random id per write, the same on every row of a record), which reads use to check that all
 * rows they saw belong to the same write, and `_history` (the ids of the writes before it; see
 * multi-index-history.ts). When a transaction's answer is lost (the SDK resends it and meets its own
 * rows, or only an error comes back), the rows are read back: holding this write's id as their
 * version or in their history, the write was applied and is reported once; otherwise the record's
 * ETags say whether a copy still on its way could apply. Only when no read can tell does the call
 * reject with a `TableTransactionError` whose `mayHaveBeenApplied` is true.
 */
import type { TableClient, TableEntity } from "@azure/data-tables";
import { sleep } from "../internal/sleep.js";
import { logger } from "../internal/logger.js";
import { checkNumber, checkOptionalInstance, checkOptionalSignal } from "../internal/validate.js";
import type { AdaptiveRateLimiter } from "../throttling/index.js";
import { decorrelatedJitterBackoff, type BackoffStrategy } from "../retry/index.js";
import { isMultiIndexConflictError, MultiIndexConflictError, TransactionRefusedError } from "./errors.js";
import { formatHistory } from "./multi-index-history.js";
import {
  commitRows,
  DELETED,
  isDeleted,
  newWrite,
  purgeTombstones,
  readRow,
  recordOf,
  RESERVED,
  rowOf,
  tombstoneOf,
  VERSION,
  versionOf,
  type Write,
} from "./multi-index-rows.js";
import { keyFilter, queryEntityPages } from "./query.js";
import { validateTableKey } from "./validation.js";

/** A record's properties: what an entity holds besides its keys. */
export type MultiIndexRecord = Record<string, unknown>;

/** How records map to rows. */
export interface MultiIndexOptions<T extends MultiIndexRecord> {
  /** The record's PartitionKey; every row of a record lives in this one partition. */
  readonly partitionKey: (record: T) => string;
  /**
   * The indexes, by name: each gives the record's key in that index. A row's RowKey is the index
   * name, a colon and the key (`BIB:01234__John__M__55`), so each index is a RowKey prefix and can
   * be scanned as a range. Names: letters, digits and `_`.
   */
  readonly indexes: Readonly<Record<string, (record: T) => string>>;
  /**
   * Send each commit (create, update, delete) when its partition's adaptive rate allows (see
   * docs/throttling.md).
   * @default undefined
   */
  readonly rateLimiter?: AdaptiveRateLimiter;
}

/** A record as read, with what an ETag-checked write of it needs. */
export interface MultiIndexSnapshot<T extends MultiIndexRecord> {
  /** The record's properties. */
  readonly record: T;
  /** Its PartitionKey. */
  readonly partitionKey: string;
  /** Its RowKey in each index. */
  readonly rowKeys: Readonly<Record<string, string>>;
  /** The ETag of each index row. */
  readonly etags: Readonly<Record<string, string>>;
  /** The id of the write that produced it. */
  readonly version: string;
  /**
   * The write history of this version, as stored (`_history`): carried into the next write, so that
   * a write whose answer was lost can be recognised. Absent on a snapshot built by hand.
   */
  readonly history?: string;
}

/** Per-call options. */
export interface MultiIndexCallOptions {
  /** Cancels the call: its requests, and for {@link MultiIndexTable.modify} the wait between rounds. */
  readonly abortSignal?: AbortSignal;
}

/** Options for {@link MultiIndexTable.modify}. */
export interface MultiIndexModifyOptions extends MultiIndexCallOptions {
  /**
   * How many read-change-write rounds to try before giving up with the last conflict.
   * @default 10
   */
  readonly maxAttempts?: number;
  /**
   * The wait between rounds.
   * @default decorrelatedJitterBackoff({ baseInMs: 10, maxInMs: 1000 })
   */
  readonly backoff?: BackoffStrategy;
}

/** A record found by {@link MultiIndexTable.list}. */
export interface MultiIndexListEntry<T extends MultiIndexRecord> {
  /** Its key in the listed index (the RowKey without the index prefix). */
  readonly key: string;
  /** The record's properties, as the listed index row holds them. */
  readonly record: T;
}

/** The records of one partition, kept under several RowKeys each. See {@link multiIndexTable}. */
export interface MultiIndexTable<T extends MultiIndexRecord> {
  /** The index names. */
  readonly indexNames: readonly string[];
  /** The RowKey of `record` in each index. */
  rowKeysOf(record: T): Record<string, string>;
  /**
   * Writes a new record under all its RowKeys, atomically; a key already held by a live record is a conflict (`exists`).
   * @throws TableTransactionError with `mayHaveBeenApplied: true` when the answer was lost and no read can tell
   *   whether the record was written (see docs/table-design.md).
   */
  create(record: T, options?: MultiIndexCallOptions): Promise<MultiIndexSnapshot<T>>;
  /** Reads a record by its key in one index (a point query per row); undefined when absent. */
  get(
    partitionKey: string,
    index: string,
    key: string,
    options?: MultiIndexCallOptions,
  ): Promise<MultiIndexSnapshot<T> | undefined>;
  /**
   * Replaces the record read as `snapshot` by `next`, atomically, every row checked with its ETag.
   * Rows whose key changes move: the old one becomes a tombstone, the new one is created.
   * @throws MultiIndexConflictError (`changed`) when another writer got there first; read again.
   */
  update(snapshot: MultiIndexSnapshot<T>, next: T, options?: MultiIndexCallOptions): Promise<MultiIndexSnapshot<T>>;
  /**
   * Deletes the record read as `snapshot`, atomically and ETag-checked.
   * @throws MultiIndexConflictError (`changed`) when another writer got there first.
   */
  delete(snapshot: MultiIndexSnapshot<T>, options?: MultiIndexCallOptions): Promise<void>;
  /**
   * Read, change, write, again on conflict: the record found by its key in `index` is passed to
   * `mutate` and replaced by what it returns. Address the record by an index whose key `mutate`
   * does not change. Resolves with the new snapshot, or undefined when there is no such record.
   */
  modify(
    partitionKey: string,
    index: string,
    key: string,
    mutate: (record: T) => T | Promise<T>,
    options?: MultiIndexModifyOptions,
  ): Promise<MultiIndexSnapshot<T> | undefined>;
  /** The records of one index in a partition, in key order, optionally only keys with a prefix (a row range scan). */
  list(
    partitionKey: string,
    index: string,
    options?: MultiIndexCallOptions & {
      /** Only keys (in `index`) that start with this. @default "" (all keys) */
      readonly keyPrefix?: string;
    },
  ): Promise<{
    /** The live records, in key order (tombstones left out). */
    readonly entries: MultiIndexListEntry<T>[];
    /** How many query requests (result pages) the scan took. */
    readonly roundTrips: number;
  }>;
}

/** The part of a `TableClient` multi-index rows use. */
export type MultiIndexClient = Pick<
  TableClient,
  "getEntity" | "submitTransaction" | "deleteEntity" | "listEntities" | "url" | "tableName"
>;

function signalOf(options: MultiIndexCallOptions | undefined): { abortSignal?: AbortSignal } {
  checkOptionalSignal("abortSignal", options?.abortSignal);
  return options?.abortSignal ? { abortSignal: options.abortSignal } : {};
}

/**
 * Stores each record of a partition under several RowKeys (one per index), written and changed
 * together in one ETag-checked entity group transaction: the partitioning guide's answer to several
 * equally important queries on a table that has one index.
 *
 * @example
 * ```ts
 * import { TableClient } from "@azure/data-tables";
 * import { multiIndexTable, compositeKey, padNumber } from "azure-storage-concurrency/tables";
 *
 * interface Runner { race: string; bib: number; name: string; gender: string; age: number; [k: string]: unknown }
 * const runners = multiIndexTable<Runner>(TableClient.fromConnectionString(connectionString, "registrations"), {
 *   partitionKey: (r) => compositeKey([r.race, "Full"]),
 *   indexes: {
 *     BIB: (r) => compositeKey([padNumber(r.bib, 5), r.name, r.gender, String(r.age)]),
 *     AGE: (r) => compositeKey([padNumber(r.age, 3), String(r.bib), r.name, r.gender]),
 *   },
 * });
 * await runners.create({ race: "2011 New York City Marathon", bib: 1234, name: "John", gender: "M", age: 55 });
 * const fiftyFive = await runners.list("2011 New York City Marathon__Full", "AGE", { keyPrefix: "055" });
 * ```
 */
export function multiIndexTable<T extends MultiIndexRecord>(
  client: MultiIndexClient,
  options: MultiIndexOptions<T>,
): MultiIndexTable<T> {
  if (typeof options?.partitionKey !== "function")
    throw new TypeError("`partitionKey` must be a function of the record.");
  const indexNames = Object.keys(options.indexes ?? {});
  if (indexNames.length === 0) throw new TypeError("`indexes` must name at least one index.");
  if (indexNames.length > 50)
    throw new RangeError(
      "`indexes` may name at most 50 indexes (a key change writes two rows per index, and a transaction holds 100).",
    );
  for (const name of indexNames) {
    if (!/^[A-Za-z0-9_]+$/.test(name))
      throw new RangeError(`index name ${JSON.stringify(name)} must be letters, digits and _ only.`);
    if (typeof options.indexes[name] !== "function")
      throw new TypeError(`\`indexes.${name}\` must be a function of the record.`);
  }

  const rowKeyOf = (index: string, key: string) => `${index}:${key}`;
  checkOptionalInstance("rateLimiter", options.rateLimiter, "run", "an AdaptiveRateLimiter");
  const { rateLimiter } = options;

  const keysOf = (record: T) => {
    if (typeof record !== "object" || record === null) throw new TypeError("`record` must be an object.");
    for (const name of Object.keys(record)) {
      if (RESERVED.has(name) || name.startsWith("odata.")) {
        throw new TypeError(`record property \`${name}\` is reserved (${[...RESERVED].join(", ")}): rename it.`);
      }
    }
    const partitionKey = options.partitionKey(record);
    validateTableKey(partitionKey, "partitionKey");
    const rowKeys: Record<string, string> = {};
    for (const index of indexNames) {
      const key = options.indexes[index]!(record);
      if (typeof key !== "string")
        throw new TypeError(`index ${index} gave ${typeof key}; an index key must be a string.`);
      const rowKey = rowKeyOf(index, key);
      validateTableKey(rowKey, "rowKey");
      rowKeys[index] = rowKey; // distinct: index names differ and hold no colon
    }
    return { partitionKey, rowKeys };
  };

  const snapshotOf = (
    record: T,
    partitionKey: string,
    rowKeys: Record<string, string>,
    etags: Map<string, string>,
    version: Pick<Write, "id" | "history">,
  ): MultiIndexSnapshot<T> => ({
    record,
    partitionKey,
    rowKeys,
    etags: Object.fromEntries(indexNames.map((index) => [index, etags.get(rowKeys[index]!)!])),
    version: version.id,
    history: formatHistory(version.history),
  });

  const table: MultiIndexTable<T> = {
    indexNames,

    rowKeysOf: (record) => keysOf(record).rowKeys,

    async create(record, call) {
      const { partitionKey, rowKeys } = keysOf(record);
      const write = newWrite(undefined);
      const desired = new Map(
        indexNames.map((index) => [rowKeys[index]!, rowOf(partitionKey, rowKeys[index]!, index, record, write)]),
      );
      const commit = { partitionKey, desired, expected: new Map(), write, rateLimiter };
      const etags = await commitRows(client, commit, signalOf(call));
      return snapshotOf(record, partitionKey, rowKeys, etags, write);
    },

    async get(partitionKey, index, key, call) {
      if (!indexNames.includes(index))
        throw new RangeError(`unknown index ${JSON.stringify(index)}; the indexes are ${indexNames.join(", ")}.`);
      const rowKey = rowKeyOf(index, key);
      validateTableKey(partitionKey, "partitionKey");
      validateTableKey(rowKey, "rowKey");
      for (let round = 0; round < 8; round++) {
        const first = await readRow(client, partitionKey, rowKey, signalOf(call));
        if (isDeleted(first)) return undefined;
        const record = recordOf(first!) as T;
        const version = first![VERSION] as string;
        const rowKeys = keysOf(record).rowKeys;
        const others = await Promise.all(
          indexNames.map((other) =>
            rowKeys[other] === rowKey
              ? Promise.resolve(first)
              : readRow(client, partitionKey, rowKeys[other]!, signalOf(call)),
          ),
        );
        if (others.every((row) => !isDeleted(row) && row![VERSION] === version)) {
          const etags = new Map(indexNames.map((other, i) => [rowKeys[other]!, others[i]!.etag]));
          return snapshotOf(record, partitionKey, rowKeys, etags, { id: version, history: versionOf(first!).history });
        }
        await sleep(5 + Math.random() * 20 * (round + 1), call?.abortSignal); // a write landed between the reads
      }
      throw new MultiIndexConflictError(
        `The rows of record ${JSON.stringify(rowKey)} in partition ${JSON.stringify(partitionKey)} kept changing while being read, or were written without this helper (they disagree on ${VERSION}).`,
        { reason: "changed", partitionKey, rowKey },
      );
    },

    async update(snapshot, next, call) {
      const { partitionKey, rowKeys } = keysOf(next);
      if (partitionKey !== snapshot.partitionKey) {
        throw new TransactionRefusedError(
          `The change moves the record from partition ${JSON.stringify(snapshot.partitionKey)} to ${JSON.stringify(partitionKey)}; a transaction covers one partition, so it cannot be atomic: create the record in the new partition, then delete the old one. Nothing was sent.`,
          {
            reason: "multiple-partitions",
            operationCount: indexNames.length * 2,
            partitionKeys: [snapshot.partitionKey, partitionKey],
          },
        );
      }
      const write = newWrite(snapshot);
      const expected = new Map(indexNames.map((index) => [snapshot.rowKeys[index]!, snapshot.etags[index]!]));
      const desired = new Map<string, TableEntity>();
      for (const rowKey of expected.keys()) desired.set(rowKey, tombstoneOf(partitionKey, rowKey, write));
      for (const index of indexNames)
        desired.set(rowKeys[index]!, rowOf(partitionKey, rowKeys[index]!, index, next, write));
      const etags = await commitRows(client, { partitionKey, desired, expected, write, rateLimiter }, signalOf(call));
      const vacated = new Map([...etags].filter(([rowKey]) => desired.get(rowKey)![DELETED] === true));
      await purgeTombstones(client, partitionKey, vacated, signalOf(call));
      return snapshotOf(next, partitionKey, rowKeys, etags, write);
    },

    async delete(snapshot, call) {
      const write = newWrite(snapshot);
      const expected = new Map(indexNames.map((index) => [snapshot.rowKeys[index]!, snapshot.etags[index]!]));
      const desired = new Map(
        [...expected.keys()].map((rowKey) => [rowKey, tombstoneOf(snapshot.partitionKey, rowKey, write)]),
      );
      const etags = await commitRows(
        client,
        { partitionKey: snapshot.partitionKey, desired, expected, write, rateLimiter },
        signalOf(call),
      );
      await purgeTombstones(client, snapshot.partitionKey, etags, signalOf(call));
    },

    async modify(partitionKey, index, key, mutate, call = {}) {
      const maxAttempts = checkNumber("maxAttempts", call.maxAttempts ?? 10, { min: 1, integer: true });
      const backoff = call.backoff ?? decorrelatedJitterBackoff({ baseInMs: 10, maxInMs: 1000 });
      let previousDelayInMs = 0;
      for (let attempt = 1; ; attempt++) {
        try {
          // A read that keeps seeing rows of different writes is a conflict too: read again later.
          const snapshot = await table.get(partitionKey, index, key, call);
          if (!snapshot) return undefined;
          const next = await mutate({ ...snapshot.record });
          return await table.update(snapshot, next, call);
        } catch (error) {
          if (!isMultiIndexConflictError(error) || error.reason !== "changed" || attempt >= maxAttempts) throw error;
          previousDelayInMs = backoff.delayInMs(attempt, previousDelayInMs);
          logger.verbose(
            `multi-index conflict on ${partitionKey}/${index}:${key}, attempt ${attempt}; waiting ${Math.round(previousDelayInMs)} ms`,
          );
          await sleep(previousDelayInMs, call.abortSignal);
        }
      }
    },

    async list(partitionKey, index, call = {}) {
      if (!indexNames.includes(index))
        throw new RangeError(`unknown index ${JSON.stringify(index)}; the indexes are ${indexNames.join(", ")}.`);
      validateTableKey(partitionKey, "partitionKey");
      const keyPrefix: unknown = call.keyPrefix ?? "";
      if (typeof keyPrefix !== "string") throw new TypeError("`keyPrefix` must be a string.");
      const prefix = rowKeyOf(index, keyPrefix);
      // The one key check, as for keys: a lone surrogate would otherwise fail in the SDK (URIError).
      validateTableKey(prefix, "rowKey");
      const entries: MultiIndexListEntry<T>[] = [];
      let roundTrips = 0;
      for await (const page of queryEntityPages<Record<string, unknown>>(client, {
        filter: keyFilter({ partitionKey, rowKeyPrefix: prefix }),
        ...signalOf(call),
      })) {
        roundTrips = page.roundTrip;
        for (const row of page.entities) {
          if (!isDeleted(row)) entries.push({ key: row.rowKey!.slice(index.length + 1), record: recordOf(row) as T });
        }
      }
      return { entries, roundTrips };
    },
  };
  return table;
}
