/**
 * The optimistic-concurrency engine's public calls: {@link optimisticUpdate} (read, modify, write
 * with `If-Match`, over any {@link VersionedCell}), {@link readCell}, {@link writeIfMatch} and
 * {@link writeLastWriterWins}. They check their arguments and hand over to the parts that read top
 * to bottom:
 * - `participant.ts`: one call waiting for its outcome;
 * - `coalescing.ts`: who shares a round;
 * - `round.ts`: one read-modify-write round, and its retries after conflicts, over the cell's state
 *   (`process-state.ts`: its turns, cached version and coalescing queue);
 * - `mutations.ts`: the callers' mutations over one version;
 * - `write-outcome.ts`: the verdict on a write whose outcome was ambiguous;
 * - `write-log.ts`: the write history each value carries, and its contract.
 */
import { loadOpenTelemetry, openTelemetryLoaded } from "../observability/otel.js";
import { checkTracingOptions, type OperationTracingOptions } from "../observability/scope.js";
import { finishUpdate, startUpdate } from "./telemetry.js";
import {
  checkNumber,
  checkOptionalFunction,
  checkOptionalInstance,
  checkOptionalSignal,
} from "../internal/validate.js";
import { backoffPresets } from "../retry/index.js";
import { wrapStorageError } from "../retry/index.js";
import { NOT_MODIFIED, type VersionedCell } from "./cell.js";
import { enqueue, openRound } from "./coalescing.js";
import { join, type Settings } from "./participant.js";
import { acquireSlot, cellState, forgetVersion, releaseSlot, rememberVersion } from "./process-state.js";
import { SKIP_WRITE, type Mutation, type OptimisticUpdateOptions, type OptimisticUpdateResult } from "./types.js";
import { writeAndSettle } from "./write-outcome.js";
import { throttledCell } from "./throttled-cell.js";
import { boundedCell, checkRequestTimeout } from "./bounded-cell.js";
import { formatWriteLog, newWriteId, nextWriteLog, parseWriteLog } from "./write-log.js";

/**
 * The default of `maxAttempts`: room for a writer to wait out several other processes' turns on a
 * contended cell (`turns.ts`), where rounds come every few request times.
 */
const DEFAULT_MAX_ATTEMPTS = 50;

/** The default of `recoveryTimeoutInMs`. */
const RECOVERY_TIMEOUT_IN_MS = 30_000;

/**
 * Read, modify, write with `If-Match`, until the write lands on the version it was computed from.
 *
 * - Absent cells are created with `If-None-Match: *`; a 409 means another writer created it first,
 *   and `mutate` runs again on what they wrote.
 * - A write whose response was lost (or answered 500/502/504) is recognised as applied, by the
 *   write id it stored with the value: never applied twice, never reported as failed. When the cell
 *   shows it has not landed so far, the same write is sent again (its `If-Match` lets only one land).
 * - Transient failures are left to the SDK client's own retries; when they outlast them, the update
 *   rejects with a `StorageRequestError`, and nothing was written. Only when no read can tell
 *   (see `docs/optimistic-concurrency.md`) does it reject with {@link OptimisticOutcomeUnknownError}.
 * - A `mutate` that throws writes nothing and rejects with its error; other callers sharing the
 *   round are not affected.
 *
 * @example
 * ```ts
 * import { BlobServiceClient } from "@azure/storage-blob";
 * import { blobJsonCell, optimisticUpdate, SKIP_WRITE } from "azure-storage-concurrency/optimistic";
 *
 * const blobs = BlobServiceClient.fromConnectionString(process.env.AZURE_STORAGE_CONNECTION_STRING!);
 * const page = blobJsonCell<{ title: string; body: string; revision: number }>(
 *   blobs.getContainerClient("wiki").getBlockBlobClient("home.json"),
 * );
 * const { value, etag } = await optimisticUpdate(page, (current) => {
 *   if (current?.body === "Hello") return SKIP_WRITE; // nothing to change
 *   return { title: "Home", body: "Hello", revision: (current?.revision ?? 0) + 1 };
 * });
 * ```
 */
export async function optimisticUpdate<T>(
  cell: VersionedCell<T>,
  mutate: Mutation<T>,
  options: OptimisticUpdateOptions = {},
): Promise<OptimisticUpdateResult<T>> {
  checkCell(cell);
  if (typeof mutate !== "function") throw new TypeError("`mutate` must be a function: (current) => the new value.");
  if (!openTelemetryLoaded()) await loadOpenTelemetry();
  const requestTimeoutInMs = checkRequestTimeout(options.requestTimeoutInMs);
  const settings = checkOptions(options, cell);
  const { participant, promise } = join(mutate, settings);
  const sent = throttledCell(boundedCell(cell, requestTimeoutInMs), options.rateLimiter);
  const state = cellState(cell.key);
  if (settings.coalesce) enqueue(state, sent, participant);
  else void openRound(state, sent, [participant]);
  return finishUpdate(settings.observation, promise);
}

