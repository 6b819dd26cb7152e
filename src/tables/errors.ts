/**
 * The table toolkit's errors. Each extends the library's base error, has a stable `code`, and comes
 * with an `is…Error` guard that checks the brand and `name` (so two copies of the package agree).
 *
 * - {@link TableKeyError}: a PartitionKey or RowKey the service would refuse, caught before sending.
 * - {@link TableActionError}: an action the SDK or the service would refuse (unknown kind, a
 *   property value the SDK cannot serialise, a property over the service's size limits).
 * - {@link TransactionRefusedError}: writes that must commit together cannot (several partitions,
 *   over 100 operations, over 4 MiB, the same entity twice); nothing was sent.
 * - {@link TableTransactionError}: the service refused a transaction; says which action failed.
 * - {@link MultiIndexConflictError}: a multi-index record changed, or a key it needs is taken.
 */
import {
  isStorageConcurrencyError,
  StorageConcurrencyError,
  StorageRequestError,
  type StorageConcurrencyErrorOptions,
} from "../errors.js";

/** Which of the two key properties. */
export type TableKeyName = "partitionKey" | "rowKey";

/**
 * The rule a key broke:
 * - `missing`: `null` or `undefined` (the service stores empty strings, never null keys);
 * - `not-a-string`: keys are strings;
 * - `too-long`: over 1 KiB, that is over 512 UTF-16 code units;
 * - `forbidden-character`: `/`, `\`, `#`, `?`, or a control character (U+0000-U+001F, U+007F-U+009F);
 * - `unpaired-surrogate`: half of a UTF-16 surrogate pair without its other half (`"a\uD800b"`): it is
 *   no character at all, and no URL can carry it (`encodeURIComponent` throws "URI malformed").
 */
export type TableKeyRule = "missing" | "not-a-string" | "too-long" | "forbidden-character" | "unpaired-surrogate";

/** A PartitionKey or RowKey that the service would refuse. Thrown before any request is sent. */
export class TableKeyError extends StorageConcurrencyError {
  /** Which key. */
  readonly keyName: TableKeyName;
  /** The rule it broke. */
  readonly rule: TableKeyRule;
  /** The offending value (strings longer than 80 characters are cut, with an ellipsis). */
  readonly value: unknown;
  /** The position of the action in the caller's list, when the key came from a list of actions. */
  readonly actionIndex: number | undefined;

  constructor(
    message: string,
    options: { keyName: TableKeyName; rule: TableKeyRule; value: unknown; actionIndex?: number | undefined },
  ) {
    super(message, { code: "InvalidTableKey" });
    this.name = "TableKeyError";
    this.keyName = options.keyName;
    this.rule = options.rule;
    this.value =
      typeof options.value === "string" && options.value.length > 80 ? `${options.value.slice(0, 80)}…` : options.value;
    this.actionIndex = options.actionIndex;
  }
}

/**
 * True when `error` is a {@link TableKeyError}.
 *
 * @example
 * ```ts
 * import { writeBatch, isTableKeyError } from "azure-storage-concurrency/tables";
 *
 * try {
 *   await writeBatch(table, [["upsert", { partitionKey: "eu/west", rowKey: "1" }]]); // "/" is not allowed in keys
 * } catch (error) {
 *   if (isTableKeyError(error)) console.log(`action ${error.actionIndex}: ${error.keyName} breaks ${error.rule}`);
 * }
 * ```
 *
 * @deprecated Use `isStorageConcurrencyError(error, "InvalidTableKey")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isTableKeyError(error: unknown): error is TableKeyError {
  return isStorageConcurrencyError(error) && error.name === "TableKeyError";
}

/**
 * What is wrong with an action:
 * - `not-an-action`: not a `[kind, entity, ...]` tuple with an entity object;
 * - `unknown-kind`: the kind is not `create`, `update`, `upsert` or `delete`;
 * - `unsupported-value`: a property value the SDK cannot serialise (use strings, numbers, booleans,
 *   bigint, Date, Uint8Array, or `{ value, type }` with an EDM type);
 * - `value-too-large`: a string property over 32,768 UTF-16 code units (64 KiB) or a binary one over 64 KiB;
 * - `too-many-properties`: more than 252 properties besides PartitionKey, RowKey and Timestamp;
 * - `action-too-large`: one action alone is bigger than the transaction payload limit.
 */
export type TableActionRule =
  | "not-an-action"
  | "unknown-kind"
  | "unsupported-value"
  | "value-too-large"
  | "too-many-properties"
  | "action-too-large";

