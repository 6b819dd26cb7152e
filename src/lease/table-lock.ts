/**
 * Pessimistic table access, as the source documents recommend: a blob is associated with a table
 * (or a partition, or an entity: the scope is the caller's choice) and its lease is taken before
 * the table is touched. Every access path must take the same lock.
 *
 * Writes through the {@link GuardedTable} are fenced: each checks locally that the lock is held with
 * enough time left, stamps the lock's fencing token on the entity, and writes only over an entity
 * whose token is not higher (an ETag-conditioned read-check-write). A holder that was paused past
 * its lease, and whose successor already wrote, is refused with `FencedWriteRejectedError`.
 */
import type { ContainerClient } from "@azure/storage-blob";
import type { TableClient, TableEntity, TableEntityResult, UpdateMode } from "@azure/data-tables";
import { statusOf } from "../errors.js";
import { checkNonEmptyString, optionalNumber } from "../internal/validate.js";
import { blobLeasable } from "./blob.js";
import { FencedWriteRejectedError } from "./errors.js";
import type { LockHandle } from "./handle.js";
import { LeaseLock, type AcquireOptions, type TryAcquireOptions } from "./lock.js";
import type { LeaseLockOptions } from "./options.js";

/** Which part of the table one lock guards. */
export interface TableLockScope {
  /** Guard one partition (or, with `rowKey`, one entity) instead of the whole table. */
  readonly partitionKey?: string;
  /** Guard one entity; needs `partitionKey`. */
  readonly rowKey?: string;
}

/** Options for the fenced writes of a {@link GuardedTable}. */
export interface GuardedTableOptions {
  /**
   * A write is refused (`LockNotHeldError`) when the lock has less time than this left.
   * @default 2000
   */
  readonly minTimeLeftInMs?: number;
  /**
   * The entity property that carries the fencing token.
   * @default "lockFencingToken"
   */
  readonly fencingProperty?: string;
}

/** Options for {@link tableLock}. */
export interface TableLockOptions extends LeaseLockOptions, GuardedTableOptions {
  /** The part of the table to guard. @default the whole table */
  readonly scope?: TableLockScope;
  /**
   * The lock blob's name.
   * @default `tables/<table>[/<partitionKey>[/<rowKey>]]` (keys percent-encoded)
   */
  readonly blobName?: string;
}

/** An entity as read through a {@link GuardedTable}: its keys are always there, ready to write back. */
export type GuardedEntity<T extends object> = TableEntityResult<T> & {
  /** The entity's PartitionKey. */
  partitionKey: string;
  /** The entity's RowKey. */
  rowKey: string;
};

/** Options for a fenced write. */
export interface FencedWriteOptions {
  /**
   * The ETag from your own read (read-modify-write): the write then succeeds only over exactly
   * what you read, in one request. Without it the write reads the entity first.
   */
  readonly etag?: string;
  /** Cancels the requests. */
  readonly abortSignal?: AbortSignal;
}

/**
 * A table client bound to a held lock: reads pass through, writes are fenced.
 *
 * @example
 * ```ts
 * import { tableLock } from "azure-storage-concurrency";
 *
 * const counters = tableLock(container, table, { scope: { partitionKey: "counters" } });
 * await counters.withLock(async (guarded) => {
 *   const counter = await guarded.getEntity<{ value: number }>("counters", "orders");
 *   await guarded.updateEntity({ ...counter, value: counter.value + 1 }, "Replace", { etag: counter.etag });
 * });
 * ```
 */
export interface GuardedTable {
  /** The held lock. */
  readonly handle: LockHandle;
  /** The underlying table client, for reads and anything not wrapped here (unfenced). */
  readonly table: TableClient;
  /** Reads an entity (no lock check: reads are the caller's choice, see docs/lease-locks.md). */
  getEntity<T extends object = Record<string, unknown>>(
    partitionKey: string,
    rowKey: string,
    options?: { abortSignal?: AbortSignal },
  ): Promise<GuardedEntity<T>>;
  /** Creates an entity stamped with the fencing token (409 if it exists). */
  createEntity<T extends object>(entity: TableEntity<T>, options?: { abortSignal?: AbortSignal }): Promise<void>;
  /** Updates an existing entity (Merge by default), fenced. */
  updateEntity<T extends object>(
    entity: TableEntity<T>,
    mode?: UpdateMode,
    options?: FencedWriteOptions,
  ): Promise<void>;
  /** Creates or updates an entity (Merge by default), fenced. */
  upsertEntity<T extends object>(
    entity: TableEntity<T>,
    mode?: UpdateMode,
    options?: { abortSignal?: AbortSignal },
  ): Promise<void>;
  /** Deletes an entity, fenced. (A deleted entity keeps no token: see docs/lease-locks.md.) */
  deleteEntity(partitionKey: string, rowKey: string, options?: FencedWriteOptions): Promise<void>;
}

