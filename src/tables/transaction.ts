/**
 * Sends one planned entity group transaction through the caller's `TableClient.submitTransaction`,
 * optionally retried by a {@link RetryPolicy} (which asks the one classifier, so a 4xx is never
 * retried), and turns a failure into a {@link TableTransactionError} that names the action the
 * service blamed and says whether the transaction may have been applied.
 *
 * When the outcome is in doubt, storage decides (read-back.ts): after no answer, a 500, 502 or 504
 * (on any attempt), or a 404/409/412, which is what a resend meets when an earlier copy was applied
 * (the SDK's own retries resend without telling the library), the transaction's `readBack` reads its
 * write id back. Applied: the transaction resolves as committed. Refused, or absent after a refusal:
 * a definite failure. Otherwise `mayHaveBeenApplied` is true.
 *
 * Each attempt has a client-side time limit (`requestTimeoutInMs`, default
 * {@link DEFAULT_TRANSACTION_TIMEOUT_IN_MS}; see `../internal/time-limit.ts`): the SDK has none of
 * its own, and a transaction whose answer never comes would keep its caller waiting for ever. An
 * attempt cut off by it is a lost answer like any other (it may have been applied): the read-back
 * decides, never a blind resend.
 *
 * The service says which operation of a changeset failed by prefixing its message with the
 * operation's position, "1:The specified entity already exists." ("Performing entity group
 * transactions", sample error response; Azurite does the same in
 * src/table/batch/TableBatchSerialization.ts `serializeError`). The SDK throws that sub-response as a
 * RestError with the sub-response's status (sdk/tables/data-tables/src/TableTransaction.ts
 * `parseTransactionResponse`).
 */
import { sdkTracing } from "../observability/scope.js";
import type { TableClient, TransactionAction } from "@azure/data-tables";
import { isStorageRequestError, readRestError } from "../errors.js";
import { logger } from "../internal/logger.js";
import { networkHint, refusedBeforeSending, statusHint } from "../internal/hints.js";
import { classifyError, mayHaveBeenApplied } from "../retry/internal.js";
import type { RetryPolicy } from "../retry/index.js";
import { TableTransactionError } from "./errors.js";
import type { TableLocation } from "./plan.js";
import { runReadBack, type ReadBack, type ReadBackVerdict } from "./read-back.js";
import { runThrottled, throttleScopeOf, type AdaptiveRateLimiter } from "../throttling/index.js";
import { describeError } from "../internal/describe-error.js";
import { withTimeLimit } from "../internal/time-limit.js";

/**
 * The default client-side time limit of one transaction request: a transaction carries up to 4 MiB,
 * so it gets more than a point read.
 */
export const DEFAULT_TRANSACTION_TIMEOUT_IN_MS = 30_000;

/** The part of a `TableClient` the transaction writers use: `getEntity` reads back a transaction whose answer was lost. */
export type TransactionClient = TableLocation & Pick<TableClient, "submitTransaction" | "getEntity">;

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

/** How to send it. */
interface SendOptions {
  readonly policy?: RetryPolicy | undefined;
  readonly abortSignal?: AbortSignal | undefined;
  /** Decides a doubtful outcome; without it, a doubtful outcome is reported as such. */
  readonly readBack?: ReadBack | undefined;
  /** Each attempt waits for a token of the transaction's partition, and its answer teaches the limiter. */
  readonly rateLimiter?: AdaptiveRateLimiter | undefined;
  /**
   * The client-side time limit of each attempt (the wait for a rate limiter's token not included).
   * @default DEFAULT_TRANSACTION_TIMEOUT_IN_MS
   */
  readonly requestTimeoutInMs?: number | undefined;
}

/** Statuses a resend of an applied transaction meets: its own entity (409), its own new ETag (412), its own delete (404). */
const RESEND_STATUSES: ReadonlySet<number> = new Set([404, 409, 412]);

