/**
 * The rows of multi-index records, and the one way they are written: {@link commitRows}, an
 * ETag-checked entity group transaction over every row of a record, which recognises its own write
 * when its answer is lost (multi-index-history.ts), takes over tombstones left in the way, and turns
 * the service's refusals into {@link MultiIndexConflictError}s.
 *
 * A row is the record's properties plus `_index` (the index it belongs to), `_version` (the write
 * id, the same on every row of a record) and `_history`; a tombstone is `_deleted: true` with the
 * same `_version` and `_history`. Reads treat a tombstone as absent.
 */
import type { TableEntity, TableEntityResult, TransactionAction } from "@azure/data-tables";
import { statusOf } from "../errors.js";
import { logger } from "../internal/logger.js";
import { withTimeLimit } from "../internal/time-limit.js";
import { wrapStorageError } from "../retry/index.js";
import { checkAtomic, sendAtomic } from "./atomic.js";
import { isTableTransactionError, MultiIndexConflictError, type TableTransactionError } from "./errors.js";
import {
  formatHistory,
  historyOf,
  HISTORY,
  judgeWrite,
  nextHistory,
  type RecordHistory,
  type RecordVersion,
} from "./multi-index-history.js";
import { newTableWriteId, readEntityBack, type ReadBack } from "./read-back.js";
import type { TransactionClient } from "./transaction.js";
import { describeError } from "../internal/describe-error.js";
import type { AdaptiveRateLimiter } from "../throttling/index.js";

/** The system properties a multi-index row carries besides the record. */
const INDEX = "_index";
export const VERSION = "_version";
export const DELETED = "_deleted";
export const RESERVED: ReadonlySet<string> = new Set([
  "partitionKey",
  "rowKey",
  "etag",
  "timestamp",
  INDEX,
  VERSION,
  HISTORY,
  DELETED,
]);
/** The ETag a snapshot holds for a row that a later write changed before this write's lost answer was read back: it matches nothing. */
const SUPERSEDED_ETAG = `W/"datetime'1970-01-01T00%3A00%3A00.0000000Z'"`;

/** The part of a `TableClient` that writes rows. */
type RowsClient = TransactionClient & Pick<import("@azure/data-tables").TableClient, "deleteEntity">;

/** A stored row. */
type Row = TableEntityResult<Record<string, unknown>>;

/** True for a tombstone, or no row at all. */
export const isDeleted = (row: Row | undefined): boolean => row === undefined || row[DELETED] === true;

/** One write of a record: its id, the version it is built on (none for a create), and the history it stores. */
export interface Write {
  readonly id: string;
  readonly base: RecordVersion | undefined;
  readonly history: RecordHistory;
}

/** A new write on top of the version read as `base` (its `version` and stored `history`), or a create. */
export function newWrite(base: { readonly version: string; readonly history?: string } | undefined): Write {
  const id = newTableWriteId();
  const read = base && { version: base.version, history: historyOf(base.version, base.history) };
  return { id, base: read, history: nextHistory(id, read) };
}

/** The version a stored row holds. */
export function versionOf(row: Row): RecordVersion {
  const version = String(row[VERSION]);
  return { version, history: historyOf(version, row[HISTORY]) };
}

/** The row of `record` in index `index`. */
export function rowOf(
  partitionKey: string,
  rowKey: string,
  index: string,
  record: Record<string, unknown>,
  write: Write,
): TableEntity {
  const row: Record<string, unknown> = { partitionKey, rowKey };
  for (const [name, value] of Object.entries(record)) if (value !== undefined) row[name] = value;
  row[INDEX] = index;
  row[VERSION] = write.id;
  row[HISTORY] = formatHistory(write.history);
  return row as TableEntity;
}

/** The tombstone that replaces a row `write` vacates. */
export function tombstoneOf(partitionKey: string, rowKey: string, write: Write): TableEntity {
  return { partitionKey, rowKey, [DELETED]: true, [VERSION]: write.id, [HISTORY]: formatHistory(write.history) };
}

/** The record's properties in a row. */
export function recordOf(row: Row): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(row))
    if (!RESERVED.has(name) && !name.startsWith("odata.")) record[name] = value;
  return record;
}

/**
 * Reads one row; undefined when there is none. Every read has a client-side time limit besides the
 * caller's signal (`readEntityBack`): the lookups of `get`, and the reads the library makes on its
 * own after a conflict.
 */
export async function readRow(
  client: Pick<RowsClient, "getEntity">,
  partitionKey: string,
  rowKey: string,
  call: { abortSignal?: AbortSignal },
): Promise<Row | undefined> {
  try {
    return await readEntityBack(client, partitionKey, rowKey, call.abortSignal);
  } catch (error) {
    if (statusOf(error) === 404) return undefined;
    throw wrapStorageError(error, `read row ${JSON.stringify(rowKey)} of partition ${JSON.stringify(partitionKey)}`);
  }
}

function changed(partitionKey: string, rowKey: string | undefined, cause: TableTransactionError) {
  return new MultiIndexConflictError(
    `The record in partition ${JSON.stringify(partitionKey)} changed since it was read${rowKey === undefined ? "" : ` (row ${JSON.stringify(rowKey)})`}: read it again and reapply the change. Nothing was written.`,
    { reason: "changed", partitionKey, rowKey, cause },
  );
}

