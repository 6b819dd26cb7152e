/**
 * Pessimistic table access, as the source documents recommend: a blob is associated with a table
 * (or a partition, or an entity: the scope is the caller's choice) and its lease is taken before
 * the table is touched. Every access path must take the same lock.
 *
 * Writes through the {@link GuardedTable} are fenced (`./guarded-table.ts`, `./fenced-write.ts`):
 * each checks locally that the lock is held with enough time left, stamps the lock's fencing token
 * on the entity, and writes only over an entity whose token is not higher. A holder that was paused
 * past its lease, and whose successor already wrote, is refused with `FencedWriteRejectedError`.
 */
import type { ContainerClient } from "@azure/storage-blob";
import type { TableClient } from "@azure/data-tables";
import { checkNonEmptyString } from "../internal/validate.js";
import { validateTableKey } from "../tables/index.js";
import { blobLeasable } from "./blob.js";
import {
  guardTable,
  resolveGuardOptions,
  type GuardedTable,
  type GuardedTableOptions,
  type TableLockScope,
} from "./guarded-table.js";
import type { LockHandle } from "./handle.js";
import { LeaseLock, type AcquireOptions, type TryAcquireOptions } from "./lock.js";
import { lockNameSegment } from "./lock-name.js";
import type { LeaseLockOptions } from "./options.js";

/** Options for {@link tableLock}. */
export interface TableLockOptions extends LeaseLockOptions, GuardedTableOptions {
  /** The part of the table to guard. @default the whole table */
  readonly scope?: TableLockScope;
  /**
   * The lock blob's name.
   * @default `tables/<table>[/<partitionKey>[/<rowKey>]]` (keys percent-encoded, and trailing dots as `%2E`)
   */
  readonly blobName?: string;
}

/**
 * A lock for pessimistic access to `table`, kept as a blob lease in `container`.
 *
 * @example
 * ```ts
 * import { BlobServiceClient } from "@azure/storage-blob";
 * import { TableClient } from "@azure/data-tables";
 * import { tableLock } from "azure-storage-concurrency/lease";
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
 * import { TableLock } from "azure-storage-concurrency/lease";
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
    for (const key of ["partitionKey", "rowKey"] as const) {
      if (scope[key] === undefined) continue;
      checkNonEmptyString(`scope.${key}`, scope[key]);
      validateTableKey(scope[key], key);
    }
    if (scope.rowKey !== undefined && scope.partitionKey === undefined) {
      throw new TypeError("`scope.rowKey` needs `scope.partitionKey`.");
    }
    const blobName =
      options.blobName ??
      [
        "tables",
        lockNameSegment("table.tableName", table.tableName),
        ...(scope.partitionKey === undefined ? [] : [lockNameSegment("scope.partitionKey", scope.partitionKey)]),
        ...(scope.rowKey === undefined ? [] : [lockNameSegment("scope.rowKey", scope.rowKey)]),
      ].join("/");
    this.lock = new LeaseLock(blobLeasable(container, blobName), options);
    this.table = table;
    this.scope = scope;
    this.#guardOptions = {
      minTimeLeftInMs: options.minTimeLeftInMs,
      fencingProperty: options.fencingProperty,
      writeIdProperty: options.writeIdProperty,
      requestTimeoutInMs: this.lock.options.requestTimeoutInMs,
    };
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
