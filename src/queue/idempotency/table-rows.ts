/**
 * The inbox table's rows: how a record is laid out, how a claim is recognised in a row read back,
 * and the done mark's write. Shared by the store's single writes (`table.ts`), its grouped done
 * marks (`table-group.ts`) and its purge (`table-purge.ts`).
 *
 * Row layout: PartitionKey = the claim's partition (the key itself unless the consumer derives a
 * partition from the message), RowKey = `inbox:` + key; both escaped so that any key is a valid
 * table key. Properties: `Key` (unescaped), `Status` (`claimed` | `done`), `Owner`, `MessageId`,
 * `DequeueCount`, `ClaimExpiresOn`, `PayloadHash` (when the caller gave one), and once done
 * `CompletedOn`, `ExpiresOn` (the end of its retention) and `Result` (JSON).
 */
import type { TableEntityResult, TransactionAction } from "@azure/data-tables";
import { serviceCodeOf, statusOf } from "../../errors.js";
import { TRANSACTION_LIMITS } from "../../tables/payload.js";
import { IdempotencyClaimLostError } from "../errors.js";
import type { ClaimRequest, IdempotencyClaim } from "./store.js";

/** The longest PartitionKey or RowKey the service takes, in characters. */
const MAX_KEY_LENGTH = 1024;

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

export function checkEffects(claim: IdempotencyClaim, effects: readonly TransactionAction[]): void {
  if (!Array.isArray(effects)) throw new TypeError("`effects` must be an array of table transaction actions.");
  if (effects.length > TRANSACTION_LIMITS.maxOperations - 1) {
    throw new RangeError(
      `${effects.length} effects for key '${claim.key}': an entity group transaction holds at most ${TRANSACTION_LIMITS.maxOperations} operations, one of which is the done mark.`,
    );
  }
  for (const action of effects) {
    const entity = Array.isArray(action)
      ? (action[1] as { partitionKey?: unknown; rowKey?: unknown } | undefined)
      : undefined;
    if (!entity || typeof entity !== "object") {
      throw new TypeError('Each effect must be a table transaction action such as ["upsert", entity].');
    }
    if (entity.partitionKey !== claim.partitionKey) {
      throw new RangeError(
        `An effect for key '${claim.key}' is in partition '${String(entity.partitionKey)}', but an entity group transaction ` +
          `is limited to one partition: write effects into the inbox row's partition '${claim.partitionKey}' ` +
          "(context.idempotency.partitionKey), or derive the partition from the message with the consumer's `idempotency.partitionKey`.",
      );
    }
    if (entity.rowKey === claim.rowKey)
      throw new RangeError(`An effect for key '${claim.key}' would overwrite the inbox row itself.`);
  }
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

/**
 * Escapes a string into a valid PartitionKey or RowKey: `/`, `\`, `#`, `?`, `%` and control
 * characters (which the Table service forbids in keys) become `%XX`, everything else is kept.
 * Distinct inputs give distinct outputs.
 */
export function encodeTableKey(value: string): string {
  return value.replace(ESCAPED_IN_KEYS, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0").toUpperCase()}`);
}

export function checkedKey(what: string, value: string, encode = true): string {
  if (typeof value !== "string" || value.length === 0)
    throw new TypeError(`The idempotency ${what} must be a non-empty string.`);
  const encoded = encode ? encodeTableKey(value) : value;
  if (encoded.length > MAX_KEY_LENGTH) {
    throw new RangeError(
      `The idempotency ${what} is ${encoded.length} characters once escaped; Azure Tables allow at most ${MAX_KEY_LENGTH}.`,
    );
  }
  return encoded;
}
