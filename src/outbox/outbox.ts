/**
 * `TableOutbox`: the write side of the transactional outbox. The application's entity writes and
 * its outgoing messages (outbox rows, rows.ts) commit in one entity group transaction: both or
 * neither, so a crash between "write the order" and "send order placed" can no longer lose the
 * message, and a retry can no longer send it twice with two ids. A relay (`OutboxRelay`) sends the
 * rows and deletes them; each message carries its row's id, which the consumer's idempotency store
 * uses by default, so a second send after a crash has no second effect.
 *
 * The pattern: Chris Richardson's "Transactional outbox" (microservices.io/patterns/data/
 * transactional-outbox.html), and the Azure Architecture Center's version with Cosmos DB
 * (learn.microsoft.com/azure/architecture/databases/guide/transactional-outbox-cosmos), here with
 * Table Storage's entity group transactions (one partition, at most 100 operations, 4 MiB).
 *
 * Sequence numbers: the write updates the partition's head row with `If-Match` in the same
 * transaction, so the rows of a partition are numbered in commit order. The head's ETag is cached
 * per partition (the guess is checked by the conditional write itself): a writer alone in its
 * partition costs one request per write; another writer's commit makes the transaction fail on the
 * head (412, or 409 for a head created meanwhile), and the write reads the head again and retries
 * after a short random pause (writers that collided would otherwise collide again in step).
 */
import type { TableClient, TransactionAction } from "@azure/data-tables";
import { serviceCodeOf, statusOf } from "../errors.js";
import { sleep, uniform } from "../internal/sleep.js";
import { withTimeLimit } from "../internal/time-limit.js";
import { checkNonEmptyString, checkOptionalSignal, describeValue, optionalNumber } from "../internal/validate.js";
import { sdkTracing } from "../observability/scope.js";
import type { RetryOptions } from "../retry/index.js";
import { isTableTransactionError, writeAtomic, type TableAction } from "../tables/index.js";
import { checkMessages, checkOutboxName, headRowKey, messageRow, type OutboxMessage } from "./rows.js";

/** Options for {@link TableOutbox}. */
export interface TableOutboxOptions {
  /**
   * The outbox's name: several outboxes (for several queues, each with its relay) can share a
   * table. 1 to 40 letters, digits, `-` or `_`.
   * @default "default"
   */
  readonly name?: string;
  /**
   * Compress payloads in their rows (`node:zlib` gzip): more of them fit in a row (960 KiB) and in
   * the transaction (4 MiB). The relay decompresses before sending.
   * @default "none"
   */
  readonly compression?: "none" | "gzip";
  /**
   * The client-side time limit of every request the outbox sends: the head read, and each send of
   * the write's transaction (`write`'s first send and its re-sends after another writer took the
   * head). A transaction whose answer does not come within it is a lost answer, not a failure: it is
   * read back by its write id and reported committed when it was, or thrown with
   * `mayHaveBeenApplied: true` when no read can tell, and never sent again with a new sequence (so
   * no row is doubled or lost behind the caller's back).
   * @default 10000
   */
  readonly requestTimeoutInMs?: number;
}

/** Options for {@link TableOutbox.write}. */
export interface OutboxWriteOptions {
  /** The partition, when `actions` is empty (only messages are written). */
  readonly partitionKey?: string;
  /**
   * How many times the transaction is sent when another writer took the partition's next sequence
   * number first (each time after reading the head again).
   * @default 5
   */
  readonly maxAttempts?: number;
  /** Retries of each transaction on transient failures (see `writeAtomic`). @default none: the client's own pipeline retries */
  readonly retry?: RetryOptions;
  /** Cancels the write. A transaction cancelled after it was sent may have committed (`mayHaveBeenApplied`). */
  readonly abortSignal?: AbortSignal;
}

/** What {@link TableOutbox.write} committed. */
export interface OutboxWriteResult {
  /** The one PartitionKey. */
  readonly partitionKey: string;
  /** Each message's id (the idempotency key its consumers see), in the order given. */
  readonly ids: readonly string[];
  /** Each message's sequence number in the partition, in the order given. */
  readonly sequences: readonly number[];
  /** The new ETag of each of your actions' entities, in their order (undefined for deletes). */
  readonly etags: readonly (string | undefined)[];
  /** Transactions sent: more than one when another writer of the partition committed first. */
  readonly attempts: number;
}

