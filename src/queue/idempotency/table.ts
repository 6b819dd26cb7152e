/**
 * The idempotency store on Azure Table Storage: an inbox table with one row per idempotency key.
 *
 * Row layout: PartitionKey = the claim's partition (the key itself unless the consumer derives a
 * partition from the message), RowKey = `inbox:` + key; both escaped so that any key is a valid
 * table key. Properties: `Key` (unescaped), `Status` (`claimed` | `done`), `Owner`, `MessageId`,
 * `DequeueCount`, `ClaimExpiresOn`, and once done `CompletedOn` and `Result` (JSON).
 *
 * The concurrency comes from the service: a claim is an insert (409 EntityAlreadyExists if the row
 * exists), a take-over or a done mark is a Replace with `If-Match: <etag>` (412 if anyone wrote the
 * row since), and the done mark and the handler's effects go in one entity group transaction
 * (all-or-nothing, one partition, at most 100 operations) when effects are given.
 *
 * Writes that the service applied but whose response was lost (the SDK then retries and sees 409
 * or 412) are recognised by reading the row back: a row that still carries this claim's owner,
 * message id and dequeue count was written by this claim, and nobody else.
 */
import type { TableClient, TableEntityResult, TransactionAction } from "@azure/data-tables";
import { serviceCodeOf, statusOf } from "../../errors.js";
import { checkNonEmptyString } from "../../internal/validate.js";
import { TRANSACTION_LIMITS } from "../../tables/payload.js";
import { IdempotencyClaimLostError } from "../errors.js";
import {
  judgeExistingRecord,
  serializeResult,
  type ClaimOutcome,
  type ClaimRequest,
  type CompleteOptions,
  type IdempotencyClaim,
  type IdempotencyStore,
  type IdempotencyStoreCallOptions,
} from "./store.js";

/** Options for {@link TableIdempotencyStore}. */
export interface TableIdempotencyStoreOptions {
  /**
   * Prefix of the inbox rows' RowKey, so that they can share a partition with the handler's own
   * rows (which is what makes atomic effects possible).
   * @default "inbox:"
   */
  readonly rowKeyPrefix?: string;
}

const MAX_KEY_LENGTH = 1024;
const CLAIM_ATTEMPTS = 5;

type InboxEntity = TableEntityResult<{
  Status?: string;
  Owner?: string;
  MessageId?: string;
  DequeueCount?: number;
  ClaimExpiresOn?: Date | string;
  CompletedOn?: Date | string;
  Result?: string;
  Key?: string;
}>;

/**
 * An {@link IdempotencyStore} on an Azure Table (the "inbox"). The table must exist
 * (`await tableClient.createTable()`). Effects committed with the done mark are table
 * {@link TransactionAction}s in the claim's partition (`context.idempotency.partitionKey`).
 *
 * @example
 * ```ts
 * import { TableClient } from "@azure/data-tables";
 * import { TableIdempotencyStore } from "azure-storage-concurrency";
 *
 * const inbox = TableClient.fromConnectionString(process.env.AZURE_STORAGE_CONNECTION_STRING!, "inbox");
 * await inbox.createTable();
 * const store = new TableIdempotencyStore(inbox);
 * ```
 */
export class TableIdempotencyStore implements IdempotencyStore<TransactionAction> {
  readonly name = "table";
  readonly #table: TableClient;
  readonly #prefix: string;