/** An action the SDK or the service would refuse. Thrown before any request is sent. */
export class TableActionError extends StorageConcurrencyError {
  /** The rule it broke. */
  readonly rule: TableActionRule;
  /** The position of the action in the caller's list. */
  readonly actionIndex: number | undefined;
  /** The property at fault, when one is. */
  readonly property: string | undefined;

  constructor(
    message: string,
    options: { rule: TableActionRule; actionIndex?: number | undefined; property?: string | undefined },
  ) {
    super(message, { code: "InvalidTableAction" });
    this.name = "TableActionError";
    this.rule = options.rule;
    this.actionIndex = options.actionIndex;
    this.property = options.property;
  }
}

/**
 * True when `error` is a {@link TableActionError}.
 *
 * @example
 * ```ts
 * import { writeBatch, isTableActionError } from "azure-storage-concurrency/tables";
 *
 * const error = await writeBatch(table, [["upsert", { partitionKey: "p", rowKey: "r", tags: ["a"] }]]).catch((e) => e);
 * if (isTableActionError(error)) console.log(error.rule, error.property); // "unsupported-value" "tags"
 * ```
 *
 * @deprecated Use `isStorageConcurrencyError(error, "InvalidTableAction")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isTableActionError(error: unknown): error is TableActionError {
  return isStorageConcurrencyError(error) && error.name === "TableActionError";
}

/**
 * Why writes that must commit together cannot:
 * - `empty`: there is nothing to commit;
 * - `multiple-partitions`: an entity group transaction covers one PartitionKey only;
 * - `too-many-operations`: over 100 operations;
 * - `payload-too-large`: the request body would be over 4 MiB;
 * - `duplicate-entity`: an entity may appear only once in a transaction.
 */
export type TransactionRefusalReason =
  "empty" | "multiple-partitions" | "too-many-operations" | "payload-too-large" | "duplicate-entity";

/**
 * Writes that must commit together cannot be one entity group transaction, so nothing was sent
 * (instead of silently splitting them into several transactions that could half succeed).
 */
export class TransactionRefusedError extends StorageConcurrencyError {
  /** Which limit the writes broke. */
  readonly reason: TransactionRefusalReason;
  /** How many operations were asked for. */
  readonly operationCount: number;
  /** The distinct PartitionKeys among them (at most the first 10). */
  readonly partitionKeys: readonly string[];
  /** The estimated size of the request body, in bytes. */
  readonly estimatedBytes: number | undefined;

  constructor(
    message: string,
    options: {
      reason: TransactionRefusalReason;
      operationCount: number;
      partitionKeys: readonly string[];
      estimatedBytes?: number | undefined;
    },
  ) {
    super(message, { code: "TransactionRefused" });
    this.name = "TransactionRefusedError";
    this.reason = options.reason;
    this.operationCount = options.operationCount;
    this.partitionKeys = options.partitionKeys.slice(0, 10);
    this.estimatedBytes = options.estimatedBytes;
  }
}

/**
 * True when `error` is a {@link TransactionRefusedError}.
 *
 * @example
 * ```ts
 * import { writeAtomic, isTransactionRefusedError } from "azure-storage-concurrency/tables";
 *
 * const error = await writeAtomic(table, [
 *   ["upsert", { partitionKey: "alice", rowKey: "balance", amount: 75 }],
 *   ["upsert", { partitionKey: "bob", rowKey: "balance", amount: 25 }],
 * ]).catch((e) => e);
 * if (isTransactionRefusedError(error)) console.log(error.reason); // "multiple-partitions"; nothing was sent
 * ```
 *
 * @deprecated Use `isStorageConcurrencyError(error, "TransactionRefused")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isTransactionRefusedError(error: unknown): error is TransactionRefusedError {
  return isStorageConcurrencyError(error) && error.name === "TransactionRefusedError";
}

/**
 * The service refused an entity group transaction (nothing in it was applied), or its outcome
 * could not be decided (`mayHaveBeenApplied`). `failedActionIndex` says which action the service
 * blamed, as a position in the caller's list.
 * A {@link StorageRequestError}, so `transient`, `attempts` and `requestId` are there and
 * `classifyError` reads it.
 */
