/**
 * A table client bound to a held lock: reads pass through, writes are fenced (`./fenced-write.ts`):
 * checked against the lock's scope, the time the lock has left and the entity's fencing token, and
 * safe against lost answers.
 */
import type { TableClient, TableEntity, TableEntityResult, UpdateMode } from "@azure/data-tables";
import { checkNonEmptyString, optionalNumber } from "../internal/validate.js";
import { fencedWrite, type FenceContext } from "./fenced-write.js";
import type { LockHandle } from "./handle.js";

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
  /**
   * The entity property that carries each write's own id, by which a write whose answer was lost
   * recognises itself when it reads the entity back (so that it is neither applied twice nor
   * reported as failed).
   * @default "lockWriteId"
   */
  readonly writeIdProperty?: string;
  /**
   * The client-side time limit of each request of a fenced write (its read, its write, the read-back
   * after a lost answer). `TableLock` passes its lock's `requestTimeoutInMs`.
   * @default 5000
   */
  readonly requestTimeoutInMs?: number;
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
   * what you read (else an ordinary 412 conflict). The entity is read first either way, to check
   * its fencing token; `"*"` counts as no ETag.
   */
  readonly etag?: string;
  /**
   * Cancels the requests. A write cancelled after it was sent may or may not have been applied
   * (look for its `lockWriteId`).
   */
  readonly abortSignal?: AbortSignal;
}

/**
 * A table client bound to a held lock: reads pass through, writes are fenced.
 *
 * @example
 * ```ts
 * import { tableLock } from "azure-storage-concurrency/lease";
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
  /** Creates an entity stamped with the fencing token (409 if it exists; a lost answer is recognised). */
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

/** Fills in and checks the fenced writes' options. */
export function resolveGuardOptions(options: GuardedTableOptions) {
  const property = (name: "fencingProperty" | "writeIdProperty", fallback: string) =>
    options[name] === undefined ? fallback : checkNonEmptyString(name, options[name]);
  const resolved = {
    minTimeLeftInMs: optionalNumber("minTimeLeftInMs", options.minTimeLeftInMs, 2_000, { min: 0 }),
    fencingProperty: property("fencingProperty", "lockFencingToken"),
    writeIdProperty: property("writeIdProperty", "lockWriteId"),
    requestTimeoutInMs: optionalNumber("requestTimeoutInMs", options.requestTimeoutInMs, 5_000, { min: 50 }),
  };
  if (resolved.fencingProperty === resolved.writeIdProperty) {
    throw new TypeError("`fencingProperty` and `writeIdProperty` must be different properties.");
  }
  return resolved;
}

/**
 * Binds `table` to a held lock: see {@link GuardedTable}. The handle must carry a fencing token
 * (a lock on a blob or container).
 *
 * @example
 * ```ts
 * import { guardTable } from "azure-storage-concurrency/lease";
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
  const { minTimeLeftInMs, fencingProperty, writeIdProperty, requestTimeoutInMs } = resolveGuardOptions(options);
  const fencingToken = handle.fencingToken;
  if (fencingToken === undefined) throw new TypeError("`handle` has no fencing token: lock a blob or a container.");
  const scope = options.scope ?? {};
  const ctx: FenceContext = {
    table,
    fencingToken,
    fencingProperty,
    writeIdProperty,
    requestTimeoutInMs,
    check(partitionKey, rowKey) {
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
    },
  };
  const entityWrite = (kind: "create" | "update" | "upsert", entity: TableEntity<object>) => ({
    kind,
    partitionKey: entity.partitionKey,
    rowKey: entity.rowKey,
    entity,
  });

  return {
    handle,
    table,
    getEntity: <T extends object>(partitionKey: string, rowKey: string, opts: { abortSignal?: AbortSignal } = {}) =>
      table.getEntity<T>(partitionKey, rowKey, opts) as Promise<GuardedEntity<T>>,
    createEntity: (entity, opts = {}) => fencedWrite(ctx, { ...entityWrite("create", entity), ...pick(opts) }),
    updateEntity: (entity, mode = "Merge", opts = {}) =>
      fencedWrite(ctx, { ...entityWrite("update", entity), mode, etag: opts.etag, ...pick(opts) }),
    upsertEntity: (entity, mode = "Merge", opts = {}) =>
      fencedWrite(ctx, { ...entityWrite("upsert", entity), mode, ...pick(opts) }),
    deleteEntity: (partitionKey, rowKey, opts = {}) =>
      fencedWrite(ctx, { kind: "delete", partitionKey, rowKey, etag: opts.etag, ...pick(opts) }),
  };
}

function pick(options: { abortSignal?: AbortSignal }): { abortSignal?: AbortSignal } {
  return options.abortSignal === undefined ? {} : { abortSignal: options.abortSignal };
}
