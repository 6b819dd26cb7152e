/**
 * The Table store's purge: scan the inbox rows for records that have expired (done records whose
 * `ExpiresOn` has passed, claims whose `ClaimExpiresOn` has), and delete each one with
 * `If-Match: <the ETag the scan read>`, so that a record claimed or completed again after the scan
 * read it (a new ETag) is never deleted: the delete answers 412 and the row stays.
 *
 * Why one delete per row and not entity group transactions: `TableClient.submitTransaction` of
 * `@azure/data-tables` sends every delete of a transaction unconditionally (`If-Match: *`; it
 * calls `deleteEntity(partitionKey, rowKey)` without options, see sdk/tables/data-tables/src/
 * TableClient.ts `submitTransaction`), and an unconditional delete can remove a key that was
 * claimed again after the scan. A transaction of conditional updates would fail as a whole on one
 * stale ETag, and still not delete anything. So the rows of one partition are deleted one by one,
 * many partitions at once (`maxConcurrency`); with the default layout (each key its own
 * partition) a transaction would hold one row anyway. A delete that fails is counted and left for
 * the next purge; it never stops the others.
 *
 * Every request runs under the purge's client-side time limit; a delete whose outcome is ambiguous
 * (time limit, network failure, 5xx) is sent again with the same ETag: if the first one landed,
 * the row is gone (404) or someone wrote it since (412), and both are the right answer.
 */
import type { TableClient } from "@azure/data-tables";
import { withTimeLimit } from "../internal/time-limit.js";
import { statusOf } from "../errors.js";
import { runPool } from "../internal/pool.js";
import { sleep } from "../internal/sleep.js";
import { keyFilter, queryEntities } from "../tables/index.js";
import { classifyError } from "../retry/index.js";
import { isResourceFailure } from "../retry/internal.js";
import { PurgeTally, resolvePurgeOptions, type ResolvedPurgeOptions } from "./purge.js";
import type { PurgeOptions, PurgeResult } from "./store.js";
import { ROW_KEY_PREFIX_SEPARATOR } from "./table-rows.js";

/** Tries of one delete whose outcome stays ambiguous. */
const DELETE_TRIES = 3;

/** Deletes the expired inbox rows of `table`: RowKey `rowKeyPrefix` + an escaped key (no ':' after the prefix). */
export async function purgeInbox(
  table: TableClient,
  rowKeyPrefix: string,
  options: PurgeOptions,
): Promise<PurgeResult> {
  const o = resolvePurgeOptions(options, Date.now());
  const tally = new PurgeTally();
  const cutoff = `datetime'${o.olderThan.toISOString()}'`;
  const filter =
    `${keyFilter({ rowKeyPrefix })} and ` +
    `((Status eq 'done' and ExpiresOn le ${cutoff}) or (Status eq 'claimed' and ClaimExpiresOn le ${cutoff}))`;
  let continuationToken: string | undefined;
  do {
    const page = await withTimeLimit(
      `scan the inbox '${table.tableName}' for expired records`,
      o.requestTimeoutInMs,
      o.abortSignal,
      (abortSignal) =>
        queryEntities(table, {
          filter,
          select: ["PartitionKey", "RowKey"],
          maxRoundTrips: 1,
          ...(continuationToken ? { continuationToken } : {}),
          abortSignal,
        }),
    );
    // A RowKey under the prefix with another ':' after it is a row of another store whose prefix
    // starts with this one's (`in:` and `in:b:`): keys have ':' escaped, so it is never this store's.
    const own = page.entities.filter(
      (row) => !(row.rowKey ?? "").slice(rowKeyPrefix.length).includes(ROW_KEY_PREFIX_SEPARATOR),
    );
    tally.expired += own.length;
    await runPool(
      own.map((row) => () => deleteIfUnchanged(table, row.partitionKey ?? "", row.rowKey ?? "", row.etag, o, tally)),
      o.maxConcurrency,
    );
    continuationToken = page.continuationToken;
  } while (continuationToken && !o.abortSignal?.aborted);
  return tally.result();
}

async function deleteIfUnchanged(
  table: TableClient,
  partitionKey: string,
  rowKey: string,
  etag: string | undefined,
  o: ResolvedPurgeOptions,
  tally: PurgeTally,
): Promise<void> {
  // Never unconditionally: without the ETag read, the row could be a new claim.
  if (!etag) return tally.fail(new Error(`the scan returned no ETag for the inbox row '${rowKey}'`));
  for (let tries = 1; ; tries++) {
    if (o.abortSignal?.aborted) return;
    try {
      await withTimeLimit(
        `delete the expired inbox row '${rowKey}'`,
        o.requestTimeoutInMs,
        o.abortSignal,
        (abortSignal) => table.deleteEntity(partitionKey, rowKey, { etag, abortSignal }),
      );
      tally.deleted += 1;
      return;
    } catch (error) {
      const status = statusOf(error);
      if (status === 404 && !isResourceFailure(error)) {
        tally.deleted += 1; // gone already: deleted by an earlier try whose answer was lost, or by another purge
        return;
      }
      if (status === 412) {
        tally.changed += 1; // claimed or completed again since the scan: it stays
        return;
      }
      if (isResourceFailure(error)) throw error;
      if (o.abortSignal?.aborted || tries >= DELETE_TRIES || !isTransient(error)) {
        tally.fail(error);
        return;
      }
    }
    await sleep(100 * tries, o.abortSignal).catch(() => undefined);
  }
}

/** The request may have been applied, and trying again may succeed: a network failure, a 5xx, a time limit. */
function isTransient(error: unknown): boolean {
  return classifyError(error).transient;
}
