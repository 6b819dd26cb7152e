/**
 * Done marks of several claims in shared transactions: the claims (with their effects) that live
 * in one partition are packed into entity group transactions of at most 100 operations and 4 MiB
 * of estimated body (`tables/payload.ts`), a claim's effects and done mark never split, each done
 * mark conditioned on its claim's ETag (or created, for a first-delivery claim).
 *
 * A transaction is all-or-nothing: when one claim in it was lost (its row changed: 412, or was
 * created by someone else: 409), or its answer was lost, none of its claims is committed by it.
 * Those claims are reported as not committed, and the caller completes each one by itself
 * (`TableIdempotencyStore.complete`), which writes it or recognises it as written: the lost claim
 * fails alone and the others commit. Since every done mark is conditioned, a transaction applied
 * late, or twice, cannot commit anything twice.
 */
import { sdkTracing } from "../observability/scope.js";
import type { TableClient, TransactionAction } from "@azure/data-tables";
import { logger } from "../internal/logger.js";
import { estimateActionBytes, tableUrlBytes, transactionBytes, TRANSACTION_LIMITS } from "../tables/internal.js";
import { checkEffects, doneMark } from "./table-rows.js";
import { serializeResult, type CompleteEntry, type IdempotencyStoreCallOptions } from "./store.js";
import { describeError } from "../internal/describe-error.js";

/** One claim's part of a transaction: its effects, then its done mark. */
interface Part {
  readonly index: number;
  readonly actions: TransactionAction[];
  readonly rowKeys: readonly string[];
  readonly bytes: number;
}

/** Commits what can share transactions; resolves with `true` for each entry committed. */
export async function completeGrouped(
  table: TableClient,
  entries: readonly CompleteEntry<TransactionAction>[],
  defaultRetentionInMs: number,
  rowKeyPrefix: string,
  options: IdempotencyStoreCallOptions,
): Promise<boolean[]> {
  const committed = entries.map(() => false);
  const urlBytes = tableUrlBytes(table);
  const byPartition = new Map<string, Part[]>();
  entries.forEach((entry, index) => {
    const part = partOf(entry, index, defaultRetentionInMs, rowKeyPrefix, urlBytes);
    if (!part) return;
    const parts = byPartition.get(entry.claim.partitionKey) ?? [];
    parts.push(part);
    byPartition.set(entry.claim.partitionKey, parts);
  });
  const transactions = [...byPartition.values()].flatMap(pack).filter((parts) => parts.length > 1);
  await Promise.all(
    transactions.map(async (parts) => {
      try {
        await table.submitTransaction(
          parts.flatMap((p) => p.actions),
          { abortSignal: options.abortSignal, tracingOptions: sdkTracing() },
        );
        for (const p of parts) committed[p.index] = true;
      } catch (error) {
        logger.verbose(
          `a transaction of ${parts.length} done marks did not commit (${describeError(error)}); each is completed by itself`,
        );
      }
    }),
  );
  return committed;
}

/**
 * The entry's actions and size; undefined when it is not fit to share: refused effects (another
 * partition, a row under the store's prefix, a bad key or value) are never sent here, and
 * `complete()` then refuses them by name, before any request.
 */
function partOf(
  entry: CompleteEntry<TransactionAction>,
  index: number,
  defaultRetentionInMs: number,
  rowKeyPrefix: string,
  urlBytes: number,
): Part | undefined {
  try {
    const effects = entry.effects ?? [];
    const checked = checkEffects(entry.claim, effects, rowKeyPrefix);
    const mark = doneMark(
      entry.claim,
      serializeResult(entry.claim.key, entry.result),
      entry.retentionInMs ?? defaultRetentionInMs,
    );
    checked.push({
      kind: mark.action[0],
      partitionKey: entry.claim.partitionKey,
      rowKey: entry.claim.rowKey,
      entity: mark.entity,
      action: mark.action,
      index: checked.length,
    });
    const bytes = checked.reduce((sum, action) => sum + estimateActionBytes(action, urlBytes), 0);
    return { index, actions: [...effects, mark.action], rowKeys: checked.map((a) => a.rowKey), bytes };
  } catch {
    return undefined;
  }
}

/**
 * Cuts one partition's parts into transactions within the service's limits, in order, starting a
 * new one when a row comes back (a transaction may touch an entity once).
 */
function pack(parts: readonly Part[]): Part[][] {
  const transactions: Part[][] = [];
  let current: Part[] = [];
  let operations = 0;
  let bytes = 0;
  const rows = new Set<string>();
  for (const part of parts) {
    const fits =
      operations + part.actions.length <= TRANSACTION_LIMITS.maxOperations &&
      transactionBytes([bytes, part.bytes]) <= TRANSACTION_LIMITS.maxPayloadBytes &&
      !part.rowKeys.some((rowKey) => rows.has(rowKey));
    if (!fits && current.length > 0) {
      transactions.push(current);
      current = [];
      operations = 0;
      bytes = 0;
      rows.clear();
    }
    current.push(part);
    operations += part.actions.length;
    bytes += part.bytes;
    for (const rowKey of part.rowKeys) rows.add(rowKey);
  }
  if (current.length > 0) transactions.push(current);
  return transactions;
}