/** Sends `transaction`; resolves with the ETags, or rejects with a {@link TableTransactionError}. */
export async function sendTransaction(
  client: TransactionClient,
  transaction: TransactionToSend,
  { policy, abortSignal, readBack, rateLimiter, requestTimeoutInMs }: SendOptions,
): Promise<CommittedTransaction> {
  const timeLimitInMs = requestTimeoutInMs ?? DEFAULT_TRANSACTION_TIMEOUT_IN_MS;
  let attempts = 0;
  let inDoubt = false; // an attempt got no answer, or a 500/502/504
  const attempt = async (signal: AbortSignal | undefined) => {
    attempts += 1;
    try {
      const { partitionKey } = transaction;
      const scope = () => throttleScopeOf(`${client.url}/${client.tableName}`, { service: "table", partitionKey });
      const send = () =>
        withTimeLimit(`commit the ${describe(transaction)}`, timeLimitInMs, signal, (limited) =>
          client.submitTransaction([...transaction.actions], { abortSignal: limited, tracingOptions: sdkTracing() }),
        );
      return await runThrottled(rateLimiter, scope, send, signal);
    } catch (error) {
      if (mayHaveBeenApplied(error)) inDoubt = true;
      throw error;
    }
  };
  let cause: unknown;
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
    logger.verbose(`committed the ${describe(transaction)}` + (attempts > 1 ? ` in ${attempts} attempts` : ""));
    return { etags, attempts };
  } catch (error) {
    cause = isStorageRequestError(error) && error.cause !== undefined ? error.cause : error;
  }
  const { kind, statusCode } = classifyError(cause);
  const mayFollowApplied = inDoubt || (statusCode !== undefined && RESEND_STATUSES.has(statusCode));
  if (kind === "cancelled" || !mayFollowApplied) {
    // No status: no answer came, unless the SDK refused to send the request at all.
    const unanswered = statusCode === undefined && refusedBeforeSending(cause) === undefined;
    throw transactionError(cause, transaction, attempts, { doubt: inDoubt || unanswered });
  }
  if (!readBack) throw transactionError(cause, transaction, attempts, { doubt: inDoubt });
  const verdict = await runReadBack(readBack, {
    policy, // the read-back is retried as the transaction was: retry in one place
    abortSignal,
    context: { failedPosition: failedOperationOf(messageOf(cause)).position, inDoubt },
    what: describe(transaction),
  });
  if (verdict.kind === "applied") {
    logger.info(
      `the ${describe(transaction)} had been applied although its answer was lost (read back its write id); counted once`,
    );
    return { etags: verdict.etags, attempts };
  }
  // A 404/409/412 is the service refusing this very transaction now; absent means it is not in storage either.
  const refused = verdict.kind === "refused" || (verdict.kind === "absent" && RESEND_STATUSES.has(statusCode ?? 0));
  throw transactionError(cause, transaction, attempts, { doubt: !refused, readBack: verdict });
}

function describe(transaction: TransactionToSend): string {
  const n = transaction.actions.length;
  return `transaction of ${n} action${n === 1 ? "" : "s"} on partition ${JSON.stringify(transaction.partitionKey)}`;
}

function messageOf(error: unknown): string {
  return readRestError(error)?.message ?? describeError(error);
}

/** Reads the failed operation's position out of the service's "N:message" text. */
function failedOperationOf(message: string): { position: number | undefined; text: string } {
  const match = /^(\d+):(.*)$/s.exec(message);
  return match ? { position: Number(match[1]), text: match[2]!.trim() } : { position: undefined, text: message };
}

/** What the read-back found, in the words of the error message. */
function afterReadBack(verdict: ReadBackVerdict | undefined, doubt: boolean): string {
  if (verdict?.kind === "unknown") return `It may or may not have been applied: ${verdict.reason}.`;
  if (verdict?.kind === "absent" && doubt) {
    return "Reading it back shows it not applied so far, but a copy of it still on its way may yet be: read before deciding.";
  }
  if (verdict) return "Reading it back shows that nothing in it was applied.";
  return doubt
    ? "This attempt applied nothing, but an earlier one got no answer and may have committed the transaction: read before deciding."
    : "Nothing in it was applied.";
}

function transactionError(
  error: unknown,
  transaction: TransactionToSend,
  attempts: number,
  { doubt, readBack }: { doubt: boolean; readBack?: ReadBackVerdict },
): TableTransactionError {
  const info = readRestError(error);
  const classification = classifyError(error);
  const where = describe(transaction);
  const { position, text } = failedOperationOf(messageOf(error));
  const failedActionIndex =
    position !== undefined && position < transaction.actionIndexes.length
      ? transaction.actionIndexes[position]
      : undefined;
  const hint = statusHint(info?.statusCode, info?.serviceCode, error);
  const next = classification.transient
    ? "It is transient: try again later."
    : `Retrying will not help: ${hint ?? "fix the action or the data first"}.`;
  const notSent = refusedBeforeSending(error);
  let message: string;
  if (classification.kind === "cancelled") {
    message = `The ${where} was cancelled; if it had reached the service it may have been applied: read before trying again.`;
  } else if (notSent && !doubt) {
    message = `The ${where} was not sent: the SDK refused to send it (${describeError(error)}), so nothing in it was applied. Fix the set-up: ${notSent}.`;
  } else if (info?.statusCode === undefined) {
    const hint = networkHint(info?.networkCode);
    const why = info?.networkCode ? `${info.networkCode}${hint ? `: ${hint}` : ""}` : describeError(error);
    message = readBack
      ? `The ${where} got no answer (${why}). ${afterReadBack(readBack, doubt)}`
      : `The ${where} got no answer (${why}); it may or may not have been applied: read before trying again.`;
  } else {
    const blamed =
      failedActionIndex === undefined
        ? ""
        : ` at action ${failedActionIndex} (${String(transaction.actions[position!]![0])})`;
    message = `The ${where} failed${blamed}: ${info.statusCode}${info.serviceCode ? ` ${info.serviceCode}` : ""}${text ? ` (${text})` : ""}. ${afterReadBack(readBack, doubt)} ${next}`;
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
    mayHaveBeenApplied: doubt,
  });
}