/** Options for {@link readCell}. */
export interface ReadCellOptions {
  /** Cancels the read. */
  readonly abortSignal?: AbortSignal;
  /**
   * The ETag of the copy the caller holds: when the cell still has it, the answer is
   * `{ changed: false }` and (where the service supports `If-None-Match`) no content is transferred.
   */
  readonly ifNoneMatch?: string;
  /**
   * Client-side time limit on the read (the SDK's own retries included): a read whose answer does
   * not come within it fails with a transient `StorageRequestError` (code `RequestTimedOut`).
   * @default 30_000
   */
  readonly requestTimeoutInMs?: number;
}

/** What {@link readCell} answers without `ifNoneMatch`: the cell's value and ETag, or that it does not exist. */
export type CellSnapshot<T> =
  | {
      /** The cell does not exist. */
      readonly exists: false;
      /** Always `true` without `ifNoneMatch`. */
      readonly changed: true;
    }
  | {
      /** The cell exists. */
      readonly exists: true;
      /** Always `true` without `ifNoneMatch`. */
      readonly changed: true;
      /** The cell's value: a fresh copy, yours to change. */
      readonly value: T;
      /** The ETag of the version read; pass it to {@link writeIfMatch} or as `ifNoneMatch`. */
      readonly etag: string;
    };

/** What {@link readCell} answers with `ifNoneMatch`: also `{ changed: false }` when the caller's copy is current. */
export type ReadCellResult<T> =
  | CellSnapshot<T>
  | {
      /** The cell exists. */
      readonly exists: true;
      /** The cell still has the ETag given as `ifNoneMatch`: the caller's copy is current. */
      readonly changed: false;
      /** The cell's ETag, the one given as `ifNoneMatch`. */
      readonly etag: string;
    };

/**
 * Reads a cell: its value and ETag, or `{ exists: false }`. With `ifNoneMatch`, tells the caller
 * whether the copy they hold is still current (`{ changed: false }`) without sending it again.
 *
 * @example
 * ```ts
 * import { blobJsonCell, readCell } from "azure-storage-concurrency/optimistic";
 *
 * const page = blobJsonCell<{ body: string }>(container.getBlockBlobClient("wiki/home.json"));
 * const first = await readCell(page);
 * if (first.exists) {
 *   const again = await readCell(page, { ifNoneMatch: first.etag });
 *   if (!again.changed) console.log("the copy on screen is current");
 * }
 * ```
 */
export function readCell<T>(
  cell: VersionedCell<T>,
  options?: ReadCellOptions & { readonly ifNoneMatch?: undefined },
): Promise<CellSnapshot<T>>;
export function readCell<T>(cell: VersionedCell<T>, options: ReadCellOptions): Promise<ReadCellResult<T>>;
export async function readCell<T>(cell: VersionedCell<T>, options: ReadCellOptions = {}): Promise<ReadCellResult<T>> {
  checkCell(cell);
  checkOptionalSignal("abortSignal", options.abortSignal);
  if (options.ifNoneMatch !== undefined && (typeof options.ifNoneMatch !== "string" || !options.ifNoneMatch)) {
    throw new TypeError("`ifNoneMatch` must be a non-empty ETag string.");
  }
  const bounded = boundedCell(cell, checkRequestTimeout(options.requestTimeoutInMs));
  const read = await readOrThrow(bounded, options.abortSignal, options.ifNoneMatch);
  if (read === NOT_MODIFIED) return { exists: true, changed: false, etag: options.ifNoneMatch! };
  if (!read) return { exists: false, changed: true };
  if (read.etag === options.ifNoneMatch) return { exists: true, changed: false, etag: read.etag };
  return { exists: true, changed: true, value: cell.decode(read.content), etag: read.etag };
}

