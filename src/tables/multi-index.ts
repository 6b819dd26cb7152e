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
 * Rows carry the record's properties plus `_index` (which index the row belongs to) and `_version`
 * (one random id per write, the same on every row of a record), which reads use to check that all
 * rows they saw belong to the same write.
 */
import { randomUUID } from "node:crypto";
import type { TableClient, TableEntity, TableEntityResult, TransactionAction } from "@azure/data-tables";
import { statusOf } from "../errors.js";
import { logger } from "../internal/logger.js";
import { sleep } from "../internal/sleep.js";
import { checkNumber, checkOptionalSignal } from "../internal/validate.js";
import { decorrelatedJitterBackoff, type BackoffStrategy } from "../retry/backoff.js";
import { writeAtomic } from "./atomic.js";
import {
  isMultiIndexConflictError,
  isTableTransactionError,
  MultiIndexConflictError,
  TransactionRefusedError,
} from "./errors.js";
import { keyFilter, queryEntityPages } from "./query.js";
import { validateTableKey } from "./validation.js";

/** The system properties a multi-index row carries besides the record. */
const INDEX = "_index";
const VERSION = "_version";
const DELETED = "_deleted";
const RESERVED = new Set(["partitionKey", "rowKey", "etag", "timestamp", INDEX, VERSION, DELETED]);

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
  /** Writes a new record under all its RowKeys, atomically; a key already held by a live record is a conflict (`exists`). */
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

type Row = TableEntityResult<Record<string, unknown>>;

