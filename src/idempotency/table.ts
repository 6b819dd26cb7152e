/**
 * The idempotency store on Azure Table Storage: an inbox table with one row per idempotency key
 * (the layout: `table-rows.ts`).
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
import { sdkTracing } from "../observability/scope.js";
import type { TableClient, TransactionAction } from "@azure/data-tables";
import { serviceCodeOf, statusOf } from "../errors.js";
import { checkNonEmptyString } from "../internal/validate.js";
import { tableKeyProblem } from "../tables/index.js";
import { checkRetention } from "./purge.js";
import {
  DEFAULT_RETENTION_IN_MS,
  judgeExistingRecord,
  serializeResult,
  type ClaimOutcome,
  type ClaimRequest,
  type CompleteEntry,
  type CompleteOptions,
  type IdempotencyClaim,
  type IdempotencyStore,
  type IdempotencyStoreCallOptions,
  type PurgeOptions,
  type PurgeResult,
} from "./store.js";
import { completeGrouped } from "./table-group.js";
import { purgeInbox } from "./table-purge.js";
import {
  checkEffects,
  claimOf,
  claimProperties,
  dateOf,
  doneMark,
  encodeTableKey,
  inboxRow,
  isConcurrencyOutcome,
  isOwnClaim,
  lost,
  lostToRow,
  parseResult,
  recordOf,
  ROW_KEY_PREFIX_SEPARATOR,
  sameClaimant,
  type InboxEntity,
} from "./table-rows.js";

/** Options for {@link TableIdempotencyStore}. */
export interface TableIdempotencyStoreOptions {
  /**
   * Prefix of the inbox rows' RowKey, so that they can share a partition with the handler's own
   * rows (which is what makes atomic effects possible). It must end with `:` (keys have `:`
   * escaped as `%3A`), so that no store's rows can be another store's: `in:` and `in:b:` never
   * share a row, while `in:` and `in:b` would (`in:` + `bx` = `in:b` + `x`). Effects may not write
   * rows under it.
   * @default "inbox:"
   */
  readonly rowKeyPrefix?: string;
  /**
   * How long a done record keeps its key recognised, in milliseconds from its completion (its
   * `ExpiresOn`); after that the key counts as new and {@link TableIdempotencyStore.purge} may
   * delete the row. Keep it longer than the longest time after which a duplicate can still arrive:
   * a queue message lives 7 days by default. A call can set its own (`CompleteOptions.retentionInMs`).
   * @default 604800000 (7 days)
   */
  readonly retentionInMs?: number;
}

const CLAIM_ATTEMPTS = 5;

