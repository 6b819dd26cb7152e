/**
 * Sends one planned entity group transaction through the caller's `TableClient.submitTransaction`,
 * optionally retried by a {@link RetryPolicy} (which asks the one classifier, so a 4xx is never
 * retried), and turns a failure into a {@link TableTransactionError} that names the action the
 * service blamed.
 *
 * The service says which operation of a changeset failed by prefixing its message with the
 * operation's position, "1:The specified entity already exists." ("Performing entity group
 * transactions", sample error response; Azurite does the same in
 * src/table/batch/TableBatchSerialization.ts `serializeError`). The SDK throws that sub-response as a
 * RestError with the sub-response's status (sdk/tables/data-tables/src/TableTransaction.ts
 * `parseTransactionResponse`).
 */
import type { TableClient, TransactionAction } from "@azure/data-tables";
import { isStorageRequestError, readRestError } from "../errors.js";
import { logger } from "../internal/logger.js";
import { classifyError } from "../retry/classify.js";
import type { RetryPolicy } from "../retry/retry.js";
import { TableTransactionError } from "./errors.js";
import type { TableLocation } from "./plan.js";

/** The part of a `TableClient` the transaction writers use. */
export type TransactionClient = TableLocation & Pick<TableClient, "submitTransaction">;

/** What came back from a committed transaction. */
interface CommittedTransaction {
  /** The new ETag of each action's entity, in the transaction's order (undefined for deletes). */
  readonly etags: readonly (string | undefined)[];
  /** How many times it was sent. */
  readonly attempts: number;
}

/** A transaction to send: its actions and where they sit in the caller's list. */
interface TransactionToSend {
  readonly partitionKey: string;
  readonly actions: readonly TransactionAction[];
  readonly actionIndexes: readonly number[];
}

/** Sends `transaction`; resolves with the ETags, or rejects with a {@link TableTransactionError}. */
export async function sendTransaction(
  client: TransactionClient,
  transaction: TransactionToSend,
  { policy, abortSignal }: { policy?: RetryPolicy | undefined; abortSignal?: AbortSignal | undefined },
): Promise<CommittedTransaction> {
  let attempts = 0;
  let answerLost = false;
  const attempt = async (signal: AbortSignal | undefined) => {
    attempts += 1;
    try {
      return await client.submitTransaction([...transaction.actions], signal ? { abortSignal: signal } : {});
    } catch (error) {
      if (classifyError(error).kind === "network") answerLost = true;
      throw error;
    }
  };
  try {
    const response = policy
      ? await policy.execute(({ abortSignal: signal }) => attempt(signal), {
          ...(abortSignal ? { abortSignal } : {}),
          operationName: `commit a transaction on partition ${JSON.stringify(transaction.partitionKey)}`,
        })
      : await attempt(abortSignal);
    const etags = transaction.actions.map((action, i) =>
      action[0] === "delete" ? undefined : response.subResponses[i]?.etag,
    );
    logger.verbose(
      `committed a transaction of ${transaction.actions.length} action${transaction.actions.length === 1 ? "" : "s"} on partition ${JSON.stringify(transaction.partitionKey)}` +
        (attempts > 1 ? ` in ${attempts} attempts` : ""),
    );
    return { etags, attempts };
  } catch (error) {
    const cause = isStorageRequestError(error) && error.cause !== undefined ? error.cause : error;
    throw transactionError(cause, transaction, attempts, answerLost);
  }
}

/** Reads the failed operation's position out of the service's "N:message" text. */
function failedOperationOf(message: string): { position: number | undefined; text: string } {
  const match = /^(\d+):(.*)$/s.exec(message);
  return match ? { position: Number(match[1]), text: match[2]!.trim() } : { position: undefined, text: message };
}

function transactionError(
  error: unknown,
  transaction: TransactionToSend,
  attempts: number,
  answerLost: boolean,
): TableTransactionError {
  const info = readRestError(error);
  const classification = classifyError(error);
  const where = `transaction of ${transaction.actions.length} action${transaction.actions.length === 1 ? "" : "s"} on partition ${JSON.stringify(transaction.partitionKey)}`;
  const { position, text } = failedOperationOf(
    info?.message ?? (error instanceof Error ? error.message : String(error)),
  );
  const failedActionIndex =
    position !== undefined && position < transaction.actionIndexes.length
      ? transaction.actionIndexes[position]
      : undefined;
  let message: string;
  if (classification.kind === "cancelled") {
    message = `The ${where} was cancelled; if it had reached the service it may have been applied: read before trying again.`;
  } else if (info?.statusCode === undefined) {
    message = `The ${where} got no answer (${info?.networkCode ?? (error instanceof Error ? error.message : "unknown failure")}); it may or may not have been applied: read before trying again.`;
  } else {
    const blamed =
      failedActionIndex === undefined
        ? ""
        : ` at action ${failedActionIndex} (${String(transaction.actions[position!]![0])})`;
    const next = classification.transient
      ? "It is transient: try again later."
      : "Retrying will not help: fix the action or the data first.";
    const applied = answerLost
      ? "This attempt applied nothing, but an earlier one got no answer and may have committed the transaction: read before deciding."
      : "Nothing in it was applied.";
    message = `The ${where} failed${blamed}: ${info.statusCode}${info.serviceCode ? ` ${info.serviceCode}` : ""}${text ? ` (${text})` : ""}. ${applied} ${next}`;
  }
  return new TableTransactionError(message, {
    code: "TransactionFailed",
    statusCode: info?.statusCode,
    serviceCode: info?.serviceCode ?? info?.networkCode,
    cause: error,
    transient: classification.transient,
    requestId: info?.requestId,
    attempts,
    partitionKey: transaction.partitionKey,
    failedActionIndex,
    actionIndexes: transaction.actionIndexes,
    mayHaveBeenApplied: answerLost || info?.statusCode === undefined,
  });
}
