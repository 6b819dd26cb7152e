/**
 * Planning entity group transactions: group actions by PartitionKey (a transaction covers one
 * partition), keep their order, and cut each group into transactions of at most 100 operations and
 * 4 MiB of estimated payload, starting a new one when an entity comes back (an entity may appear only
 * once per transaction). Pure: nothing is sent.
 */
import type { TransactionAction } from "@azure/data-tables";
import { checkNumber } from "../internal/validate.js";
import { TableActionError } from "./errors.js";
import { estimateActionBytes, tableUrlBytes, transactionBytes, TRANSACTION_LIMITS } from "./payload.js";
import { checkActions, type CheckedAction, type TableAction } from "./validation.js";

/** The client properties planning needs (a `TableClient` has them). */
export interface TableLocation {
  /** The account's table endpoint, as `TableClient.url`. */
  readonly url: string;
  /** The table, as `TableClient.tableName`. */
  readonly tableName: string;
}

/** Options for {@link planTransactions}. */
export interface PlanTransactionsOptions {
  /**
   * At most this many operations per transaction (the service allows 100).
   * @default 100
   */
  readonly maxOperationsPerTransaction?: number;
  /**
   * At most this many bytes of estimated request body per transaction (the service allows 4 MiB).
   * @default 4194304
   */
  readonly maxPayloadBytes?: number;
}

/** One planned transaction. */
export interface PlannedTransaction {
  /** Its PartitionKey. */
  readonly partitionKey: string;
  /** Positions of its actions in the caller's list, in order. */
  readonly actionIndexes: readonly number[];
  /** Its actions, as `submitTransaction` takes them. */
  readonly actions: readonly TransactionAction[];
  /** The estimated request body, in bytes (an upper estimate). */
  readonly estimatedBytes: number;
  /** Its place among the transactions of its partition, from 0. */
  readonly sequenceInPartition: number;
}

/** The settled limits, checked. */
function transactionLimits(options: PlanTransactionsOptions): { maxOperations: number; maxPayloadBytes: number } {
  return {
    maxOperations: checkNumber(
      "maxOperationsPerTransaction",
      options.maxOperationsPerTransaction ?? TRANSACTION_LIMITS.maxOperations,
      {
        min: 1,
        max: TRANSACTION_LIMITS.maxOperations,
        integer: true,
      },
    ),
    maxPayloadBytes: checkNumber("maxPayloadBytes", options.maxPayloadBytes ?? TRANSACTION_LIMITS.maxPayloadBytes, {
      min: 1024,
      max: TRANSACTION_LIMITS.maxPayloadBytes,
      integer: true,
    }),
  };
}

/** Plans already-checked actions. */
export function planChecked(
  checked: readonly CheckedAction[],
  location: TableLocation,
  options: PlanTransactionsOptions = {},
): PlannedTransaction[] {
  const { maxOperations, maxPayloadBytes } = transactionLimits(options);
  const urlBytes = tableUrlBytes(location);
  const groups = new Map<string, CheckedAction[]>();
  for (const action of checked) {
    const group = groups.get(action.partitionKey);
    if (group) group.push(action);
    else groups.set(action.partitionKey, [action]);
  }
  const plans: PlannedTransaction[] = [];
  for (const [partitionKey, group] of groups) {
    let current: CheckedAction[] = [];
    let currentBytes = transactionBytes([]);
    let rowKeys = new Set<string>();
    let sequence = 0;
    const flush = () => {
      if (current.length === 0) return;
      plans.push({
        partitionKey,
        actionIndexes: current.map((a) => a.index),
        actions: current.map((a) => a.action),
        estimatedBytes: currentBytes,
        sequenceInPartition: sequence++,
      });
      current = [];
      currentBytes = transactionBytes([]);
      rowKeys = new Set();
    };
    for (const action of group) {
      const bytes = estimateActionBytes(action, urlBytes);
      if (transactionBytes([bytes]) > maxPayloadBytes) {
        throw new TableActionError(
          `action ${action.index} alone would make a transaction of about ${transactionBytes([bytes])} bytes, over the ${maxPayloadBytes}-byte limit: make the entity smaller (the service stores at most 1 MiB per entity).`,
          { rule: "action-too-large", actionIndex: action.index },
        );
      }
      if (current.length >= maxOperations || currentBytes + bytes > maxPayloadBytes || rowKeys.has(action.rowKey))
        flush();
      current.push(action);
      currentBytes += bytes;
      rowKeys.add(action.rowKey);
    }
    flush();
  }
  return plans;
}

/**
 * Plans how {@link writeBatch} will send `actions`: one partition per transaction, at most 100
 * operations and 4 MiB each, the actions' order kept. Checks every action first.
 *
 * @throws TableKeyError or TableActionError for the first action the service would refuse.
 *
 * @example
 * ```ts
 * import { planTransactions, type TableAction } from "azure-storage-concurrency/tables";
 *
 * declare const actions: TableAction[]; // your writes, any partitions, any number
 *
 * const plan = planTransactions(tableClient, actions);
 * console.log(`${actions.length} actions in ${plan.length} transactions`);
 * ```
 */
export function planTransactions(
  location: TableLocation,
  actions: readonly TableAction[],
  options: PlanTransactionsOptions = {},
): PlannedTransaction[] {
  return planChecked(checkActions(actions), location, options);
}