  constructor(tableClient: TableClient, options: TableIdempotencyStoreOptions = {}) {
    if (typeof tableClient !== "object" || tableClient === null || typeof tableClient.createEntity !== "function") {
      throw new TypeError("`tableClient` must be a TableClient from @azure/data-tables.");
    }
    this.#table = tableClient;
    this.#prefix =
      options.rowKeyPrefix === undefined ? "inbox:" : checkNonEmptyString("rowKeyPrefix", options.rowKeyPrefix);
    if (encodeTableKey(this.#prefix) !== this.#prefix) {
      throw new RangeError("`rowKeyPrefix` must not contain '/', '\\', '#', '?', '%' or control characters.");
    }
  }

  /** The inbox table's name. */
  get resourceName(): string {
    return this.#table.tableName;
  }

  /**
   * Checks that the inbox table exists and this credential may read it: one read of a row that
   * never exists (404 ResourceNotFound is the good answer; 404 TableNotFound and 403 are not).
   */
  async check(options: IdempotencyStoreCallOptions = {}): Promise<void> {
    try {
      await this.#table.getEntity("", this.#prefix, { abortSignal: options.abortSignal });
    } catch (error) {
      if (statusOf(error) === 404 && serviceCodeOf(error) !== "TableNotFound") return;
      throw error;
    }
  }

  /** The table row that holds `key`'s record (`partitionKey` defaults to the key, as in the consumer). */
  rowOf(
    key: string,
    partitionKey: string = key,
  ): {
    /** The row's PartitionKey (checked as a table key). */
    partitionKey: string;
    /** The row's RowKey: the prefix and the escaped key. */
    rowKey: string;
  } {
    return {
      partitionKey: checkedKey("partition key", partitionKey),
      rowKey: checkedKey("row key", this.#prefix + encodeTableKey(key), false),
    };
  }

  async claim(request: ClaimRequest, options: IdempotencyStoreCallOptions = {}): Promise<ClaimOutcome> {
    const { partitionKey, rowKey } = this.rowOf(request.key, request.partitionKey);
    const { abortSignal } = options;
    if (request.firstDelivery) {
      // Nothing can exist yet: the row is created with the done mark (see `complete`).
      return {
        status: "claimed",
        claim: claimOf(request, partitionKey, rowKey, undefined, new Date(Date.now() + request.ttlInMs)),
      };
    }
    for (let attempt = 1; attempt <= CLAIM_ATTEMPTS; attempt++) {
      const expiresOn = new Date(Date.now() + request.ttlInMs);
      const entity = { partitionKey, rowKey, ...claimProperties(request, expiresOn) };
      try {
        const created = await this.#table.createEntity(entity, { abortSignal });
        return { status: "claimed", claim: claimOf(request, partitionKey, rowKey, created.etag, expiresOn) };
      } catch (error) {
        if (statusOf(error) !== 409) throw error;
      }
      const existing = await this.#read(partitionKey, rowKey, abortSignal);
      if (!existing) continue; // released or deleted in between: insert again
      if (isOwnClaim(existing, request)) {
        // Our own insert, applied by the service, whose response was lost and retried by the SDK.
        return {
          status: "claimed",
          claim: claimOf(request, partitionKey, rowKey, existing.etag, dateOf(existing.ClaimExpiresOn)!),
        };
      }
      const verdict = judgeExistingRecord(recordOf(existing), request, Date.now());
      if (verdict === "done") {
        return { status: "done", result: parseResult(existing.Result), completedOn: dateOf(existing.CompletedOn) };
      }
      if (verdict === "busy") {
        return { status: "busy", owner: existing.Owner ?? "unknown", expiresOn: dateOf(existing.ClaimExpiresOn)! };
      }
      try {
        const replaced = await this.#table.updateEntity(entity, "Replace", { etag: existing.etag, abortSignal });
        return {
          status: "claimed",
          claim: claimOf(request, partitionKey, rowKey, replaced.etag, expiresOn, existing.Owner ?? "unknown"),
        };
      } catch (error) {
        const status = statusOf(error);
        if (status !== 412 && status !== 404) throw error;
        // Another consumer took it over (or it went away) first: look again.
      }
    }
    throw new Error(
      `Could not claim idempotency key '${request.key}' after ${CLAIM_ATTEMPTS} attempts: its record kept changing under contention.`,
    );
  }

  async extend(
    claim: IdempotencyClaim,
    ttlInMs: number,
    options: IdempotencyStoreCallOptions = {},
  ): Promise<IdempotencyClaim> {
    const expiresOn = new Date(Date.now() + ttlInMs);
    if (claim.etag === undefined) {
      // No row yet: only a redelivery of this message can have written one, and then it is theirs.
      if (await this.#read(claim.partitionKey, claim.rowKey, options.abortSignal))
        throw lost(claim, "extend", undefined);
      return { ...claim, expiresOn };
    }
    const patch = { partitionKey: claim.partitionKey, rowKey: claim.rowKey, ClaimExpiresOn: expiresOn };
    try {
      const updated = await this.#table.updateEntity(patch, "Merge", {
        etag: claim.etag,
        abortSignal: options.abortSignal,
      });
      return { ...claim, etag: updated.etag!, expiresOn };
    } catch (error) {
      if (!isConcurrencyOutcome(error)) throw error;
      const current = await this.#read(claim.partitionKey, claim.rowKey, options.abortSignal);
      if (current && current.Status === "claimed" && sameClaimant(current, claim)) {
        return { ...claim, etag: current.etag, expiresOn: dateOf(current.ClaimExpiresOn)! };
      }
      throw lost(claim, "extend", error);
    }
  }

  async complete(claim: IdempotencyClaim, options: CompleteOptions<TransactionAction> = {}): Promise<void> {
    const result = serializeResult(claim.key, options.result);
    const effects = options.effects ?? [];
    checkEffects(claim, effects);
    // A Merge of the changed properties only: the claim's Owner, MessageId and DequeueCount stay.
    // A first-delivery claim has no row yet: the done mark creates it (409 if anyone wrote one).
    const done = {
      partitionKey: claim.partitionKey,
      rowKey: claim.rowKey,
      Status: "done",
      CompletedOn: new Date(),
      ...(result === undefined ? {} : { Result: result }),
    };
    const c = claim as TableClaim;
    const created = { ...done, Key: c.key, Owner: c.owner, MessageId: c.messageId, DequeueCount: c.dequeueCount };
    try {
      if (effects.length === 0 && claim.etag === undefined) {
        await this.#table.createEntity(created, { abortSignal: options.abortSignal });
      } else if (effects.length === 0) {
        await this.#table.updateEntity(done, "Merge", { etag: claim.etag, abortSignal: options.abortSignal });
      } else {
        const mark: TransactionAction =
          claim.etag === undefined ? ["create", created] : ["update", done, "Merge", { etag: claim.etag }];
        await this.#table.submitTransaction([...effects, mark], { abortSignal: options.abortSignal });
      }
    } catch (error) {
      if (!isConcurrencyOutcome(error) && effects.length === 0) throw error;
      const current = await this.#read(claim.partitionKey, claim.rowKey, options.abortSignal);
      if (current && current.Status === "done" && sameClaimant(current, claim)) return; // applied; the response was lost
      if (claim.etag === undefined ? !current : current?.Status === "claimed" && current.etag === claim.etag) {
        throw error; // an effect failed: not a claim problem
      }
      throw lost(claim, "complete", error);
    }
  }

  async release(claim: IdempotencyClaim, options: IdempotencyStoreCallOptions = {}): Promise<void> {
    if (claim.etag === undefined) return; // nothing was written
    try {
      await this.#table.deleteEntity(claim.partitionKey, claim.rowKey, {
        etag: claim.etag,
        abortSignal: options.abortSignal,
      });
    } catch (error) {
      if (!isConcurrencyOutcome(error)) throw error;
    }
  }

  async #read(
    partitionKey: string,
    rowKey: string,
    abortSignal: AbortSignal | undefined,
  ): Promise<InboxEntity | undefined> {
    try {
      return await this.#table.getEntity(partitionKey, rowKey, { abortSignal });
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }
}