/** Options for {@link writeIfMatch}. */
export interface WriteIfMatchOptions {
  /** Cancels the write. A write already sent may still be applied. */
  readonly abortSignal?: AbortSignal;
  /**
   * As the Azure SDK's operations take them: `tracingContext` is the parent of the write's span
   * (`asc.optimistic.update`), and so of the SDK's spans under it. Default: the active context.
   */
  readonly tracingOptions?: OperationTracingOptions;
  /**
   * Client-side time limit on each request made to settle a write whose outcome was ambiguous.
   * @default 30_000
   */
  readonly recoveryTimeoutInMs?: number;
  /**
   * Client-side time limit on each request (the read, the write, and those that settle it); a
   * write cut off by it is settled as a lost answer, never reported as refused.
   * @default 30_000
   */
  readonly requestTimeoutInMs?: number;
}

/**
 * Writes `value` only if the cell still has the ETag the caller read (`If-Match`), without retrying:
 * the source documents' wiki-page case, where a person edited a copy and must not overwrite someone
 * else's save. Resolves `{ written: true, etag }` when the write landed, or `{ written: false }` with
 * the cell's current value and ETag when it changed since (show it to the person, let them decide).
 *
 * It reads once before writing, so that a write whose response is lost is still recognised as
 * applied (by the write id it stores), as in {@link optimisticUpdate}.
 *
 * @example
 * ```ts
 * import { blobJsonCell, readCell, writeIfMatch } from "azure-storage-concurrency/optimistic";
 *
 * const page = blobJsonCell<{ body: string }>(container.getBlockBlobClient("wiki/home.json"));
 * const shown = await readCell(page); // rendered in the editor together with shown.etag
 * if (shown.exists) {
 *   const saved = await writeIfMatch(page, shown.etag, { body: "edited text" });
 *   if (!saved.written) console.log("Someone saved first; their version:", saved.value);
 * }
 * ```
 */
export async function writeIfMatch<T>(
  cell: VersionedCell<T>,
  etag: string,
  value: T,
  options: WriteIfMatchOptions = {},
): Promise<OptimisticUpdateResult<T>> {
  if (typeof etag !== "string" || !etag) throw new TypeError("`etag` must be the non-empty ETag the caller read.");
  checkCell(cell);
  cell.encode(value); // refuse a bad value before any request
  return optimisticUpdate(cell, (_current, context) => (context.etag === etag ? value : SKIP_WRITE), {
    abortSignal: options.abortSignal,
    recoveryTimeoutInMs: options.recoveryTimeoutInMs,
    tracingOptions: options.tracingOptions,
    requestTimeoutInMs: options.requestTimeoutInMs,
    coalesce: false,
    skipReadAfterOwnWrite: false,
    maxAttempts: 2, // a second round only to find out what changed after a 412
  });
}

/** Options for {@link writeLastWriterWins}. */
export interface WriteLastWriterWinsOptions {
  /** Cancels the write. A write already sent may still be applied. */
  readonly abortSignal?: AbortSignal;
  /**
   * Send `If-Match: *`: replace the cell only if it exists (a 404/412 otherwise). By default the
   * cell is created when absent.
   * @default false
   */
  readonly mustExist?: boolean;
  /**
   * Client-side time limit on each request made to settle a write whose outcome was ambiguous.
   * @default 30_000
   */
  readonly recoveryTimeoutInMs?: number;
  /**
   * Client-side time limit on each request (the read, the write, and those that settle it); a
   * write cut off by it is settled as a lost answer, never reported as refused.
   * @default 30_000
   */
  readonly requestTimeoutInMs?: number;
}

/**
 * Last writer wins: writes `value` without checking what is stored, replacing any change made
 * since you read. The source documents' third strategy, for data only one writer owns or that is
 * short-lived; named so that the choice is visible where it is made.
 *
 * A write whose response is lost (or answered 500/502/504) is not reported as failed when it was
 * applied: the cell is read back and the write recognised by its id; when it is not there, it is
 * sent again (for a blind write, landing twice stores the same value). It rejects with
 * {@link OptimisticOutcomeUnknownError} only when that too cannot settle it.
 *
 * @example
 * ```ts
 * import { blobJsonCell, writeLastWriterWins } from "azure-storage-concurrency/optimistic";
 *
 * // The nightly job owns this document: nobody else writes it, so no ETag check is needed.
 * const report = blobJsonCell(container.getBlockBlobClient("reports/latest.json"));
 * const { etag } = await writeLastWriterWins(report, { generatedAt: new Date().toISOString() });
 * ```
 */
