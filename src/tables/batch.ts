/**
 * `writeBatch()`: many writes, as few requests as the service allows. Actions are grouped by
 * PartitionKey and cut into entity group transactions of at most 100 operations and 4 MiB (see
 * {@link planTransactions}); transactions of different partitions run concurrently, up to
 * `maxConcurrency`; each transaction's outcome is reported on its own.
 *
 * Each transaction is atomic, the batch is not: when one fails, the others still commit. Writes
 * that must commit together belong in {@link writeAtomic}, which refuses instead of splitting.
 */
import { checkTracingOptions, type OperationTracingOptions } from "../observability/scope.js";
import { traceBatch } from "./telemetry.js";
import { runPool } from "../internal/pool.js";
import {
  checkNumber,
  checkOptionalFunction,
  checkOptionalInstance,
  checkOptionalSignal,
  optionalNumber,
} from "../internal/validate.js";
import { logger } from "../internal/logger.js";
import { retryPolicy, type RetryOptions, type RetryPolicy } from "../retry/index.js";
import { TableTransactionError } from "./errors.js";
import { planChecked, type PlannedTransaction, type PlanTransactionsOptions } from "./plan.js";
import { DEFAULT_TRANSACTION_TIMEOUT_IN_MS, sendTransaction, type TransactionClient } from "./transaction.js";
import { checkActions, type TableAction } from "./validation.js";
import { newTableWriteId } from "./read-back.js";
import { stampActions, stampedReadBack } from "./write-id.js";
import { describeError } from "../internal/describe-error.js";
import { refusedBeforeSending } from "../internal/hints.js";
import type { AdaptiveRateLimiter } from "../throttling/index.js";

/** Options for {@link writeBatch}. */
export interface WriteBatchOptions extends PlanTransactionsOptions {
  /**
   * How many transactions may be in flight at once.
   * @default 4
   */
  readonly maxConcurrency?: number;
  /**
   * Send the transactions of one partition one after another, in the order of the actions, and
   * stop sending a partition's transactions after one of them fails (later writes may depend on
   * earlier ones). With `false`, transactions of one partition may run concurrently; then an
   * entity must not appear twice in `actions`.
   * @default true
   */
  readonly preserveOrder?: boolean;
  /**
   * Retry each failed transaction with these settings. The one classifier decides: 408, 429, 5xx and
   * network failures are retried, a 4xx never is. By default the library does not retry and the
   * client's own pipeline does (see docs/retries.md: retry in one place; give the client
   * `SDK_SINGLE_ATTEMPT.tables` when you pass this).
   * @default undefined (one attempt per transaction at the library level)
   */
  readonly retry?: RetryOptions;
  /** Stops sending: transactions not yet sent are reported as `not-sent`. */
  readonly abortSignal?: AbortSignal;
  /**
   * As the Azure SDK's operations take them: `tracingContext` is the parent of the batch's span
   * (`asc.tables.batch_write`), and so of the SDK's spans under it. Default: the active context.
   */
  readonly tracingOptions?: OperationTracingOptions;
  /**
   * Send each transaction when its partition's adaptive rate allows (see docs/throttling.md): a
   * partition the service throttles is slowed down, not hammered.
   * @default undefined (transactions go out as fast as `maxConcurrency` allows)
   */
  readonly rateLimiter?: AdaptiveRateLimiter;
  /** Called as each transaction settles, e.g. for progress. */
  readonly onTransaction?: (outcome: TransactionOutcome) => void;
  /**
   * The client-side time limit of each transaction request, in milliseconds: a transaction whose
   * answer does not come within it is treated as a lost answer (read back by its write id, then
   * reported `committed`, or failed with `mayHaveBeenApplied` saying whether it may have been
   * applied), never as a failure that a retry could apply twice.
   * @default 30000
   */
  readonly requestTimeoutInMs?: number;
}

