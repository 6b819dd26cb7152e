/**
 * The inbox table's rows: how a record is laid out, how a claim is recognised in a row read back,
 * and the done mark's write. Shared by the store's single writes (`table.ts`), its grouped done
 * marks (`table-group.ts`) and its purge (`table-purge.ts`).
 *
 * Row layout: PartitionKey = the claim's partition (the key itself unless the consumer derives a
 * partition from the message), RowKey = the store's prefix (`inbox:`) + key; both escaped so that any
 * key is a valid table key. Properties: `Key` (unescaped), `Status` (`claimed` | `done`), `Owner`,
 * `MessageId`, `DequeueCount`, `ClaimExpiresOn`, `PayloadHash` (when the caller gave one), and once
 * done `CompletedOn`, `ExpiresOn` (the end of its retention) and `Result` (JSON, stored as it is:
 * not encrypted).
 *
 * Why a prefix ends with `:` and keys have `:` escaped: the rows of one store are exactly the
 * RowKeys that start with its prefix. If a prefix could be a prefix of another's (`in:` and `in:b`),
 * one store's key `bx` would be the other's key `x`: they would share records, and one's purge
 * would delete the other's. A prefix that ends with a character no escaped key contains cannot be
 * the start of another prefix's space (`in:` + `b%3Ax` is never `in:b:` + `x`).
 *
 * Why keys are checked as they will be sent: the service refuses a PartitionKey or RowKey over
 * 1 KiB (512 UTF-16 code units, `tables/validation.ts`) with a bare `400 InvalidInput`, and a lone
 * surrogate makes the SDK throw `URIError` while building the URL. The table toolkit's one key
 * check (`tableKeyProblem`) runs on the escaped key with its prefix, before any request.
 */
import type { TableEntityResult, TransactionAction } from "@azure/data-tables";
import { serviceCodeOf, statusOf } from "../errors.js";
import { TableKeyError, type TableKeyName } from "../tables/index.js";
import { TRANSACTION_LIMITS } from "../tables/index.js";
import {
  checkActions,
  MAX_TABLE_KEY_LENGTH,
  tableKeyProblem,
  UNPAIRED_SURROGATE,
  type CheckedAction,
} from "../tables/internal.js";
import { IdempotencyClaimLostError } from "./errors.js";
import type { ClaimRequest, IdempotencyClaim } from "./store.js";

/** What every RowKey prefix of a Table store ends with; keys have it escaped (`%3A`). */
export const ROW_KEY_PREFIX_SEPARATOR = ":";

export type InboxEntity = TableEntityResult<{
  Status?: string;
  Owner?: string;
  MessageId?: string;
  DequeueCount?: number;
  ClaimExpiresOn?: Date | string;
  CompletedOn?: Date | string;
  ExpiresOn?: Date | string;
  Result?: string;
  Key?: string;
  PayloadHash?: string;
}>;

/** The claim the Table store hands out: it also remembers which delivery it was made for. */
interface TableClaim extends IdempotencyClaim {
  readonly messageId: string;
  readonly dequeueCount: number;
}

export function claimProperties(request: ClaimRequest, expiresOn: Date) {
  return {
    Status: "claimed",
    Key: request.key,
    Owner: request.owner,
    MessageId: request.messageId,
    DequeueCount: request.dequeueCount,
    ClaimExpiresOn: expiresOn,
    ...(request.payloadHash === undefined ? {} : { PayloadHash: request.payloadHash }),
  };
}

export function claimOf(
  request: ClaimRequest,
  partitionKey: string,
  rowKey: string,
  etag: string | undefined,
  expiresOn: Date,
  takenOverFrom?: string,
): TableClaim {
  return {
    key: request.key,
    partitionKey,
    rowKey,
    etag,
    expiresOn,
    owner: request.owner,
    takenOverFrom,
    messageId: request.messageId,
    dequeueCount: request.dequeueCount,
  };
}

/**
 * The done mark of `claim`, as one transaction action: a Merge of the changed properties,
 * conditioned on the claim's ETag (the claim's Owner, MessageId and DequeueCount stay); or, for a
 * first-delivery claim that wrote no row, the row's creation (409 if anyone wrote one meanwhile).
 */
export function doneMark(claim: IdempotencyClaim, resultJson: string | undefined, retentionInMs: number) {
  const completedOn = new Date();
  const done = {
    partitionKey: claim.partitionKey,
    rowKey: claim.rowKey,
    Status: "done",
    CompletedOn: completedOn,
    ExpiresOn: new Date(completedOn.getTime() + retentionInMs),
    ...(resultJson === undefined ? {} : { Result: resultJson }),
  };
  if (claim.etag !== undefined) {
    return { entity: done, action: ["update", done, "Merge", { etag: claim.etag }] as TransactionAction };
  }
  const c = claim as TableClaim;
  const created = { ...done, Key: c.key, Owner: c.owner, MessageId: c.messageId, DequeueCount: c.dequeueCount };
  return { entity: created, action: ["create", created] as TransactionAction };
}