/** The outbox actions of one write, for a transaction of your own: {@link TableOutbox.prepare}. */
export interface PreparedOutbox {
  /** Add these to your transaction (same PartitionKey): the head's update and one row per message. */
  readonly actions: readonly TransactionAction[];
  /** Each message's id, in the order given. */
  readonly ids: readonly string[];
  /** Each message's sequence number, in the order given. */
  readonly sequences: readonly number[];
}

interface Head {
  readonly etag: string | undefined;
  readonly next: number;
}

/** The longest random pause before a write that lost the partition's head tries again. */
const MAX_BACKOFF_IN_MS = 500;

/** How many partitions' heads are cached (the oldest are forgotten first). */
const CACHED_HEADS = 1_000;

/**
 * Writes entities and outgoing messages together, in one entity group transaction.
 *
 * @example
 * ```ts
 * import { TableOutbox } from "azure-storage-concurrency/outbox";
 *
 * const outbox = new TableOutbox(tableClient);
 * const order = { partitionKey: "customer-42", rowKey: "order-1001", total: 99.5 };
 * // The order and its "order placed" message commit together, or neither does.
 * const { ids } = await outbox.write(
 *   [["create", order]],
 *   [{ body: JSON.stringify({ type: "order-placed", orderId: "order-1001" }), id: "order-1001-placed" }],
 * );
 * console.log(`queued ${ids[0]}`); // an OutboxRelay sends it; consumers handle it once
 * ```
 */
export class TableOutbox {
  readonly #table: TableClient;
  readonly #name: string;
  readonly #compression: "none" | "gzip";
  readonly #requestTimeoutInMs: number;
  readonly #heads = new Map<string, Head>();

  /**
   * @param tableClient - the application's table: the outbox rows live in its partitions.
   * @param options - see {@link TableOutboxOptions}; checked here.
   */
  constructor(tableClient: TableClient, options: TableOutboxOptions = {}) {
    if (typeof tableClient?.submitTransaction !== "function" || typeof tableClient.getEntity !== "function")
      throw new TypeError("`tableClient` must be a TableClient from @azure/data-tables.");
    if (typeof options !== "object" || options === null) throw new TypeError("`options` must be an object.");
    this.#table = tableClient;
    this.#name = options.name === undefined ? "default" : checkOutboxName(options.name);
    if (options.compression !== undefined && options.compression !== "none" && options.compression !== "gzip")
      throw new TypeError(`\`compression\` must be "none" or "gzip", got ${describeValue(options.compression)}.`);
    this.#compression = options.compression ?? "none";
    this.#requestTimeoutInMs = optionalNumber("requestTimeoutInMs", options.requestTimeoutInMs, 10_000, { min: 1 });
  }

  /** The outbox's name (its rows' RowKeys start with `~outbox:<name>`). */
  get name(): string {
    return this.#name;
  }

