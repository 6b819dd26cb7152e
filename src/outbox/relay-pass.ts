/**
 * One pass of a relay over its partition range: list the outbox rows (one RowKey-range query, paged,
 * each page under the time limit), and for each partition, in sequence order: send the row's message
 * through the claim-check (with the row's id as its idempotency key), then delete the row (with the
 * ETag the listing gave). A partition stops at its first failure for the rest of the pass, so that no
 * row is sent before an earlier one of its partition; the next pass starts again from that row.
 *
 * Faults: a send whose outcome is unknown leaves the row, which the next pass sends again (a second
 * copy with the same id: the consumer's idempotency store handles it once). A delete that fails
 * leaves the row too: sent again, handled once. A crash anywhere is the same. So every committed
 * row's message is sent at least once, and its effect happens once.
 */
import type { TableClient, TableEntityResult } from "@azure/data-tables";
import type { QueueClient } from "@azure/storage-queue";
import type { ClaimCheck } from "../claim-check/index.js";
import { statusOf } from "../errors.js";
import { runPool } from "../internal/pool.js";
import { withTimeLimit } from "../internal/time-limit.js";
import { sdkTracing } from "../observability/scope.js";
import { odataString } from "../tables/index.js";
import { messageRowRange, readMessageRow } from "./rows.js";
import { traceRelay } from "./telemetry.js";

/** A row relayed: its message sent, its row deleted. */
export interface OutboxRelayedMessage {
  /** The row's PartitionKey (the app entity's partition). */
  readonly partitionKey: string;
  /** The row's sequence number in its partition (rows are relayed in this order). */
  readonly sequence: number;
  /** The message's id (its idempotency key). */
  readonly id: string;
  /** The queue message's id. */
  readonly messageId: string;
  /** The claim-check payload blob, when the payload was too large for the queue. */
  readonly payloadBlob: string | undefined;
}

/** What a pass needs. */
export interface RelayPassContext {
  readonly table: TableClient;
  readonly queue: QueueClient;
  readonly claimCheck: ClaimCheck;
  readonly name: string;
  /** PartitionKeys from `from` (included) to `to` (excluded). */
  readonly range: { readonly from?: string | undefined; readonly to?: string | undefined };
  readonly requestTimeoutInMs: number;
  readonly maxConcurrentPartitions: number;
  /** The time to live of messages whose rows give none, in seconds. */
  readonly messageTimeToLive: number;
  readonly onSent: (message: OutboxRelayedMessage) => void;
  readonly onError: (error: unknown, operation: string, partitionKey: string | undefined) => void;
}

/** What one pass did. */
interface RelayPassResult {
  /** Rows listed. */
  readonly rows: number;
  /** Rows relayed (sent and deleted). */
  readonly relayed: number;
  /** Partitions stopped by a failure (their remaining rows wait for the next pass). */
  readonly stopped: number;
}

const PAGE_SIZE = 1000;

/** Relays what is in the outbox now; `abortSignal` (the leadership) stops it between rows. */
export async function relayPass(context: RelayPassContext, abortSignal: AbortSignal): Promise<RelayPassResult> {
  const { table } = context;
  const stopped = new Set<string>();
  let rows = 0;
  let relayed = 0;
  let continuationToken: string | undefined;
  do {
    if (abortSignal.aborted) break;
    const page = await withTimeLimit(
      `list the outbox rows of table '${table.tableName}'`,
      context.requestTimeoutInMs,
      abortSignal,
      async (signal) => {
        const pages = table
          .listEntities<Record<string, unknown>>({
            queryOptions: { filter: filterOf(context) },
            abortSignal: signal,
            tracingOptions: sdkTracing(),
          })
          .byPage({ maxPageSize: PAGE_SIZE, ...(continuationToken ? { continuationToken } : {}) });
        const next = await pages.next();
        return next.done ? undefined : next.value;
      },
    );
    if (!page) break;
    rows += page.length;
    // The rows of one partition, in order; partitions side by side (rows come sorted by PartitionKey, RowKey).
    const partitions = new Map<string, TableEntityResult<Record<string, unknown>>[]>();
    for (const row of page) {
      const list = partitions.get(row.partitionKey!) ?? [];
      list.push(row);
      partitions.set(row.partitionKey!, list);
    }
    const done = await runPool(
      [...partitions].map(([partitionKey, list]) => async () => {
        let count = 0;
        for (const row of list) {
          if (stopped.has(partitionKey) || abortSignal.aborted) break;
          if (await relayRow(context, row, abortSignal)) count += 1;
          else stopped.add(partitionKey);
        }
        return count;
      }),
      context.maxConcurrentPartitions,
    );
    relayed += done.reduce((a, b) => a + b, 0);
    continuationToken = page.continuationToken || undefined;
  } while (continuationToken);
  return { rows, relayed, stopped: stopped.size };
}

/** Sends one row's message and deletes the row; false (reported) when either failed. */
async function relayRow(
  context: RelayPassContext,
  entity: TableEntityResult<Record<string, unknown>>,
  abortSignal: AbortSignal,
): Promise<boolean> {
  const partitionKey = entity.partitionKey!;
  let row;
  try {
    row = await readMessageRow(entity);
  } catch (error) {
    context.onError(error, "read an outbox row", partitionKey);
    return false;
  }
  return traceRelay(row, async () => {
    let sent;
    try {
      sent = await context.claimCheck.sendMessage(context.queue, row.body, {
        idempotencyKey: row.id,
        messageTimeToLive: row.timeToLiveInSeconds ?? context.messageTimeToLive,
        ...(row.contentType ? { contentType: row.contentType } : {}),
        abortSignal,
      });
    } catch (error) {
      if (!abortSignal.aborted) context.onError(error, "send an outbox message", partitionKey);
      return false;
    }
    try {
      await withTimeLimit(
        `delete outbox row (${partitionKey}, ${row.rowKey}) of table '${context.table.tableName}'`,
        context.requestTimeoutInMs,
        undefined, // deleting a sent row is right even after the leadership ended
        (signal) =>
          context.table.deleteEntity(partitionKey, row.rowKey, {
            etag: row.etag,
            abortSignal: signal,
            tracingOptions: sdkTracing(),
          }),
      );
    } catch (error) {
      // 404: deleted already (by an earlier try whose answer was lost, or another relay).
      if (statusOf(error) !== 404) {
        context.onError(error, "delete a sent outbox row", partitionKey);
        return false;
      }
    }
    context.onSent({
      partitionKey,
      sequence: row.sequence,
      id: row.id,
      messageId: sent.messageId,
      payloadBlob: sent.payloadBlob,
    });
    return true;
  });
}

function filterOf({ name, range }: RelayPassContext): string {
  const { after, before } = messageRowRange(name);
  const parts = [`RowKey gt ${odataString(after)}`, `RowKey lt ${odataString(before)}`];
  if (range.from !== undefined) parts.push(`PartitionKey ge ${odataString(range.from)}`);
  if (range.to !== undefined) parts.push(`PartitionKey lt ${odataString(range.to)}`);
  return parts.join(" and ");
}