/**
 * A lock for pessimistic access to `table`, kept as a blob lease in `container`.
 *
 * @example
 * ```ts
 * import { BlobServiceClient } from "@azure/storage-blob";
 * import { TableClient } from "@azure/data-tables";
 * import { tableLock } from "azure-storage-concurrency";
 *
 * const cs = process.env.AZURE_STORAGE_CONNECTION_STRING!;
 * const locks = BlobServiceClient.fromConnectionString(cs).getContainerClient("locks");
 * const orders = TableClient.fromConnectionString(cs, "orders");
 * const lock = tableLock(locks, orders, { scope: { partitionKey: "customer-42" } });
 * await lock.withLock(async (guarded) => {
 *   await guarded.upsertEntity({ partitionKey: "customer-42", rowKey: "total", amount: 10 });
 * });
 * ```
 */
export function tableLock(container: ContainerClient, table: TableClient, options: TableLockOptions = {}): TableLock {
  return new TableLock(container, table, options);
}

/**
 * A lock guarding a table, partition or entity; see {@link tableLock}.
 *
 * @example
 * ```ts
 * import { TableLock } from "azure-storage-concurrency";
 *
 * // `container` holds the lock blobs; `table` is the table it guards.
 * const customerLock = new TableLock(container, table, { scope: { partitionKey: "customer-42" } });
 * const guarded = await customerLock.tryAcquire();
 * if (guarded) {
 *   try { await guarded.upsertEntity({ partitionKey: "customer-42", rowKey: "r", done: true }); }
 *   finally { await guarded.handle.release(); }
 * }
 * ```
 */
export class TableLock {
  /** The blob lease lock underneath. */
  readonly lock: LeaseLock;
  /** The guarded table. */
  readonly table: TableClient;
  /** The guarded scope. */
  readonly scope: TableLockScope;
  readonly #guardOptions: GuardedTableOptions;