  /**
   * Commits `actions` (all in one partition) and `messages` in one entity group transaction
   * (`writeAtomic`, which recognises its own transaction after a lost answer). When another writer
   * took the partition's next sequence number first, reads the head again and sends again, up to
   * `maxAttempts` times; any other failure is thrown as `writeAtomic` throws it, and then nothing
   * was written (or, with `mayHaveBeenApplied`, no read could tell).
   */
  async write(
    actions: readonly TableAction[],
    messages: readonly OutboxMessage[],
    options: OutboxWriteOptions = {},
  ): Promise<OutboxWriteResult> {
    if (!Array.isArray(actions)) throw new TypeError("`actions` must be an array of transaction actions.");
    if (typeof options !== "object" || options === null) throw new TypeError("`options` must be an object.");
    checkOptionalSignal("abortSignal", options.abortSignal);
    const maxAttempts = optionalNumber("maxAttempts", options.maxAttempts, 5, { min: 1, integer: true });
    const partitionKey = partitionOf(actions, options.partitionKey);
    const checked = checkMessages(messages);
    for (let attempt = 1; ; attempt++) {
      const head = this.#heads.get(partitionKey) ?? (await this.#readHead(partitionKey, options.abortSignal));
      const prepared = await this.#prepare(partitionKey, head, checked);
      try {
        const { etags } = await writeAtomic(this.#table, actions.concat(prepared.actions), {
          abortSignal: options.abortSignal,
          requestTimeoutInMs: this.#requestTimeoutInMs,
          ...(options.retry ? { retry: options.retry } : {}),
        });
        this.#remember(partitionKey, { etag: etags[actions.length], next: head.next + checked.length });
        return {
          partitionKey,
          ids: prepared.ids,
          sequences: prepared.sequences,
          etags: etags.slice(0, actions.length),
          attempts: attempt,
        };
      } catch (error) {
        this.#heads.delete(partitionKey);
        const headTaken =
          isTableTransactionError(error) &&
          !error.mayHaveBeenApplied &&
          error.failedActionIndex === actions.length &&
          (error.statusCode === 412 || error.statusCode === 409);
        if (!headTaken || attempt >= maxAttempts) throw error;
        // Writers that collided try again at random moments, so that they do not collide again in step.
        await sleep(uniform(0, Math.min(MAX_BACKOFF_IN_MS, 10 * 2 ** attempt)), options.abortSignal);
      }
    }
  }

  /**
   * The outbox actions for a transaction of your own in `partitionKey` (reads the partition's head).
   * Add them to your actions and commit them together (`writeAtomic`, or `submitTransaction`); when
   * the head's action fails with 412 (or 409), another writer committed first: prepare again.
   */
  async prepare(
    partitionKey: string,
    messages: readonly OutboxMessage[],
    options: { readonly abortSignal?: AbortSignal } = {},
  ): Promise<PreparedOutbox> {
    checkNonEmptyString("partitionKey", partitionKey);
    checkOptionalSignal("abortSignal", options.abortSignal);
    const checked = checkMessages(messages);
    this.#heads.delete(partitionKey); // what the caller commits is not seen here
    return this.#prepare(partitionKey, await this.#readHead(partitionKey, options.abortSignal), checked);
  }

  async #prepare(
    partitionKey: string,
    head: Head,
    messages: readonly { readonly message: OutboxMessage; readonly id: string }[],
  ): Promise<PreparedOutbox> {
    if (messages.length === 0) return { actions: [], ids: [], sequences: [] };
    const sequences = messages.map((_, i) => head.next + i);
    const headEntity = { partitionKey, rowKey: headRowKey(this.#name), NextSequence: head.next + messages.length };
    const headAction: TransactionAction =
      head.etag === undefined ? ["create", headEntity] : ["update", headEntity, "Replace", { etag: head.etag }];
    const rows = await Promise.all(
      messages.map(({ message, id }, i) =>
        messageRow(partitionKey, this.#name, sequences[i]!, message, id, this.#compression),
      ),
    );
    return {
      actions: [headAction, ...rows.map((row): TransactionAction => ["create", row])],
      ids: messages.map((m) => m.id),
      sequences,
    };
  }

  /** Reads the partition's head (time-limited); a partition without one starts at 1. */
  async #readHead(partitionKey: string, abortSignal: AbortSignal | undefined): Promise<Head> {
    try {
      const entity = await withTimeLimit(
        `read the outbox head of partition '${partitionKey}' in table '${this.#table.tableName}'`,
        this.#requestTimeoutInMs,
        abortSignal,
        (signal) =>
          this.#table.getEntity<{ NextSequence?: number }>(partitionKey, headRowKey(this.#name), {
            abortSignal: signal,
            tracingOptions: sdkTracing(),
          }),
      );
      const next = entity.NextSequence;
      if (typeof next !== "number" || !Number.isInteger(next) || next < 1)
        throw new TypeError(`The outbox head of partition '${partitionKey}' has no valid NextSequence.`);
      return { etag: entity.etag, next };
    } catch (error) {
      // 404 ResourceNotFound: no head yet (404 TableNotFound is about the table: thrown).
      if (statusOf(error) === 404 && serviceCodeOf(error) !== "TableNotFound") return { etag: undefined, next: 1 };
      throw error;
    }
  }

  #remember(partitionKey: string, head: Head): void {
    if (head.etag === undefined) return;
    this.#heads.delete(partitionKey);
    this.#heads.set(partitionKey, head);
    if (this.#heads.size > CACHED_HEADS) this.#heads.delete(this.#heads.keys().next().value!);
  }
}

/** The one PartitionKey of the actions (or the option, when there are none). */
function partitionOf(actions: readonly TableAction[], option: string | undefined): string {
  const keys = new Set(
    actions
      .map((action) => (action as readonly unknown[])[1] as { partitionKey?: unknown } | undefined)
      .map((e) => e?.partitionKey),
  );
  if (option !== undefined) keys.add(checkNonEmptyString("partitionKey", option));
  const [only, ...others] = [...keys];
  if (keys.size === 0)
    throw new TypeError("Give `options.partitionKey` when there are no actions: the messages need a partition.");
  if (others.length > 0 || typeof only !== "string" || only === "")
    throw new RangeError(
      "The actions and the outbox messages must share one PartitionKey: an entity group transaction covers one partition.",
    );
  return only;
}