/** What became of one transaction. */
export interface TransactionOutcome {
  /** Its PartitionKey. */
  readonly partitionKey: string;
  /** Positions of its actions in the caller's list. */
  readonly actionIndexes: readonly number[];
  /**
   * `committed`: every action applied; `failed`: none applied, or, when `error.mayHaveBeenApplied`,
   * no read can tell (see `error`); `not-sent`: see `reason`.
   */
  readonly status: "committed" | "failed" | "not-sent";
  /** Why it was not sent: an earlier transaction of its partition failed, or the batch was cancelled. */
  readonly reason?: "earlier-transaction-failed" | "cancelled";
  /** The new ETag of each action's entity (same order as `actionIndexes`; undefined for deletes), when committed. */
  readonly etags: readonly (string | undefined)[];
  /** How many requests it took (0 when not sent). */
  readonly attempts: number;
  /** The estimated request body, in bytes. */
  readonly estimatedBytes: number;
  /** The failure, with the service's reason and the action it blamed (`failedActionIndex`). */
  readonly error?: TableTransactionError;
}

/** What {@link writeBatch} did. */
export interface WriteBatchResult {
  /** True when every transaction committed. */
  readonly ok: boolean;
  /** One outcome per transaction, in plan order (by partition, then sequence). */
  readonly transactions: readonly TransactionOutcome[];
  /** Actions applied. */
  readonly committedActions: number;
  /** Actions in failed transactions. */
  readonly failedActions: number;
  /** Actions never sent. */
  readonly notSentActions: number;
  /** Requests made (transaction attempts). */
  readonly requests: number;
}

function notSent(plan: PlannedTransaction, reason: TransactionOutcome["reason"]): TransactionOutcome {
  return {
    partitionKey: plan.partitionKey,
    actionIndexes: plan.actionIndexes,
    status: "not-sent",
    reason,
    etags: [],
    attempts: 0,
    estimatedBytes: plan.estimatedBytes,
  };
}

/**
 * Writes `actions` (the tuples `TableClient.submitTransaction` takes) in as few entity group
 * transactions as the limits allow, and reports each transaction's outcome. Every action is checked
 * first: a bad key or value throws before anything is sent. Service failures do not throw: they are
 * in the result, per transaction, with the action the service blamed. A set-up error that the SDK
 * refused to send (an http endpoint without `allowInsecureConnection`) throws the first
 * transaction's `TableTransactionError` when it failed them all: nothing was applied.
 *
 * Each transaction stamps the entities it writes with `_writeId` (see {@link writeAtomic}), so that a
 * transaction whose answer was lost is reported as committed when it was, and never sent again.
 *
 * @example
 * ```ts
 * import { TableClient } from "@azure/data-tables";
 * import { writeBatch } from "azure-storage-concurrency/tables";
 *
 * declare const readings: { deviceId: string; id: string; celsius: number }[]; // your data
 *
 * const table = TableClient.fromConnectionString(connectionString, "readings");
 * const result = await writeBatch(
 *   table,
 *   readings.map((r) => ["upsert", { partitionKey: r.deviceId, rowKey: r.id, celsius: r.celsius }] as const),
 *   { maxConcurrency: 8 },
 * );
 * for (const t of result.transactions.filter((t) => t.status !== "committed")) {
 *   console.log(t.partitionKey, t.status, t.error?.message ?? t.reason);
 * }
 * ```
 */
export async function writeBatch(
  client: TransactionClient,
  actions: readonly TableAction[],
  options: WriteBatchOptions = {},
): Promise<WriteBatchResult> {
  const maxConcurrency = checkNumber("maxConcurrency", options.maxConcurrency ?? 4, {
    min: 1,
    max: 1000,
    integer: true,
  });
  const preserveOrder = options.preserveOrder ?? true;
  checkOptionalSignal("abortSignal", options.abortSignal);
  checkOptionalFunction("onTransaction", options.onTransaction);
  checkOptionalInstance("rateLimiter", options.rateLimiter, "run", "an AdaptiveRateLimiter");
  optionalNumber("requestTimeoutInMs", options.requestTimeoutInMs, DEFAULT_TRANSACTION_TIMEOUT_IN_MS, { min: 1 });
  const policy = options.retry ? retryPolicy(options.retry) : undefined;
  const checked = checkActions(actions);
  if (!preserveOrder) {
    const seen = new Map<string, number>();
    for (const action of checked) {
      const key = `${action.partitionKey}\u0000${action.rowKey}`;
      const earlier = seen.get(key);
      if (earlier !== undefined) {
        throw new RangeError(
          `\`preserveOrder: false\` needs every entity at most once, but actions ${earlier} and ${action.index} both write (${JSON.stringify(action.partitionKey)}, ${JSON.stringify(action.rowKey)}): keep the default order, or merge them.`,
        );
      }
      seen.set(key, action.index);
    }
  }
  const plans = planChecked(checked, client, options);
  const parent = checkTracingOptions(options.tracingOptions);
  return traceBatch(client, plans.length, checked.length, parent, () =>
    sendPlans(client, plans, options, policy, maxConcurrency),
  );
}