const isDeleted = (row: Row | undefined) => row === undefined || row[DELETED] === true;

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
 * import { multiIndexTable, compositeKey, padNumber } from "azure-storage-concurrency";
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

  const rowOf = (partitionKey: string, rowKey: string, index: string, record: T, version: string): TableEntity => {
    const row: Record<string, unknown> = { partitionKey, rowKey };
    for (const [name, value] of Object.entries(record)) if (value !== undefined) row[name] = value;
    row[INDEX] = index;
    row[VERSION] = version;
    return row as TableEntity;
  };
  const tombstoneOf = (partitionKey: string, rowKey: string, version: string): TableEntity => ({
    partitionKey,
    rowKey,
    [DELETED]: true,
    [VERSION]: version,
  });

  const recordOf = (row: Row): T => {
    const record: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(row))
      if (!RESERVED.has(name) && !name.startsWith("odata.")) record[name] = value;
    return record as T;
  };

  const readRow = async (
    partitionKey: string,
    rowKey: string,
    call: MultiIndexCallOptions | undefined,
  ): Promise<Row | undefined> => {
    try {
      return await client.getEntity<Record<string, unknown>>(partitionKey, rowKey, signalOf(call));
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  };

  /**
   * Commits the rows `desired` (a row entity, or a tombstone) over the rows `expected` (their ETags
   * as read) in one transaction. Rows not read before are created; a tombstone found in the way is
   * taken over with its ETag.
   */
  const commit = async (
    partitionKey: string,
    desired: ReadonlyMap<string, TableEntity>,
    expected: ReadonlyMap<string, string>,
    call: MultiIndexCallOptions | undefined,
  ): Promise<Map<string, string>> => {
    const etags = new Map(expected);
    for (let round = 0; ; round++) {
      const rowKeys = [...desired.keys()];
      const actions: TransactionAction[] = rowKeys.map((rowKey) => {
        const etag = etags.get(rowKey);
        return etag === undefined
          ? ["create", desired.get(rowKey)!]
          : ["update", desired.get(rowKey)!, "Replace", { etag }];
      });
      try {
        const result = await writeAtomic(client, actions, signalOf(call));
        return new Map(rowKeys.map((rowKey, i) => [rowKey, result.etags[i]!]));
      } catch (error) {
        if (!isTableTransactionError(error)) throw error;
        const rowKey = error.failedActionIndex === undefined ? undefined : rowKeys[error.failedActionIndex];
        if (error.statusCode === 412 || (error.statusCode === 404 && rowKey !== undefined && etags.has(rowKey))) {
          throw new MultiIndexConflictError(
            `The record in partition ${JSON.stringify(partitionKey)} changed since it was read (row ${JSON.stringify(rowKey)}): read it again and reapply the change. Nothing was written.`,
            { reason: "changed", partitionKey, rowKey, cause: error },
          );
        }
        if (error.statusCode === 409 && rowKey !== undefined && !etags.has(rowKey) && round < 5) {
          const existing = await readRow(partitionKey, rowKey, call);
          if (existing && !isDeleted(existing)) {
            // Taken: by this very record written meanwhile by someone else (then the read is stale), or by another record.
            const [anchor, anchorEtag] = [...expected][0] ?? [];
            if (anchor !== undefined && (await readRow(partitionKey, anchor, call))?.etag !== anchorEtag) {
              throw new MultiIndexConflictError(
                `The record in partition ${JSON.stringify(partitionKey)} changed since it was read: read it again and reapply the change. Nothing was written.`,
                { reason: "changed", partitionKey, rowKey: anchor, cause: error },
              );
            }
            throw new MultiIndexConflictError(
              `Row ${JSON.stringify(rowKey)} in partition ${JSON.stringify(partitionKey)} belongs to another record: the key is taken. Nothing was written.`,
              { reason: "exists", partitionKey, rowKey, cause: error },
            );
          }
          if (existing) etags.set(rowKey, existing.etag); // a leftover tombstone: take it over
          continue; // (or it vanished meanwhile: create it again)
        }
        throw error;
      }
    }
  };

  /** Removes tombstones one by one, each only if unchanged; what cannot be removed stays, harmlessly. */
  const purge = async (
    partitionKey: string,
    tombstones: ReadonlyMap<string, string>,
    call: MultiIndexCallOptions | undefined,
  ) => {
    await Promise.all(
      [...tombstones].map(async ([rowKey, etag]) => {
        try {
          await client.deleteEntity(partitionKey, rowKey, { etag, ...signalOf(call) });
        } catch (error) {
          const status = statusOf(error);
          if (status !== 404 && status !== 412)
            logger.warning(`tombstone ${partitionKey}/${rowKey} left in place: ${String(error)}`);
        }
      }),
    );
  };

  const snapshotOf = (
    record: T,
    partitionKey: string,
    rowKeys: Record<string, string>,
    etags: Map<string, string>,
    version: string,
  ) => ({
    record,
    partitionKey,
    rowKeys,
    etags: Object.fromEntries(indexNames.map((index) => [index, etags.get(rowKeys[index]!)!])),
    version,
  });

  const table: MultiIndexTable<T> = {
    indexNames,

    rowKeysOf: (record) => keysOf(record).rowKeys,

    async create(record, call) {
      const { partitionKey, rowKeys } = keysOf(record);
      const version = randomUUID();
      const desired = new Map(
        indexNames.map((index) => [rowKeys[index]!, rowOf(partitionKey, rowKeys[index]!, index, record, version)]),
      );
      const etags = await commit(partitionKey, desired, new Map(), call);
      return snapshotOf(record, partitionKey, rowKeys, etags, version);
    },

    async get(partitionKey, index, key, call) {
      if (!indexNames.includes(index))
        throw new RangeError(`unknown index ${JSON.stringify(index)}; the indexes are ${indexNames.join(", ")}.`);
      const rowKey = rowKeyOf(index, key);
      validateTableKey(partitionKey, "partitionKey");
      validateTableKey(rowKey, "rowKey");
      for (let round = 0; round < 8; round++) {
        const first = await readRow(partitionKey, rowKey, call);
        if (isDeleted(first)) return undefined;
        const record = recordOf(first!);
        const version = first![VERSION] as string;
        const rowKeys = keysOf(record).rowKeys;
        const others = await Promise.all(
          indexNames.map((other) =>
            rowKeys[other] === rowKey ? Promise.resolve(first) : readRow(partitionKey, rowKeys[other]!, call),
          ),
        );
        if (others.every((row) => !isDeleted(row) && row![VERSION] === version)) {
          const etags = new Map(indexNames.map((other, i) => [rowKeys[other]!, others[i]!.etag]));
          return snapshotOf(record, partitionKey, rowKeys, etags, version);
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
      const version = randomUUID();
      const expected = new Map(indexNames.map((index) => [snapshot.rowKeys[index]!, snapshot.etags[index]!]));
      const desired = new Map<string, TableEntity>();
      for (const rowKey of expected.keys()) desired.set(rowKey, tombstoneOf(partitionKey, rowKey, version));
      for (const index of indexNames)
        desired.set(rowKeys[index]!, rowOf(partitionKey, rowKeys[index]!, index, next, version));
      const etags = await commit(partitionKey, desired, expected, call);
      const vacated = new Map([...etags].filter(([rowKey]) => desired.get(rowKey)![DELETED] === true));
      await purge(partitionKey, vacated, call);
      return snapshotOf(next, partitionKey, rowKeys, etags, version);
    },

    async delete(snapshot, call) {
      const version = randomUUID();
      const expected = new Map(indexNames.map((index) => [snapshot.rowKeys[index]!, snapshot.etags[index]!]));
      const desired = new Map(
        [...expected.keys()].map((rowKey) => [rowKey, tombstoneOf(snapshot.partitionKey, rowKey, version)]),
      );
      const etags = await commit(snapshot.partitionKey, desired, expected, call);
      await purge(snapshot.partitionKey, etags, call);
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
      const prefix = rowKeyOf(index, call.keyPrefix ?? "");
      const entries: MultiIndexListEntry<T>[] = [];
      let roundTrips = 0;
      for await (const page of queryEntityPages<Record<string, unknown>>(client, {
        filter: keyFilter({ partitionKey, rowKeyPrefix: prefix }),
        ...signalOf(call),
      })) {
        roundTrips = page.roundTrip;
        for (const row of page.entities) {
          if (!isDeleted(row)) entries.push({ key: row.rowKey!.slice(index.length + 1), record: recordOf(row) });
        }
      }
      return { entries, roundTrips };
    },
  };
  return table;
}