  constructor(container: ContainerClient, table: TableClient, options: TableLockOptions = {}) {
    const scope = options.scope ?? {};
    if (scope.partitionKey !== undefined) checkNonEmptyString("scope.partitionKey", scope.partitionKey);
    if (scope.rowKey !== undefined) {
      checkNonEmptyString("scope.rowKey", scope.rowKey);
      if (scope.partitionKey === undefined) throw new TypeError("`scope.rowKey` needs `scope.partitionKey`.");
    }
    const blobName =
      options.blobName ??
      ["tables", table.tableName, scope.partitionKey, scope.rowKey]
        .filter((part): part is string => part !== undefined)
        .map(encodeURIComponent)
        .join("/");
    this.lock = new LeaseLock(blobLeasable(container, blobName), options);
    this.table = table;
    this.scope = scope;
    this.#guardOptions = { minTimeLeftInMs: options.minTimeLeftInMs, fencingProperty: options.fencingProperty };
    resolveGuardOptions(this.#guardOptions);
  }

  /** Takes the lock, waiting as `options` allow; release with `guarded.handle.release()`. */
  async acquire(options?: AcquireOptions): Promise<GuardedTable> {
    return this.#guard(await this.lock.acquire(options));
  }

  /** Takes the lock if free; `undefined` when held. */
  async tryAcquire(options?: TryAcquireOptions): Promise<GuardedTable | undefined> {
    const handle = await this.lock.tryAcquire(options);
    return handle && this.#guard(handle);
  }

  /** Runs `callback` with a guarded table under the lock and always releases it (see `LeaseLock.withLock`). */
  withLock<T>(callback: (guarded: GuardedTable) => Promise<T> | T, options?: AcquireOptions): Promise<T> {
    return this.lock.withLock((handle) => callback(this.#guard(handle)), options);
  }

  #guard(handle: LockHandle): GuardedTable {
    return guardTable(this.table, handle, { ...this.#guardOptions, scope: this.scope });
  }
}

function resolveGuardOptions(options: GuardedTableOptions) {
  return {
    minTimeLeftInMs: optionalNumber("minTimeLeftInMs", options.minTimeLeftInMs, 2_000, { min: 0 }),
    fencingProperty:
      options.fencingProperty === undefined
        ? "lockFencingToken"
        : checkNonEmptyString("fencingProperty", options.fencingProperty),
  };
}

const MAX_FENCED_TRIES = 5;

/**
 * Binds `table` to a held lock: see {@link GuardedTable}. The handle must carry a fencing token
 * (a lock on a blob or container).
 *
 * @example
 * ```ts
 * import { guardTable } from "azure-storage-concurrency";
 *
 * await using held = await lock.acquire(); // a lock on a blob or container
 * const guarded = guardTable(table, held, { minTimeLeftInMs: 5_000 });
 * await guarded.upsertEntity({ partitionKey: "p", rowKey: "r", status: "done" });
 * ```
 */
export function guardTable(
  table: TableClient,
  handle: LockHandle,
  options: GuardedTableOptions & { readonly scope?: TableLockScope } = {},
): GuardedTable {
  const { minTimeLeftInMs, fencingProperty } = resolveGuardOptions(options);
  const token = handle.fencingToken;
  if (token === undefined) throw new TypeError("`handle` has no fencing token: lock a blob or a container.");
  const scope = options.scope ?? {};

  const check = (partitionKey: string, rowKey: string) => {
    if (
      (scope.partitionKey !== undefined && partitionKey !== scope.partitionKey) ||
      (scope.rowKey !== undefined && rowKey !== scope.rowKey)
    ) {
      throw new RangeError(
        `This lock guards ${scope.rowKey === undefined ? `partition '${scope.partitionKey}'` : `entity '${scope.partitionKey}/${scope.rowKey}'`}` +
          ` of table '${table.tableName}', not '${partitionKey}/${rowKey}'.`,
      );
    }
    handle.assertHeld({ minTimeLeftInMs });
  };
  const tokenOf = (entity: Record<string, unknown>): number => {
    const value = entity[fencingProperty];
    const parsed =
      typeof value === "object" && value !== null ? Number((value as { value?: unknown }).value) : Number(value ?? 0);
    return Number.isFinite(parsed) ? parsed : 0;
  };
  const refuse = (current: number, cause?: unknown) =>
    new FencedWriteRejectedError(
      `Refused to write to table '${table.tableName}': the entity carries fencing token ${current}, written under a later ` +
        `acquisition of the lock than this holder's (${token}). This holder lost the lock; stop and let the new holder work.`,
      { fencingToken: token, currentToken: current, cause },
    );
  const stamp = <T extends object>(entity: TableEntity<T>) => ({ ...entity, [fencingProperty]: token });
  const read = (partitionKey: string, rowKey: string, abortSignal?: AbortSignal) =>
    table.getEntity<Record<string, unknown>>(partitionKey, rowKey, { abortSignal });

  /** Read, check the token, write with If-Match on what was read; again if someone wrote in between. */
  async function fenced(
    partitionKey: string,
    rowKey: string,
    options: FencedWriteOptions,
    write: (etag: string | undefined) => Promise<unknown>,
    { createIfMissing = false } = {},
  ): Promise<void> {
    check(partitionKey, rowKey);
    if (options.etag !== undefined) {
      try {
        await write(options.etag);
        return;
      } catch (error) {
        if (statusOf(error) !== 412) throw error;
        const current = await read(partitionKey, rowKey, options.abortSignal).catch(() => undefined);
        if (current && tokenOf(current) > token!) throw refuse(tokenOf(current), error);
        throw error; // the caller's read is stale: an ordinary optimistic conflict
      }
    }
    for (let attempt = 1; ; attempt++) {
      let etag: string | undefined;
      try {
        const current = await read(partitionKey, rowKey, options.abortSignal);
        if (tokenOf(current) > token!) throw refuse(tokenOf(current));
        etag = current.etag;
      } catch (error) {
        if (!createIfMissing || statusOf(error) !== 404) throw error;
      }
      check(partitionKey, rowKey);
      try {
        await write(etag);
        return;
      } catch (error) {
        const status = statusOf(error);
        const raced =
          status === 412 ||
          (etag === undefined && status === 409) ||
          (etag !== undefined && status === 404 && createIfMissing);
        if (!raced || attempt >= MAX_FENCED_TRIES) throw error;
      }
    }
  }

  return {
    handle,
    table,
    getEntity: <T extends object>(partitionKey: string, rowKey: string, opts: { abortSignal?: AbortSignal } = {}) =>
      table.getEntity<T>(partitionKey, rowKey, opts) as Promise<GuardedEntity<T>>,
    async createEntity(entity, opts = {}) {
      check(entity.partitionKey, entity.rowKey);
      await table.createEntity(stamp(entity), opts);
    },
    async updateEntity(entity, mode = "Merge", opts = {}) {
      await fenced(entity.partitionKey, entity.rowKey, opts, (etag) =>
        table.updateEntity(stamp(entity), mode, { etag: etag!, abortSignal: opts.abortSignal }),
      );
    },
    async upsertEntity(entity, mode = "Merge", opts = {}) {
      await fenced(
        entity.partitionKey,
        entity.rowKey,
        opts,
        (etag) =>
          etag === undefined
            ? table.createEntity(stamp(entity), { abortSignal: opts.abortSignal })
            : table.updateEntity(stamp(entity), mode, { etag, abortSignal: opts.abortSignal }),
        { createIfMissing: true },
      );
    },
    async deleteEntity(partitionKey, rowKey, opts = {}) {
      await fenced(partitionKey, rowKey, opts, (etag) =>
        table.deleteEntity(partitionKey, rowKey, { etag, abortSignal: opts.abortSignal }),
      );
    },
  };
}