export class TableTransactionError extends StorageRequestError {
  /** The PartitionKey of the transaction. */
  readonly partitionKey: string;
  /** The position, in the caller's list, of the action the service blamed; undefined when it did not say. */
  readonly failedActionIndex: number | undefined;
  /** The positions, in the caller's list, of every action of the transaction. */
  readonly actionIndexes: readonly number[];
  /**
   * True when the transaction may have committed after all and reading it back could not tell:
   * the connection failed (or a 500/502/504 came back) on the last try and a copy may still be on
   * its way, the read-back failed, another writer changed its entity since, or the call was
   * cancelled; the message says which (docs/table-design.md, "Lost answers"). False: nothing in it
   * was applied. A transaction whose answer was lost but that reading back finds applied is not an
   * error at all: it is reported as committed.
   */
  readonly mayHaveBeenApplied: boolean;

  constructor(
    message: string,
    options: StorageConcurrencyErrorOptions & {
      transient: boolean;
      requestId?: string | undefined;
      attempts?: number;
      partitionKey: string;
      failedActionIndex: number | undefined;
      actionIndexes: readonly number[];
      mayHaveBeenApplied: boolean;
    },
  ) {
    super(message, options);
    this.name = "TableTransactionError";
    this.partitionKey = options.partitionKey;
    this.failedActionIndex = options.failedActionIndex;
    this.actionIndexes = options.actionIndexes;
    this.mayHaveBeenApplied = options.mayHaveBeenApplied;
  }
}

/**
 * True when `error` is a {@link TableTransactionError}.
 *
 * @example
 * ```ts
 * import { writeAtomic, isTableTransactionError } from "azure-storage-concurrency/tables";
 *
 * const error = await writeAtomic(table, [
 *   ["create", { partitionKey: "order-7", rowKey: "header", status: "new" }], // 409 if it exists already
 *   ["create", { partitionKey: "order-7", rowKey: "line-1", sku: "A-100" }],
 * ]).catch((e) => e);
 * if (isTableTransactionError(error)) console.log(error.statusCode, error.serviceCode, error.failedActionIndex);
 * ```
 *
 * @deprecated Use `isStorageConcurrencyError(error, "TransactionFailed")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isTableTransactionError(error: unknown): error is TableTransactionError {
  return isStorageConcurrencyError(error) && error.name === "TableTransactionError";
}

/**
 * Why a multi-index write did not happen:
 * - `changed`: another writer changed or deleted the record since it was read (an ETag no longer matches);
 * - `exists`: a row the write needs is held by another live record (create, or a key change).
 */
export type MultiIndexConflictReason = "changed" | "exists";

/** A multi-index record changed under the caller, or one of its keys is taken. Nothing was written. */
export class MultiIndexConflictError extends StorageConcurrencyError {
  /** What happened. */
  readonly reason: MultiIndexConflictReason;
  /** The PartitionKey of the record. */
  readonly partitionKey: string;
  /** The RowKey the service blamed, when known. */
  readonly rowKey: string | undefined;

  constructor(
    message: string,
    options: { reason: MultiIndexConflictReason; partitionKey: string; rowKey?: string | undefined; cause?: unknown },
  ) {
    super(message, {
      code: "MultiIndexConflict",
      cause: options.cause,
      statusCode: isStorageConcurrencyError(options.cause) ? options.cause.statusCode : undefined,
      serviceCode: isStorageConcurrencyError(options.cause) ? options.cause.serviceCode : undefined,
    });
    this.name = "MultiIndexConflictError";
    this.reason = options.reason;
    this.partitionKey = options.partitionKey;
    this.rowKey = options.rowKey;
  }
}

/**
 * True when `error` is a {@link MultiIndexConflictError}.
 *
 * @example
 * ```ts
 * import { multiIndexTable, isMultiIndexConflictError } from "azure-storage-concurrency/tables";
 *
 * const runners = multiIndexTable<{ race: string; bib: string; age: number }>(table, {
 *   partitionKey: (r) => r.race,
 *   indexes: { BIB: (r) => r.bib, AGE: (r) => `${r.age}__${r.bib}` },
 * });
 * const snapshot = await runners.get("NYC 2011", "BIB", "01234");
 * const error = snapshot && (await runners.update(snapshot, { ...snapshot.record, age: 56 }).catch((e) => e));
 * if (isMultiIndexConflictError(error) && error.reason === "changed") {
 *   // read again, reapply the change, write again (runners.modify() does this loop)
 * }
 * ```
 *
 * @deprecated Use `isStorageConcurrencyError(error, "MultiIndexConflict")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isMultiIndexConflictError(error: unknown): error is MultiIndexConflictError {
  return isStorageConcurrencyError(error) && error.name === "MultiIndexConflictError";
}
