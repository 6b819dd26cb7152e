/**
 * Errors of the optimistic-update loops. Each extends {@link StorageConcurrencyError} and has an
 * `is…Error` guard that checks the brand and the `name` (not `instanceof`, so two copies of the
 * package agree).
 */
import { isStorageConcurrencyError, serviceCodeOf, statusOf, StorageConcurrencyError } from "../errors.js";

/**
 * Every attempt of an optimistic update met a newer version written by someone else (412, or 409
 * when creating), and the attempt budget ran out. Nothing of this update was written.
 *
 * Raise `maxAttempts`, spread the writers over more cells, or let updates of one process coalesce
 * (the default) so that fewer writers race.
 */
export class OptimisticConflictError extends StorageConcurrencyError {
  /** How many read-modify-write rounds were tried. */
  readonly attempts: number;
  /** The cell, as in messages: `blob 'counters/visits.json'`. */
  readonly cell: string;

  constructor(cell: string, attempts: number, cause: unknown) {
    super(
      `Could not update ${cell}: another writer changed it first on each of ${attempts} attempts, ` +
        "so nothing was written. Allow more attempts (`maxAttempts`) or reduce the number of writers racing on one cell.",
      { code: "OptimisticConflict", statusCode: 412, serviceCode: serviceCodeOf(cause), cause },
    );
    this.name = "OptimisticConflictError";
    this.attempts = attempts;
    this.cell = cell;
  }
}

/**
 * True when `error` is an {@link OptimisticConflictError}.
 *
 * @example
 * ```ts
 * import { blobJsonCell, isOptimisticConflictError, optimisticUpdate } from "azure-storage-concurrency/optimistic";
 *
 * const counter = blobJsonCell<number>(container.getBlockBlobClient("counters/visits.json"));
 * try {
 *   await optimisticUpdate(counter, (n) => (n ?? 0) + 1, { maxAttempts: 3 });
 * } catch (error) {
 *   if (isOptimisticConflictError(error)) console.log(`too busy after ${error.attempts} attempts`);
 *   else throw error;
 * }
 * ```
 *
 * @deprecated Use `isStorageConcurrencyError(error, "OptimisticConflict")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isOptimisticConflictError(error: unknown): error is OptimisticConflictError {
  return isStorageConcurrencyError(error) && error.name === "OptimisticConflictError";
}

/**
 * A write failed without a usable answer (the connection dropped, a client-side time limit, a 500,
 * 502 or 504) and no read could settle whether the service applied it: reading the cell back failed
 * too; the write history it was built on was replaced since (a writer outside this library that
 * does not keep it, a last-writer-wins write, a delete); more than 32 other writers wrote since; or
 * the cell stayed unchanged while sending the same write again got no settling answer either.
 *
 * The update may or may not be in the cell. Read the cell before deciding what to do; blindly
 * running the same update again could apply it twice.
 */
export class OptimisticOutcomeUnknownError extends StorageConcurrencyError {
  /** The cell, as in messages. */
  readonly cell: string;
  /** The error that made the write's outcome uncertain. */
  readonly writeError: unknown;

  constructor(cell: string, reason: string, writeError: unknown, cause: unknown = writeError) {
    super(
      `The write to ${cell} may or may not have been applied: ${reason}. ` +
        "Read the cell to find out before you update it again.",
      { code: "OptimisticOutcomeUnknown", statusCode: statusOf(writeError), cause },
    );
    this.name = "OptimisticOutcomeUnknownError";
    this.cell = cell;
    this.writeError = writeError;
  }
}