/**
 * An {@link IdempotencyStore} on an Azure Table (the "inbox"). The table must exist
 * (`await tableClient.createTable()`). Effects committed with the done mark are table
 * {@link TransactionAction}s in the claim's partition (`context.idempotency.partitionKey`).
 *
 * @example
 * ```ts
 * import { TableClient } from "@azure/data-tables";
 * import { TableIdempotencyStore } from "azure-storage-concurrency/idempotency";
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
  readonly #retentionInMs: number;

  constructor(tableClient: TableClient, options: TableIdempotencyStoreOptions = {}) {
    if (typeof tableClient !== "object" || tableClient === null || typeof tableClient.createEntity !== "function") {
      throw new TypeError("`tableClient` must be a TableClient from @azure/data-tables.");
    }
    this.#table = tableClient;
    this.#prefix =
      options.rowKeyPrefix === undefined ? "inbox:" : checkNonEmptyString("rowKeyPrefix", options.rowKeyPrefix);
    if (encodeTableKey(this.#prefix) !== this.#prefix || tableKeyProblem(this.#prefix) !== undefined) {
      throw new RangeError(
        "`rowKeyPrefix` must not contain '/', '\\', '#', '?', '%', control characters or half of a UTF-16 surrogate pair, " +
          `and must be shorter than a RowKey (512 UTF-16 code units); got ${JSON.stringify(this.#prefix.slice(0, 60))}.`,
      );
    }
    if (!this.#prefix.endsWith(ROW_KEY_PREFIX_SEPARATOR)) {
      throw new RangeError(
        `\`rowKeyPrefix\` ${JSON.stringify(this.#prefix)} must end with '${ROW_KEY_PREFIX_SEPARATOR}' (such as "inbox:" or "tenant-7:inbox:"): ` +
          "otherwise it could be the start of another store's prefix, and the two stores would share rows " +
          `(\`in:\` + \`bx\` is \`in:b\` + \`x\`); keys have '${ROW_KEY_PREFIX_SEPARATOR}' escaped, so a prefix that ends with it is nobody else's.`,
      );
    }
    this.#retentionInMs = checkRetention("retentionInMs", options.retentionInMs, DEFAULT_RETENTION_IN_MS);
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

  /**
   * The table row that holds `key`'s record (`partitionKey` defaults to the key, as in the consumer).
   * @throws TableKeyError when the key or the partition, as sent (escaped, with the prefix), is one
   * the service would refuse: over 1 KiB (512 UTF-16 code units), or holding half of a surrogate pair.
   */
  rowOf(
    key: string,
    partitionKey: string = key,
  ): {
    /** The row's PartitionKey (checked as a table key). */
    partitionKey: string;
    /** The row's RowKey: the prefix and the escaped key. */
    rowKey: string;
  } {
    return inboxRow(this.#prefix, key, partitionKey);
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
        const created = await this.#table.createEntity(entity, { abortSignal, tracingOptions: sdkTracing() });
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
        return {
          status: "done",
          result: parseResult(existing.Result),
          completedOn: dateOf(existing.CompletedOn),
          payloadHash: existing.PayloadHash,
        };
      }
      if (verdict === "busy") {
        return {
          status: "busy",
          owner: existing.Owner ?? "unknown",
          expiresOn: dateOf(existing.ClaimExpiresOn)!,
          payloadHash: existing.PayloadHash,
        };
      }
      try {
        const replaced = await this.#table.updateEntity(entity, "Replace", {
          etag: existing.etag,
          abortSignal,
          tracingOptions: sdkTracing(),
        });
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
        tracingOptions: sdkTracing(),
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
    checkEffects(claim, effects, this.#prefix);
    const retentionInMs = checkRetention("retentionInMs", options.retentionInMs, this.#retentionInMs);
    const { entity, action } = doneMark(claim, result, retentionInMs);
    try {
      if (effects.length === 0 && claim.etag === undefined) {
        await this.#table.createEntity(entity, { abortSignal: options.abortSignal, tracingOptions: sdkTracing() });
      } else if (effects.length === 0) {
        await this.#table.updateEntity(entity, "Merge", {
          etag: claim.etag,
          abortSignal: options.abortSignal,
          tracingOptions: sdkTracing(),
        });
      } else {
        await this.#table.submitTransaction([...effects, action], {
          abortSignal: options.abortSignal,
          tracingOptions: sdkTracing(),
        });
      }
    } catch (error) {
      if (!isConcurrencyOutcome(error) && effects.length === 0) throw error;
      const current = await this.#read(claim.partitionKey, claim.rowKey, options.abortSignal);
      if (current && current.Status === "done" && sameClaimant(current, claim)) return; // applied; the response was lost
      if (claim.etag === undefined ? !current : current?.Status === "claimed" && current.etag === claim.etag) {
        throw error; // an effect failed: not a claim problem
      }
      throw lostToRow(claim, "complete", error, current, Date.now());
    }
  }

  /**
   * Marks several claims done: the claims of one partition (the consumer's batch handler, with a
   * shared `idempotency.partitionKey`) share entity group transactions, within 100 operations and
   * 4 MiB, each claim's effects with its done mark. See {@link IdempotencyStore.completeMany}:
   * entries resolved `false` are to be completed one by one.
   */
  completeMany(
    entries: readonly CompleteEntry<TransactionAction>[],
    options: IdempotencyStoreCallOptions = {},
  ): Promise<readonly boolean[]> {
    return completeGrouped(this.#table, entries, this.#retentionInMs, this.#prefix, options);
  }

  async release(claim: IdempotencyClaim, options: IdempotencyStoreCallOptions = {}): Promise<void> {
    if (claim.etag === undefined) return; // nothing was written
    try {
      await this.#table.deleteEntity(claim.partitionKey, claim.rowKey, {
        etag: claim.etag,
        abortSignal: options.abortSignal,
        tracingOptions: sdkTracing(),
      });
    } catch (error) {
      if (!isConcurrencyOutcome(error)) throw error;
    }
  }

  /**
   * Deletes the inbox rows that have expired: done records whose retention ran out (`ExpiresOn`)
   * and claims whose holder stopped extending them (`ClaimExpiresOn`), by `olderThan` (default
   * now). Each row is deleted with `If-Match` on the ETag the scan read, so a key claimed or
   * completed again after the scan is never deleted (counted in `changed`). Rows of the table that
   * are not the store's (another RowKey prefix) are never touched. The scan reads the whole table
   * (the filter is on properties), one page per request.
   *
   * @example
   * ```ts
   * import { TableIdempotencyStore } from "azure-storage-concurrency/idempotency";
   *
   * const store = new TableIdempotencyStore(tableClient, { retentionInMs: 24 * 3_600_000 }); // keep done keys a day
   * const { deleted, changed, failed } = await store.purge({ abortSignal: AbortSignal.timeout(60_000) });
   * console.log(`purged ${deleted} rows; ${changed} were in use again; ${failed} failed (tried again next time)`);
   * ```
   */
  purge(options: PurgeOptions = {}): Promise<PurgeResult> {
    return purgeInbox(this.#table, this.#prefix, options);
  }

  async #read(
    partitionKey: string,
    rowKey: string,
    abortSignal: AbortSignal | undefined,
  ): Promise<InboxEntity | undefined> {
    try {
      return await this.#table.getEntity(partitionKey, rowKey, { abortSignal, tracingOptions: sdkTracing() });
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }
}
