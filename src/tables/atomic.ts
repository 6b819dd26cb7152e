/**
 * `writeAtomic()`: writes that must commit together, as one entity group transaction, or not at all.
 * When they cannot be one transaction (several partitions, over 100 operations, over 4 MiB, an
 * entity twice), it refuses before sending anything instead of silently splitting them.
 *
 * The library checks every limit itself: Azurite does not enforce the one-partition rule
 * (github.com/Azure/Azurite/issues/1215; the SDK checks it client-side with a plain Error), and a
 * check that relies on the service would let an emulator-tested program half-write in production.
 */
import type { TransactionAction } from "@azure/data-tables";
import { logger } from "../internal/logger.js";
import { checkOptionalInstance, checkOptionalSignal, optionalNumber } from "../internal/validate.js";
import { retryPolicy, type RetryOptions } from "../retry/index.js";
import { TransactionRefusedError } from "./errors.js";
import { estimateActionBytes, tableUrlBytes, transactionBytes, TRANSACTION_LIMITS } from "./payload.js";
import type { TableLocation } from "./plan.js";
import { DEFAULT_TRANSACTION_TIMEOUT_IN_MS, sendTransaction, type TransactionClient } from "./transaction.js";
import { checkActions, type TableAction } from "./validation.js";
import { newTableWriteId } from "./read-back.js";
import { stampActions, stampedReadBack } from "./write-id.js";
import { describeError } from "../internal/describe-error.js";
import type { AdaptiveRateLimiter } from "../throttling/index.js";

/** Options for {@link writeAtomic}. */
export interface WriteAtomicOptions {
  /**
   * Retry the transaction with these settings (408, 429, 5xx and network failures; never a 4xx).
   * By default the library does not retry and the client's own pipeline does.
   * @default undefined
   */
  readonly retry?: RetryOptions;
  /** Cancels the request, or the wait between retries. */
  readonly abortSignal?: AbortSignal;
  /**
   * Send the transaction when its partition's adaptive rate allows (see docs/throttling.md).
   * @default undefined
   */
  readonly rateLimiter?: AdaptiveRateLimiter;
  /**
   * The client-side time limit of each transaction request, in milliseconds: a transaction whose
   * answer does not come within it is treated as a lost answer (read back by its write id, then
   * reported `committed`, or failed with `mayHaveBeenApplied` saying whether it may have been
   * applied), never as a failure that a retry could apply twice.
   * @default 30000
   */
  readonly requestTimeoutInMs?: number;
}

/** What {@link writeAtomic} committed. */
export interface WriteAtomicResult {
  /** The one PartitionKey. */
  readonly partitionKey: string;
  /**
   * The new ETag of each action's entity, in the order of the actions: undefined for deletes, and,
   * when the answer was lost and reading back found the transaction applied, for an entity that
   * another writer has changed since.
   */
  readonly etags: readonly (string | undefined)[];
  /** How many requests it took. */
  readonly attempts: number;
  /** The estimated request body, in bytes. */
  readonly estimatedBytes: number;
}

/**
 * Commits `actions` together in one entity group transaction: all of them, or none.
 *
 * Every entity it creates, updates or upserts also gets the property `_writeId`, one random id per
 * call: when the answer is lost (the SDK resends and meets the transaction's own entities, or only
 * an error comes back), reading one entity back tells whether the transaction was applied, so a
 * committed transaction is reported as committed, once.
 *
 * @throws TableKeyError or TableActionError for an action the service would refuse, and
 *   TransactionRefusedError when the actions cannot be one transaction; in both cases nothing was sent.
 * @throws TableTransactionError when the service refused the transaction (`failedActionIndex` says
 *   which action): nothing was applied; or, with `mayHaveBeenApplied: true`, when no read can tell
 *   whether it was (see docs/table-design.md, "What is exactly once").
 *
 * @example
 * ```ts
 * import { writeAtomic } from "azure-storage-concurrency/tables";
 *
 * // A transfer: both legs and the record share the transaction id as PartitionKey (the document's
 * // bank example), so they commit together or not at all.
 * const partitionKey = `transfer-${crypto.randomUUID()}`;
 * await writeAtomic(table, [
 *   ["create", { partitionKey, rowKey: "debit", account: "alice", amount: -25 }],
 *   ["create", { partitionKey, rowKey: "credit", account: "bob", amount: 25 }],
 * ]);
 * ```
 */