/**
 * True when `error` is an {@link OptimisticOutcomeUnknownError}.
 *
 * @example
 * ```ts
 * import { isOptimisticOutcomeUnknownError, optimisticUpdate, readCell, tableEntityCell } from "azure-storage-concurrency/optimistic";
 *
 * const order = tableEntityCell<{ status: string; total: number }>(table, "orders", "1001");
 * try {
 *   await optimisticUpdate(order, (o) => ({ ...o!, status: "paid" }));
 * } catch (error) {
 *   if (!isOptimisticOutcomeUnknownError(error)) throw error;
 *   const now = await readCell(order); // decide from what is stored
 *   console.log(now.exists && now.value.status);
 * }
 * ```
 *
 * @deprecated Use `isStorageConcurrencyError(error, "OptimisticOutcomeUnknown")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isOptimisticOutcomeUnknownError(error: unknown): error is OptimisticOutcomeUnknownError {
  return isStorageConcurrencyError(error) && error.name === "OptimisticOutcomeUnknownError";
}

/**
 * What a cell holds cannot be read as the cell's type: a JSON blob that does not parse, or a text
 * blob that is not valid UTF-8. Nothing was written; the stored content is untouched.
 */
export class CellContentError extends StorageConcurrencyError {
  /** The cell, as in messages: `blob 'settings/app.json'`. */
  readonly cell: string;

  constructor(cell: string, code: "InvalidJson" | "InvalidText", detail: string, cause?: unknown) {
    super(
      `${cell} does not hold ${code === "InvalidJson" ? "valid JSON" : "valid UTF-8 text"} (${detail}), so it was left untouched. ` +
        "Fix or replace its content (for example with writeLastWriterWins) before updating it.",
      { code, cause },
    );
    this.name = "CellContentError";
    this.cell = cell;
  }
}

/**
 * True when `error` is a {@link CellContentError}.
 *
 * @example
 * ```ts
 * import { blobJsonCell, isCellContentError, optimisticUpdate } from "azure-storage-concurrency/optimistic";
 *
 * const settings = blobJsonCell<{ theme?: string }>(container.getBlockBlobClient("settings/app.json"));
 * await optimisticUpdate(settings, (s) => ({ ...s, theme: "dark" })).catch((error: unknown) => {
 *   if (isCellContentError(error)) console.log(`${error.cell} is damaged: ${error.code}`);
 *   else throw error;
 * });
 * ```
 *
 * @deprecated Use `isStorageConcurrencyError(error, "InvalidJson") || isStorageConcurrencyError(error, "InvalidText")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isCellContentError(error: unknown): error is CellContentError {
  return isStorageConcurrencyError(error) && error.name === "CellContentError";
}

/**
 * A table entity that the service would refuse: larger than 1 MiB by the service's size rule, a
 * property value over 64 KiB, or too many properties. Refused before any request.
 */
export class TableEntityTooLargeError extends StorageConcurrencyError {
  /** The estimated size, or the offending property's size, in bytes. */
  readonly sizeInBytes: number;
  /** The limit that was exceeded, in bytes (or in properties, for `TooManyProperties`). */
  readonly limit: number;

  constructor(
    message: string,
    code: "EntityTooLarge" | "PropertyValueTooLarge" | "TooManyProperties",
    sizeInBytes: number,
    limit: number,
  ) {
    super(message, { code });
    this.name = "TableEntityTooLargeError";
    this.sizeInBytes = sizeInBytes;
    this.limit = limit;
  }
}

/**
 * True when `error` is a {@link TableEntityTooLargeError}.
 *
 * @example
 * ```ts
 * import { isTableEntityTooLargeError, optimisticUpdate, tableEntityCell } from "azure-storage-concurrency/optimistic";
 *
 * declare const longText: string;
 * const entity = tableEntityCell<{ notes?: string }>(table, "customers", "42");
 * await optimisticUpdate(entity, (e) => ({ ...e, notes: longText })).catch((error: unknown) => {
 *   if (isTableEntityTooLargeError(error)) console.log(`${error.sizeInBytes} bytes > ${error.limit}: store it in a blob`);
 *   else throw error;
 * });
 * ```
 *
 * @deprecated Use `isStorageConcurrencyError(error, "EntityTooLarge") || isStorageConcurrencyError(error, "PropertyValueTooLarge") || isStorageConcurrencyError(error, "TooManyProperties")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isTableEntityTooLargeError(error: unknown): error is TableEntityTooLargeError {
  return isStorageConcurrencyError(error) && error.name === "TableEntityTooLargeError";
}