/** Sends the planned transactions (in order per partition unless `preserveOrder: false`), and reports each. */
async function sendPlans(
  client: TransactionClient,
  plans: readonly PlannedTransaction[],
  options: WriteBatchOptions,
  policy: RetryPolicy | undefined,
  maxConcurrency: number,
): Promise<WriteBatchResult> {
  const preserveOrder = options.preserveOrder ?? true;
  const outcomes = new Array<TransactionOutcome>(plans.length);
  const settle = (index: number, outcome: TransactionOutcome) => {
    outcomes[index] = outcome;
    options.onTransaction?.(outcome);
  };

  const send = async (index: number): Promise<boolean> => {
    const plan = plans[index]!;
    if (options.abortSignal?.aborted) {
      settle(index, notSent(plan, "cancelled"));
      return false;
    }
    try {
      const writeId = newTableWriteId();
      const stamped = { ...plan, actions: stampActions(plan.actions, writeId) };
      const committed = await sendTransaction(client, stamped, {
        policy,
        abortSignal: options.abortSignal,
        readBack: stampedReadBack(client, plan.partitionKey, stamped.actions, writeId),
        rateLimiter: options.rateLimiter,
        requestTimeoutInMs: options.requestTimeoutInMs,
      });
      settle(index, {
        partitionKey: plan.partitionKey,
        actionIndexes: plan.actionIndexes,
        status: "committed",
        etags: committed.etags,
        attempts: committed.attempts,
        estimatedBytes: plan.estimatedBytes,
      });
      return true;
    } catch (error) {
      const failure = error as TableTransactionError;
      logger.warning(describeError(error));
      settle(index, {
        partitionKey: plan.partitionKey,
        actionIndexes: plan.actionIndexes,
        status: "failed",
        etags: [],
        attempts: failure.attempts,
        estimatedBytes: plan.estimatedBytes,
        error: failure,
      });
      return false;
    }
  };

  let tasks: (() => Promise<void>)[];
  if (preserveOrder) {
    const byPartition = new Map<string, number[]>();
    plans.forEach((plan, index) => {
      const list = byPartition.get(plan.partitionKey);
      if (list) list.push(index);
      else byPartition.set(plan.partitionKey, [index]);
    });
    tasks = [...byPartition.values()].map((indexes) => async () => {
      for (let i = 0; i < indexes.length; i++) {
        if (await send(indexes[i]!)) continue;
        const failed = outcomes[indexes[i]!]!;
        for (const rest of indexes.slice(i + 1)) {
          settle(
            rest,
            notSent(plans[rest]!, failed.status === "not-sent" ? "cancelled" : "earlier-transaction-failed"),
          );
        }
        break;
      }
    });
  } else {
    tasks = plans.map((_, index) => async () => void (await send(index)));
  }
  await runPool(tasks, maxConcurrency);

  // A set-up error (the SDK refused to send: an http endpoint without allowInsecureConnection, …)
  // fails every transaction the same way and nothing was applied: it throws, as bad input does,
  // rather than hiding in a result that looks like a service failure.
  const failures = outcomes.filter((o) => o.status === "failed");
  if (
    failures.length > 0 &&
    !outcomes.some((o) => o.status === "committed") &&
    failures.every((o) => refusedBeforeSending(o.error?.cause) !== undefined)
  ) {
    throw failures[0]!.error!;
  }

  const count = (status: TransactionOutcome["status"]) =>
    outcomes.filter((o) => o.status === status).reduce((sum, o) => sum + o.actionIndexes.length, 0);
  return {
    ok: outcomes.every((o) => o.status === "committed"),
    transactions: outcomes,
    committedActions: count("committed"),
    failedActions: count("failed"),
    notSentActions: count("not-sent"),
    requests: outcomes.reduce((sum, o) => sum + o.attempts, 0),
  };
}