export async function writeLastWriterWins<T>(
  given: VersionedCell<T>,
  value: T,
  options: WriteLastWriterWinsOptions = {},
): Promise<{
  /** The ETag of the version written. */
  readonly etag: string;
}> {
  checkCell(given);
  checkOptionalSignal("abortSignal", options.abortSignal);
  const recoveryTimeoutInMs = checkRecoveryTimeout(options.recoveryTimeoutInMs);
  const cell = boundedCell(given, checkRequestTimeout(options.requestTimeoutInMs));
  const mustExist = options.mustExist === true;
  const content = cell.encode(value);
  const state = cellState(cell.key);
  const slot = acquireSlot();
  try {
    const written = nextWriteLog(undefined, { slot: slot.slot, id: newWriteId() }, { lastWriterWins: true });
    const log = formatWriteLog(written);
    forgetVersion(state);
    const outcome = await writeAndSettle(
      cell,
      {
        content,
        condition: { lastWriterWins: true, mustExist },
        log,
        base: undefined,
        // A blind write starts a history of its own: it is there when the cell is on that history.
        // Otherwise send it again (landing twice stores the same value), unless it must replace an
        // existing cell and there is none.
        judge: (now) =>
          parseWriteLog(now?.log)?.chain === written.chain
            ? "applied"
            : !now && mustExist
              ? "not-applied"
              : "unchanged",
      },
      { abortSignal: options.abortSignal, recoveryTimeoutInMs, backoff: backoffPresets.contention },
    );
    if (outcome.kind === "refused") {
      throw wrapStorageError(outcome.error, `write ${cell.description} (last writer wins; nothing was written)`);
    }
    if (outcome.kind === "recognised") {
      const { now } = outcome;
      if (parseWriteLog(now.log)?.seq === 1) rememberVersion(state, now, cell.sizeInBytes?.(now.content));
      return { etag: now.etag };
    }
    // A cell that merges writes (a table entity in Merge mode) holds more than `value` now: only a
    // read tells what, so nothing is cached.
    if (!cell.mergeWrite) rememberVersion(state, { content, etag: outcome.etag, log }, cell.sizeInBytes?.(content));
    return { etag: outcome.etag };
  } finally {
    releaseSlot(slot);
  }
}

/** Checks the options of {@link optimisticUpdate}, and opens its span. */
function checkOptions<T>(options: OptimisticUpdateOptions, cell: VersionedCell<T>): Settings {
  checkOptionalSignal("abortSignal", options.abortSignal);
  checkOptionalFunction("onConflict", options.onConflict);
  checkOptionalInstance("rateLimiter", options.rateLimiter, "run", "an AdaptiveRateLimiter");
  const backoff = options.backoff ?? backoffPresets.contention;
  if (typeof backoff?.delayInMs !== "function") {
    throw new TypeError("`backoff` must be a BackoffStrategy, such as `backoffPresets.contention`.");
  }
  for (const name of ["skipReadAfterOwnWrite", "coalesce"] as const) {
    if (options[name] !== undefined && typeof options[name] !== "boolean") {
      throw new TypeError(`\`${name}\` must be a boolean, got ${typeof options[name]}.`);
    }
  }
  const maxAttempts = checkNumber("maxAttempts", options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS, {
    min: 1,
    integer: true,
  });
  const recoveryTimeoutInMs = checkRecoveryTimeout(options.recoveryTimeoutInMs);
  const tracingContext = checkTracingOptions(options.tracingOptions);
  options.abortSignal?.throwIfAborted();
  return {
    abortSignal: options.abortSignal,
    maxAttempts,
    backoff,
    skipReadAfterOwnWrite: options.skipReadAfterOwnWrite ?? true,
    coalesce: options.coalesce ?? true,
    onConflict: options.onConflict,
    recoveryTimeoutInMs,
    observation: startUpdate(cell, tracingContext), // last: once nothing can throw before the update is under way
  };
}

function checkRecoveryTimeout(value: number | undefined): number {
  return checkNumber("recoveryTimeoutInMs", value ?? RECOVERY_TIMEOUT_IN_MS, { min: 1 });
}

async function readOrThrow<T>(cell: VersionedCell<T>, abortSignal: AbortSignal | undefined, ifNoneMatch?: string) {
  try {
    return await cell.read({ abortSignal, ifNoneMatch });
  } catch (error) {
    throw wrapStorageError(error, `read ${cell.description}`);
  }
}

function checkCell(cell: unknown): void {
  const c = cell as Partial<VersionedCell<unknown>> | null;
  if (
    typeof c !== "object" ||
    c === null ||
    typeof c.key !== "string" ||
    typeof c.read !== "function" ||
    typeof c.write !== "function" ||
    typeof c.decode !== "function" ||
    typeof c.encode !== "function"
  ) {
    throw new TypeError(
      "`cell` must be a VersionedCell, such as `blobJsonCell(blockBlobClient)` or `tableEntityCell(tableClient, pk, rk)`.",
    );
  }
}