export function isOwnClaim(entity: InboxEntity, request: ClaimRequest): boolean {
  return (
    entity.Status === "claimed" &&
    entity.Owner === request.owner &&
    entity.MessageId === request.messageId &&
    entity.DequeueCount === request.dequeueCount
  );
}

/** The row still carries this claim's delivery: written by this claim and nobody else. */
export function sameClaimant(entity: InboxEntity, claim: IdempotencyClaim): boolean {
  const c = claim as Partial<TableClaim>;
  return entity.Owner === claim.owner && entity.MessageId === c.messageId && entity.DequeueCount === c.dequeueCount;
}

export function recordOf(entity: InboxEntity) {
  return {
    status: entity.Status === "done" ? ("done" as const) : ("claimed" as const),
    messageId: entity.MessageId,
    dequeueCount: entity.DequeueCount,
    expiresOnMs: dateOf(entity.ClaimExpiresOn)?.getTime(),
    doneExpiresOnMs: dateOf(entity.ExpiresOn)?.getTime(),
  };
}

/**
 * Checks a claim's effects before anything is sent: table transaction actions (the table toolkit's
 * checks: shape, keys, values), at most 99 (the done mark is the 100th), all in the inbox row's
 * partition, and none on a row of the store itself (a RowKey under `rowKeyPrefix`): an effect may
 * not write the claim's own record, nor forge another key's (`inbox:<other key>` marked done with a
 * made-up result, which would settle that key's requests without running them).
 */
export function checkEffects(
  claim: IdempotencyClaim,
  effects: readonly TransactionAction[],
  rowKeyPrefix: string,
): CheckedAction[] {
  if (!Array.isArray(effects)) throw new TypeError("`effects` must be an array of table transaction actions.");
  if (effects.length > TRANSACTION_LIMITS.maxOperations - 1) {
    throw new RangeError(
      `${effects.length} effects for key '${claim.key}': an entity group transaction holds at most ${TRANSACTION_LIMITS.maxOperations} operations, one of which is the done mark.`,
    );
  }
  const checked = checkActions(effects);
  for (const action of checked) {
    if (action.partitionKey !== claim.partitionKey) {
      throw new RangeError(
        `An effect for key '${claim.key}' is in partition '${action.partitionKey}', but an entity group transaction ` +
          `is limited to one partition: write effects into the inbox row's partition '${claim.partitionKey}' ` +
          "(context.idempotency.partitionKey), or derive the partition from the message with the consumer's `idempotency.partitionKey`.",
      );
    }
    if (action.rowKey === claim.rowKey)
      throw new RangeError(`An effect for key '${claim.key}' would overwrite the inbox row itself.`);
    if (action.rowKey.startsWith(rowKeyPrefix)) {
      throw new RangeError(
        `An effect for key '${claim.key}' (action ${action.index}) writes the row '${action.rowKey}', under the idempotency ` +
          `store's RowKey prefix '${rowKeyPrefix}': those rows are the store's records of other keys. Nothing was written; ` +
          "give your own rows another RowKey (or the store another `rowKeyPrefix`).",
      );
    }
  }
  return checked;
}

/** 412, 404 or 409: the row is not as this write expected (or an earlier try of it was applied). */
export function isConcurrencyOutcome(error: unknown): boolean {
  const status = statusOf(error);
  return status === 412 || status === 404 || status === 409;
}

export function lost(claim: IdempotencyClaim, operation: string, cause: unknown): IdempotencyClaimLostError {
  return new IdempotencyClaimLostError(
    `Could not ${operation} the claim on idempotency key '${claim.key}': another consumer took it over (its record changed) or it is gone.`,
    { key: claim.key, statusCode: statusOf(cause), serviceCode: serviceCodeOf(cause), cause },
  );
}

/**
 * The row read back after a claim that wrote no record (`etag` undefined) failed to insert its done
 * mark: a done record of another delivery, still within its retention, means that delivery
 * committed first. This claim's effects are discarded whole (they were in the failed transaction)
 * and its message is a duplicate: `IdempotencyClaimLostError` with reason `"key-done"`. Anything
 * else (a live claim of another consumer, an expired record) stays `"record-changed"`: the message
 * comes back, and its next delivery claims the key before it runs. So does a record done by a later
 * delivery of this very message: the queue handed it out again, so this delivery lost it (its
 * holder reports `ownershipLost`, it does not delete a message that is no longer its own).
 */