/** The claim the Table store hands out: it also remembers which delivery it was made for. */
interface TableClaim extends IdempotencyClaim {
  readonly messageId: string;
  readonly dequeueCount: number;
}

function claimProperties(request: ClaimRequest, expiresOn: Date) {
  return {
    Status: "claimed",
    Key: request.key,
    Owner: request.owner,
    MessageId: request.messageId,
    DequeueCount: request.dequeueCount,
    ClaimExpiresOn: expiresOn,
  };
}

function claimOf(
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

function isOwnClaim(entity: InboxEntity, request: ClaimRequest): boolean {
  return (
    entity.Status === "claimed" &&
    entity.Owner === request.owner &&
    entity.MessageId === request.messageId &&
    entity.DequeueCount === request.dequeueCount
  );
}

function sameClaimant(entity: InboxEntity, claim: IdempotencyClaim): boolean {
  const c = claim as Partial<TableClaim>;
  return entity.Owner === claim.owner && entity.MessageId === c.messageId && entity.DequeueCount === c.dequeueCount;
}

function recordOf(entity: InboxEntity) {
  return {
    status: entity.Status === "done" ? ("done" as const) : ("claimed" as const),
    messageId: entity.MessageId,
    dequeueCount: entity.DequeueCount,
    expiresOnMs: dateOf(entity.ClaimExpiresOn)?.getTime(),
  };
}

function checkEffects(claim: IdempotencyClaim, effects: readonly TransactionAction[]): void {
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

function isConcurrencyOutcome(error: unknown): boolean {
  const status = statusOf(error);
  return status === 412 || status === 404 || status === 409;
}

function lost(claim: IdempotencyClaim, operation: string, cause: unknown): IdempotencyClaimLostError {
  return new IdempotencyClaimLostError(
    `Could not ${operation} the claim on idempotency key '${claim.key}': another consumer took it over (its record changed) or it is gone.`,
    { key: claim.key, statusCode: statusOf(cause), serviceCode: serviceCodeOf(cause), cause },
  );
}

function dateOf(value: Date | string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const date = value instanceof Date ? value : new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

function parseResult(json: string | undefined): unknown {
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
function encodeTableKey(value: string): string {
  return value.replace(ESCAPED_IN_KEYS, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0").toUpperCase()}`);
}

function checkedKey(what: string, value: string, encode = true): string {
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