/** A commit: the rows to write, over the rows read (their ETags), by one write. */
interface RowsCommit {
  readonly partitionKey: string;
  /** Each row to write (a row entity, or a tombstone), by RowKey. */
  readonly desired: ReadonlyMap<string, TableEntity>;
  /** The ETags of the record's rows as read (empty for a create). */
  readonly expected: ReadonlyMap<string, string>;
  readonly write: Write;
  /** Sends the commit's transaction through this limiter. */
  readonly rateLimiter?: AdaptiveRateLimiter | undefined;
}

/**
 * Commits the rows `desired` over the rows `expected` in one transaction; resolves with each row's
 * new ETag. Rows not read before are created; a tombstone found in the way is taken over with its
 * ETag (and looked at again if it changes or vanishes meanwhile).
 *
 * @throws MultiIndexConflictError (`changed` or `exists`); nothing was written.
 * @throws TableTransactionError with `mayHaveBeenApplied: true` when no read can tell whether it was written.
 */
export async function commitRows(
  client: RowsClient,
  { partitionKey, desired, expected, write, rateLimiter }: RowsCommit,
  call: { abortSignal?: AbortSignal },
): Promise<Map<string, string>> {
  const etags = new Map(expected);
  const rowKeys = [...desired.keys()];
  for (let round = 0; ; round++) {
    const actions: TransactionAction[] = rowKeys.map((rowKey) => {
      const etag = etags.get(rowKey);
      return etag === undefined
        ? ["create", desired.get(rowKey)!]
        : ["update", desired.get(rowKey)!, "Replace", { etag }];
    });
    try {
      const { transaction } = checkAtomic(client, actions);
      const readBack = rowsReadBack(client, partitionKey, rowKeys, new Map(etags), write);
      const result = await sendAtomic(client, transaction, { ...call, readBack, rateLimiter });
      return new Map(rowKeys.map((rowKey, i) => [rowKey, result.etags[i]!]));
    } catch (error) {
      if (!isTableTransactionError(error) || error.mayHaveBeenApplied) throw error;
      const rowKey = error.failedActionIndex === undefined ? undefined : rowKeys[error.failedActionIndex];
      const status = error.statusCode;
      const tookOver = rowKey !== undefined && etags.has(rowKey) && !expected.has(rowKey);
      if ((status === 412 || status === 404) && tookOver && round < 5) {
        etags.delete(rowKey); // the tombstone changed or was purged meanwhile: look at that key again
        continue;
      }
      if (status === 412 || (status === 404 && rowKey !== undefined && expected.has(rowKey))) {
        throw changed(partitionKey, rowKey, error);
      }
      if (status === 409 && rowKey !== undefined && !etags.has(rowKey) && round < 5) {
        const existing = await readRow(client, partitionKey, rowKey, call);
        if (existing && !isDeleted(existing)) {
          // Taken: by this very record written meanwhile by someone else (then the read is stale), or by another record.
          const [anchor, anchorEtag] = [...expected][0] ?? [];
          const anchorNow = anchor === undefined ? undefined : await readRow(client, partitionKey, anchor, call);
          if (anchor !== undefined && anchorNow?.etag !== anchorEtag) {
            throw changed(partitionKey, anchor, error);
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
}

/**
 * The read-back of a commit whose answer was lost: the rows it writes, judged by their history
 * (was this write applied?) and, when it was not, by the conditions it carries (can a copy of it
 * still on its way apply?).
 */
function rowsReadBack(
  client: RowsClient,
  partitionKey: string,
  rowKeys: readonly string[],
  etags: ReadonlyMap<string, string>,
  write: Write,
): ReadBack {
  return async (abortSignal) => {
    const rows = await Promise.all(rowKeys.map((rowKey) => readEntityBack(client, partitionKey, rowKey, abortSignal)));
    let unknown = false;
    for (const row of rows) {
      if (!row || typeof row[VERSION] !== "string") continue;
      const verdict = judgeWrite(versionOf(row), write.id, write.base);
      if (verdict === "applied") {
        return { kind: "applied", etags: rows.map((r) => (r?.[VERSION] === write.id ? r.etag : SUPERSEDED_ETAG)) };
      }
      if (verdict === "unknown") unknown = true;
    }
    if (unknown) return { kind: "unknown", reason: "the record's write history no longer reaches back to this write" };
    const blocked = rowKeys.some((rowKey, i) => {
      const etag = etags.get(rowKey);
      return etag === undefined ? rows[i] !== undefined : rows[i]?.etag !== etag;
    });
    return { kind: blocked ? "refused" : "absent" };
  };
}

/** The client-side time limit of one tombstone's removal. */
const TOMBSTONE_DELETE_TIMEOUT_IN_MS = 10_000;

/** Removes tombstones one by one, each only if unchanged; what cannot be removed stays, harmlessly. */
export async function purgeTombstones(
  client: RowsClient,
  partitionKey: string,
  tombstones: ReadonlyMap<string, string>,
  call: { abortSignal?: AbortSignal },
): Promise<void> {
  await Promise.all(
    [...tombstones].map(async ([rowKey, etag]) => {
      try {
        // A clean-up of the library's own: time-limited, and harmless when it fails.
        await withTimeLimit(
          `remove tombstone ${JSON.stringify(rowKey)} of partition ${JSON.stringify(partitionKey)}`,
          TOMBSTONE_DELETE_TIMEOUT_IN_MS,
          call.abortSignal,
          (abortSignal) => client.deleteEntity(partitionKey, rowKey, { etag, abortSignal }),
        );
      } catch (error) {
        const status = statusOf(error);
        if (status !== 404 && status !== 412)
          logger.warning(`tombstone ${partitionKey}/${rowKey} left in place: ${describeError(error)}`);
      }
    }),
  );
}