export function lostToRow(
  claim: IdempotencyClaim,
  operation: string,
  cause: unknown,
  current: InboxEntity | undefined,
  nowMs: number,
): IdempotencyClaimLostError {
  const expiresOnMs = dateOf(current?.ExpiresOn)?.getTime();
  const sameMessage = current?.MessageId === (claim as Partial<TableClaim>).messageId;
  const expired = expiresOnMs !== undefined && expiresOnMs <= nowMs;
  if (claim.etag !== undefined || current?.Status !== "done" || expired || sameMessage) {
    return lost(claim, operation, cause);
  }
  return new IdempotencyClaimLostError(
    `Idempotency key '${claim.key}' was marked done by another delivery (message '${current.MessageId ?? "unknown"}') ` +
      "before this one's done mark: this delivery's effects were not written, and its message is a duplicate.",
    {
      key: claim.key,
      reason: "key-done",
      result: parseResult(current.Result),
      statusCode: statusOf(cause),
      serviceCode: serviceCodeOf(cause),
      cause,
    },
  );
}

export function dateOf(value: Date | string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const date = value instanceof Date ? value : new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

export function parseResult(json: string | undefined): unknown {
  if (json === undefined) return undefined;
  try {
    return JSON.parse(json);
  } catch {
    return json;
  }
}

// eslint-disable-next-line no-control-regex -- the control characters are the point: the service refuses them
const ESCAPED_IN_KEYS = /[/\\#?%\u0000-\u001f\u007f-\u009f]/g;
// eslint-disable-next-line no-control-regex -- as above, and the prefix separator
const ESCAPED_AFTER_PREFIX = /[/\\#?%:\u0000-\u001f\u007f-\u009f]/g;

function escape(value: string, pattern: RegExp): string {
  return value.replace(pattern, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0").toUpperCase()}`);
}

/**
 * Escapes a string into a valid PartitionKey or RowKey: `/`, `\`, `#`, `?`, `%` and control
 * characters (which the Table service forbids in keys) become `%XX`, everything else is kept.
 * Distinct inputs give distinct outputs.
 */
export function encodeTableKey(value: string): string {
  return escape(value, ESCAPED_IN_KEYS);
}

/**
 * The partition and RowKey of `key`'s record, checked as they will be sent (escaped, the RowKey with
 * its prefix) by the table toolkit's key check: a {@link TableKeyError} before any request, never
 * the service's bare 400 or the SDK's `URIError`.
 */
export function inboxRow(
  rowKeyPrefix: string,
  key: string,
  partitionKey: string,
): { partitionKey: string; rowKey: string } {
  if (typeof key !== "string" || key.length === 0)
    throw new TypeError("The idempotency key must be a non-empty string.");
  if (typeof partitionKey !== "string" || partitionKey.length === 0)
    throw new TypeError("The idempotency partition key must be a non-empty string.");
  // The RowKey first: with the default partition (the key itself) it is the longer of the two.
  const rowKey = checkedAsSent("rowKey", "key", key, rowKeyPrefix + escape(key, ESCAPED_AFTER_PREFIX), rowKeyPrefix);
  return {
    partitionKey: checkedAsSent("partitionKey", "partition key", partitionKey, encodeTableKey(partitionKey), ""),
    rowKey,
  };
}

function checkedAsSent(keyName: TableKeyName, what: string, given: string, sent: string, prefix: string): string {
  const rule = tableKeyProblem(sent);
  if (rule === undefined) return sent;
  const shown = JSON.stringify(given.length > 40 ? `${given.slice(0, 40)}…` : given);
  let message: string;
  if (rule === "too-long") {
    message =
      `The idempotency ${what} ${shown} is ${given.length} characters, which makes a ${keyName === "rowKey" ? "RowKey" : "PartitionKey"} of ` +
      `${sent.length} UTF-16 code units as sent (${prefix ? `the prefix '${prefix}', ` : ""}with '/', '\\', '#', '?', '%'${prefix ? ", ':'" : ""} ` +
      `and control characters escaped to 3 each); Azure Tables store at most ${MAX_TABLE_KEY_LENGTH} (1 KiB). ` +
      "Use a shorter key, or a hash of it (e.g. SHA-256 in hex).";
  } else {
    const found = UNPAIRED_SURROGATE.exec(given);
    message =
      `The idempotency ${what} ${shown} holds an unpaired UTF-16 surrogate` +
      `${found ? ` U+${found[0].charCodeAt(0).toString(16).toUpperCase()} at position ${found.index}` : ""}: half of a ` +
      "character, which no request URL can carry. Build keys from whole characters (a string cut in the middle of an emoji ends in one).";
  }
  throw new TableKeyError(message, { keyName, rule, value: sent });
}