export async function writeAtomic(
  client: TransactionClient,
  actions: readonly TableAction[],
  options: WriteAtomicOptions = {},
): Promise<WriteAtomicResult> {
  checkOptionalSignal("abortSignal", options.abortSignal);
  checkOptionalInstance("rateLimiter", options.rateLimiter, "run", "an AdaptiveRateLimiter");
  optionalNumber("requestTimeoutInMs", options.requestTimeoutInMs, DEFAULT_TRANSACTION_TIMEOUT_IN_MS, { min: 1 });
  const policy = options.retry ? retryPolicy(options.retry) : undefined;
  const { partitionKey, transaction, estimatedBytes } = checkAtomic(client, actions);
  const writeId = newTableWriteId();
  const stamped = { ...transaction, actions: stampActions(transaction.actions, writeId) };
  const committed = await sendAtomic(client, stamped, {
    policy,
    abortSignal: options.abortSignal,
    readBack: stampedReadBack(client, partitionKey, stamped.actions, writeId),
    rateLimiter: options.rateLimiter,
    requestTimeoutInMs: options.requestTimeoutInMs,
  });
  return { partitionKey, etags: committed.etags, attempts: committed.attempts, estimatedBytes };
}

/** {@link sendTransaction}, logging a failure at verbose level: a conflict is often an expected outcome (multi-index rows). */
export async function sendAtomic(...args: Parameters<typeof sendTransaction>): ReturnType<typeof sendTransaction> {
  return sendTransaction(...args).catch((error: unknown) => {
    logger.verbose(describeError(error));
    throw error;
  });
}

/**
 * Checks that `actions` can be one entity group transaction, and gives it; throws a
 * {@link TransactionRefusedError} (or a key or action error) when they cannot. Nothing is sent.
 */
export function checkAtomic(
  location: TableLocation,
  actions: readonly TableAction[],
): {
  partitionKey: string;
  transaction: { partitionKey: string; actions: TransactionAction[]; actionIndexes: number[] };
  estimatedBytes: number;
} {
  const checked = checkActions(actions);
  const partitionKeys = [...new Set(checked.map((a) => a.partitionKey))];
  const refuse = (reason: TransactionRefusedError["reason"], message: string, estimatedBytes?: number) =>
    new TransactionRefusedError(`${message} Nothing was sent.`, {
      reason,
      operationCount: checked.length,
      partitionKeys,
      estimatedBytes,
    });
  if (checked.length === 0) throw refuse("empty", "There are no actions to commit.");
  if (partitionKeys.length > 1) {
    const shown = partitionKeys
      .slice(0, 3)
      .map((k) => JSON.stringify(k))
      .join(", ");
    throw refuse(
      "multiple-partitions",
      `These ${checked.length} writes span ${partitionKeys.length} partitions (${shown}${partitionKeys.length > 3 ? ", …" : ""}); an entity group transaction covers one PartitionKey, so they cannot commit together. Give them a PartitionKey they share (the design guide's bank example uses the transaction id), or use writeBatch() if they need not be atomic.`,
    );
  }
  const seen = new Map<string, number>();
  for (const action of checked) {
    const earlier = seen.get(action.rowKey);
    if (earlier !== undefined) {
      throw refuse(
        "duplicate-entity",
        `Actions ${earlier} and ${action.index} both write RowKey ${JSON.stringify(action.rowKey)}; an entity may appear only once in a transaction: merge them into one action.`,
      );
    }
    seen.set(action.rowKey, action.index);
  }
  if (checked.length > TRANSACTION_LIMITS.maxOperations) {
    throw refuse(
      "too-many-operations",
      `${checked.length} operations cannot commit together: a transaction holds at most ${TRANSACTION_LIMITS.maxOperations}. Use writeBatch() if they need not be atomic.`,
    );
  }
  const urlBytes = tableUrlBytes(location);
  const estimatedBytes = transactionBytes(checked.map((a) => estimateActionBytes(a, urlBytes)));
  if (estimatedBytes > TRANSACTION_LIMITS.maxPayloadBytes) {
    throw refuse(
      "payload-too-large",
      `These writes make a request of about ${estimatedBytes} bytes; a transaction carries at most ${TRANSACTION_LIMITS.maxPayloadBytes} (4 MiB). Make the entities smaller (keep large values in a blob and store its name).`,
      estimatedBytes,
    );
  }
  const partitionKey = partitionKeys[0]!;
  return {
    partitionKey,
    transaction: { partitionKey, actions: checked.map((a) => a.action), actionIndexes: checked.map((a) => a.index) },
    estimatedBytes,
  };
}
