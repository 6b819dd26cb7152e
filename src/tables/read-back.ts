/**
 * Reading storage back after a transaction whose outcome is in doubt, to decide what happened.
 *
 * A transaction's answer can be lost after the service applied it: the connection drops, or a 500
 * OperationTimedOut, 502 or 504 comes back (the service may finish the work after answering). The
 * SDK then resends it, and the resend meets the transaction's own effect (409 for a create, 412 for
 * an ETag-checked update, 404 for a delete); or the library is left with the error alone. Either way
 * only storage can tell, and only if the write left a trace that is its own: a write id (see
 * write-id.ts, and the history of multi-index rows).
 *
 * These reads are made by the library on its own, so each has a client-side time limit besides the
 * caller's signal.
 */
import { sdkTracing } from "../observability/scope.js";
import type { TableClient, TableEntityResult } from "@azure/data-tables";
import { randomBytes } from "node:crypto";
import { statusOf } from "../errors.js";
import { decorrelatedJitterBackoff } from "../retry/index.js";
import { withTimeLimit } from "../internal/time-limit.js";
import { retryPolicy, type RetryPolicy } from "../retry/index.js";
import { describeError } from "../internal/describe-error.js";

/** How long a read-back may take, retries included, before the outcome is reported as unknown. */
const READ_BACK_TIMEOUT_IN_MS = 30_000;
/** The client-side time limit of one read (a read that gets no answer is tried again within the budget above). */
const READ_TIMEOUT_IN_MS = 10_000;

/**
 * How a read-back is retried when the write had no retry policy of its own: reads are safe to
 * repeat, and one failed read should not leave an outcome open that the next read would decide.
 */
const READ_BACK_RETRIES = retryPolicy({
  maxRetries: 2,
  backoff: decorrelatedJitterBackoff({ baseInMs: 20, maxInMs: 500 }),
  deadlineInMs: READ_BACK_TIMEOUT_IN_MS,
});

/** The part of a `TableClient` that reads back. */
export type EntityReader = Pick<TableClient, "getEntity">;

/** A stored entity as read back. */
type StoredEntity = TableEntityResult<Record<string, unknown>>;

/**
 * What reading back says about a transaction whose outcome was in doubt:
 * - `applied`: storage holds its write id; `etags` are its entities' ETags as read (undefined for
 *   deletes, and for an entity that a later write has changed since);
 * - `refused`: it is not in storage and cannot be any more: a condition it carries (a create's
 *   "must not exist", an update's ETag) no longer holds, so no copy of it still on its way can apply;
 * - `absent`: it is not in storage, but nothing stops a copy still on its way from applying later;
 * - `unknown`: no read can tell (`reason` says why).
 */
export type ReadBackVerdict =
  | { readonly kind: "applied"; readonly etags: readonly (string | undefined)[] }
  | { readonly kind: "refused" }
  | { readonly kind: "absent" }
  | { readonly kind: "unknown"; readonly reason: string };

/** What the read-back is told about the failure it judges. */
interface ReadBackContext {
  /** The position of the action the service blamed in the last answer, when it named one. */
  readonly failedPosition: number | undefined;
  /**
   * True when an attempt the library saw got no answer, or a 500/502/504: then a 404/409/412 that
   * follows may be the transaction meeting its own effect. (The SDK's own resends are not seen.)
   */
  readonly inDoubt: boolean;
}

/** Reads back a transaction whose outcome is in doubt, and judges it. */
export type ReadBack = (abortSignal: AbortSignal | undefined, context: ReadBackContext) => Promise<ReadBackVerdict>;

/** A new write id: 16 URL-safe characters, 96 random bits (unique without coordination). */
export function newTableWriteId(): string {
  return randomBytes(12).toString("base64url");
}

/** The caller's signal and the read-back's whole budget, as one. */
function readBackSignal(abortSignal: AbortSignal | undefined): AbortSignal {
  const limit = AbortSignal.timeout(READ_BACK_TIMEOUT_IN_MS);
  return abortSignal ? AbortSignal.any([abortSignal, limit]) : limit;
}

/** Reads one entity back, with the time limit; `undefined` when it does not exist. */
export async function readEntityBack(
  client: EntityReader,
  partitionKey: string,
  rowKey: string,
  abortSignal: AbortSignal | undefined,
): Promise<StoredEntity | undefined> {
  try {
    return await withTimeLimit(
      `read back entity '${rowKey}' of partition '${partitionKey}'`,
      READ_TIMEOUT_IN_MS,
      abortSignal,
      (signal) =>
        client.getEntity<Record<string, unknown>>(partitionKey, rowKey, {
          abortSignal: signal,
          tracingOptions: sdkTracing(),
        }),
    );
  } catch (error) {
    if (statusOf(error) === 404) return undefined;
    throw error;
  }
}

/**
 * Runs `readBack`, retried by the write's own `policy` (retry in one place) or else by
 * {@link READ_BACK_RETRIES}, within {@link READ_BACK_TIMEOUT_IN_MS}; a read-back that still fails
 * leaves the outcome unknown.
 */
export async function runReadBack(
  readBack: ReadBack,
  {
    policy,
    abortSignal,
    context,
    what,
  }: {
    policy?: RetryPolicy | undefined;
    abortSignal?: AbortSignal | undefined;
    context: ReadBackContext;
    what: string;
  },
): Promise<ReadBackVerdict> {
  try {
    return await (policy ?? READ_BACK_RETRIES).execute(({ abortSignal: signal }) => readBack(signal, context), {
      abortSignal: readBackSignal(abortSignal),
      operationName: `read back the ${what}`,
    });
  } catch (error) {
    const reason = describeError(error);
    return { kind: "unknown", reason: `reading it back failed too (${reason})` };
  }
}
