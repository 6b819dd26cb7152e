/**
 * The optimistic-concurrency engine: read, modify, write with `If-Match`, over any
 * {@link VersionedCell}.
 *
 * One round: read the cell (or start from the version this process wrote last), run every waiting
 * caller's `mutate` in call order, write the result with `If-Match` (or `If-None-Match: *` when the
 * cell is absent). On 412/409 someone else wrote first: wait (jittered backoff), read again, and run
 * the mutations again on the new value, up to `maxAttempts` times.
 *
 * Transient failures (503, resets) are the SDK pipeline's job, as everywhere in this library. What
 * the engine adds is the one thing the SDK cannot know: after a write fails ambiguously (no
 * response, or a 412/409 that may answer the SDK's own retry of a write that was applied), it reads
 * the cell back and asks the write history (`write-log.ts`) whether the write was its own.
 */
import { serviceCodeOf, statusOf } from "../errors.js";
import { logger } from "../internal/logger.js";
import { sleep } from "../internal/sleep.js";
import { checkNumber, checkOptionalFunction, checkOptionalSignal } from "../internal/validate.js";
import { backoffPresets, type BackoffStrategy } from "../retry/backoff.js";
import { classifyError, wrapStorageError } from "../retry/classify.js";
import { NOT_MODIFIED, WriteNotSent, type CellVersion, type VersionedCell } from "./cell.js";
import { OptimisticConflictError, OptimisticOutcomeUnknownError } from "./errors.js";
import { acquireSlot, cachedVersion, forgetVersion, releaseSlot, rememberVersion } from "./process-state.js";
import { formatWriteLog, judgeWrite, newWriteId, nextWriteLog, parseWriteLog, type WriteLog } from "./write-log.js";

/**
 * Return this from `mutate` to leave the cell as it is (the update resolves with `written: false`).
 *
 * @example
 * ```ts
 * import { blobJsonCell, optimisticUpdate, SKIP_WRITE } from "azure-storage-concurrency";
 *
 * declare const email: string;
 * const profile = blobJsonCell<{ email: string; displayName?: string }>(container.getBlockBlobClient("profiles/42.json"));
 * await optimisticUpdate(profile, (current) => (current?.email === email ? SKIP_WRITE : { ...current, email }));
 * ```
 */
export const SKIP_WRITE: unique symbol = Symbol.for("azure-storage-concurrency.skip-write");

/** What `mutate` is told besides the current value. */
export interface MutationContext {
  /** The round's attempt, 1 for the first; `mutate` runs again on each attempt. */
  readonly attempt: number;
  /** The ETag of the stored version the attempt started from; `undefined` when the cell is absent. */
  readonly etag: string | undefined;
  /** The caller's `abortSignal` (one that never aborts when the caller gave none), for any call `mutate` makes. */
  readonly abortSignal: AbortSignal;
}

/**
 * Computes the new value from the current one (`undefined` when the cell does not exist). It may
 * run several times (once per attempt), so it must not have side effects beyond its result. Return
 * {@link SKIP_WRITE} to write nothing. Returning `undefined` is refused (a forgotten `return`).
 */
export type Mutation<T> = (
  current: T | undefined,
  context: MutationContext,
) => T | typeof SKIP_WRITE | PromiseLike<T | typeof SKIP_WRITE>;

/** Told before the engine waits and tries again after a conflict. */
export interface OptimisticConflictEvent {
  /** The cell, in words. */
  readonly cell: string;
  /** The attempt that met the conflict (1 for the first). */
  readonly attempt: number;
  /** How long the engine waits before reading again. */
  readonly delayInMs: number;
  /** The service's answer (412, or 409 when creating). */
  readonly error: unknown;
}

/** Options for {@link optimisticUpdate}. */
export interface OptimisticUpdateOptions {
  /** Cancels the update. A write already sent may still be applied. */
  readonly abortSignal?: AbortSignal;
  /**
   * How many read-modify-write rounds to try before giving up with {@link OptimisticConflictError}.
   * @default 20
   */
  readonly maxAttempts?: number;
  /**
   * How long to wait after a conflict before reading again.
   * @default backoffPresets.contention (full jitter, 10 ms up to 1 s)
   */
  readonly backoff?: BackoffStrategy;
  /**
   * When this process made the last successful write to the cell, start from the value and ETag it
   * wrote instead of reading (a 412 then means someone else wrote since: the engine reads and goes on).
   * @default true
   */
  readonly skipReadAfterOwnWrite?: boolean;
  /**
   * Let concurrent updates of the same cell within this process share one read-modify-write round:
   * their mutations run in call order on one value and one write stores them all. Each caller still
   * gets its own outcome. The round runs with the options of the call that opened it.
   * @default true
   */
  readonly coalesce?: boolean;
  /** Called before each wait after a conflict, e.g. to log contention. */
  readonly onConflict?: (event: OptimisticConflictEvent) => void;
}

/**
 * The outcome of {@link optimisticUpdate} (and {@link writeIfMatch}). Narrow it on `written`: after
 * `if (result.written)`, `value` is the value written (`T`, never `undefined`).
 */
export type OptimisticUpdateResult<T> =
  | {
      /** Your `mutate` returned a value, and it was written. */
      readonly written: true;
      /** The value your `mutate` returned, as written. */
      readonly value: T;
      /**
       * The ETag of the stored version that holds your write. When your update shared a round with
       * later ones (see `coalesced`), or a lost response was recovered after others wrote on top,
       * that version also holds their changes: read again before a further `If-Match` write based
       * on `value`.
       */
      readonly etag: string | undefined;
      /** How many read-modify-write rounds were needed (1 without conflicts). */
      readonly attempts: number;
      /** True when a write's response was lost and the engine found, by reading back, that it was applied. */
      readonly recoveredLostResponse: boolean;
      /** How many updates shared the round's write, yours included (1 without coalescing). */
      readonly coalesced: number;
    }
  | {
      /** Your `mutate` returned {@link SKIP_WRITE}: nothing was written for you. */
      readonly written: false;
      /**
       * The value your `mutate` was given when it skipped (`undefined` if the cell does not exist);
       * from {@link writeIfMatch}, the cell's current value.
       */
      readonly value: T | undefined;
      /** The ETag of the stored version you skipped on (`undefined` if the cell does not exist). */
      readonly etag: string | undefined;
      /** How many read-modify-write rounds were needed (1 without conflicts). */
      readonly attempts: number;
      /** True when the round's write (of updates that shared your round) had its response lost and was found applied. */
      readonly recoveredLostResponse: boolean;
      /** How many updates shared the round's write, yours not among them (0 when none wrote). */
      readonly coalesced: number;
    };

/**
 * Read, modify, write with `If-Match`, until the write lands on the version it was computed from.
 *
 * - Absent cells are created with `If-None-Match: *`; a 409 means another writer created it first,
 *   and `mutate` runs again on what they wrote.
 * - A write whose response was lost is recognised as applied (not applied twice, not reported as
 *   failed), by the write id it stored with the value.
 * - Transient failures are left to the SDK client's own retries; when they outlast them, the update
 *   rejects with a `StorageRequestError`, and nothing was written (or, if the engine cannot tell,
 *   with {@link OptimisticOutcomeUnknownError}).
 * - A `mutate` that throws writes nothing and rejects with its error; other callers sharing the
 *   round are not affected.
 *
 * @example
 * ```ts
 * import { BlobServiceClient } from "@azure/storage-blob";
 * import { blobJsonCell, optimisticUpdate, SKIP_WRITE } from "azure-storage-concurrency";
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
  const settings = settle(options);
  settings.abortSignal?.throwIfAborted();
  const { participant, promise } = join(mutate, settings);
  if (settings.coalesce) enqueue(cell, participant);
  else void runRound(cell, [participant]);
  return promise;
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
 * import { blobJsonCell, readCell } from "azure-storage-concurrency";
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
  const read = await readOrThrow(cell, options.abortSignal, options.ifNoneMatch);
  if (read === NOT_MODIFIED) return { exists: true, changed: false, etag: options.ifNoneMatch! };
  if (!read) return { exists: false, changed: true };
  if (read.etag === options.ifNoneMatch) return { exists: true, changed: false, etag: read.etag };
  return { exists: true, changed: true, value: cell.decode(read.content), etag: read.etag };
}

/** Options for {@link writeIfMatch}. */
export interface WriteIfMatchOptions {
  /** Cancels the write. A write already sent may still be applied. */
  readonly abortSignal?: AbortSignal;
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
 * import { blobJsonCell, readCell, writeIfMatch } from "azure-storage-concurrency";
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
}

/**
 * Last writer wins: writes `value` without checking what is stored, replacing any change made
 * since you read. The source documents' third strategy, for data only one writer owns or that is
 * short-lived; named so that the choice is visible where it is made.
 *
 * @example
 * ```ts
 * import { blobJsonCell, writeLastWriterWins } from "azure-storage-concurrency";
 *
 * // The nightly job owns this document: nobody else writes it, so no ETag check is needed.
 * const report = blobJsonCell(container.getBlockBlobClient("reports/latest.json"));
 * const { etag } = await writeLastWriterWins(report, { generatedAt: new Date().toISOString() });
 * ```
 */
export async function writeLastWriterWins<T>(
  cell: VersionedCell<T>,
  value: T,
  options: WriteLastWriterWinsOptions = {},
): Promise<{
  /** The ETag of the version written. */
  readonly etag: string;
}> {
  checkCell(cell);
  checkOptionalSignal("abortSignal", options.abortSignal);
  const content = cell.encode(value);
  const { slot, index } = acquireSlot(cell.key);
  try {
    const log = formatWriteLog(nextWriteLog(undefined, { slot, id: newWriteId() }, { lastWriterWins: true }));
    forgetVersion(cell.key);
    const condition = { lastWriterWins: true as const, mustExist: options.mustExist === true };
    let etag: string;
    try {
      etag = await cell.write(content, { abortSignal: options.abortSignal, condition, log, base: undefined });
    } catch (error) {
      throw wrapStorageError(error, `write ${cell.description} (last writer wins)`);
    }
    rememberVersion(cell.key, { content, etag, log }, cell.sizeInBytes?.(content));
    return { etag };
  } finally {
    releaseSlot(cell.key, index);
  }
}

// ---------------------------------------------------------------------------------------------
// Rounds

interface Settings {
  readonly abortSignal: AbortSignal | undefined;
  readonly maxAttempts: number;
  readonly backoff: BackoffStrategy;
  readonly skipReadAfterOwnWrite: boolean;
  readonly coalesce: boolean;
  readonly onConflict: ((event: OptimisticConflictEvent) => void) | undefined;
}

interface Participant<T> {
  readonly mutate: Mutation<T>;
  readonly abortSignal: AbortSignal | undefined;
  readonly settings: Settings;
  settled: boolean;
  succeed(result: OptimisticUpdateResult<T>): void;
  fail(error: unknown): void;
}

function settle(options: OptimisticUpdateOptions): Settings {
  checkOptionalSignal("abortSignal", options.abortSignal);
  checkOptionalFunction("onConflict", options.onConflict);
  const backoff = options.backoff ?? backoffPresets.contention;
  if (typeof backoff?.delayInMs !== "function") {
    throw new TypeError("`backoff` must be a BackoffStrategy, such as `backoffPresets.contention`.");
  }
  for (const name of ["skipReadAfterOwnWrite", "coalesce"] as const) {
    if (options[name] !== undefined && typeof options[name] !== "boolean") {
      throw new TypeError(`\`${name}\` must be a boolean, got ${typeof options[name]}.`);
    }
  }
  return {
    abortSignal: options.abortSignal,
    maxAttempts: checkNumber("maxAttempts", options.maxAttempts ?? 20, { min: 1, integer: true }),
    backoff,
    skipReadAfterOwnWrite: options.skipReadAfterOwnWrite ?? true,
    coalesce: options.coalesce ?? true,
    onConflict: options.onConflict,
  };
}

function join<T>(mutate: Mutation<T>, settings: Settings) {
  const { abortSignal } = settings;
  let resolve!: (result: OptimisticUpdateResult<T>) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<OptimisticUpdateResult<T>>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  const onAbort = () => participant.fail(abortSignal!.reason);
  const finish = () => {
    participant.settled = true;
    abortSignal?.removeEventListener("abort", onAbort);
  };
  const participant: Participant<T> = {
    mutate,
    abortSignal,
    settings,
    settled: false,
    succeed(result) {
      if (participant.settled) return;
      finish();
      resolve(result);
    },
    fail(error) {
      if (participant.settled) return;
      finish();
      reject(error);
    },
  };
  abortSignal?.addEventListener("abort", onAbort, { once: true });
  return { participant, promise };
}

const queues = new Map<string, { cell: VersionedCell<unknown>; waiting: Participant<unknown>[] }>();

/** Joins the next round for the cell, opening one (on the next microtask, so that calls made together share it). */
function enqueue<T>(cell: VersionedCell<T>, participant: Participant<T>): void {
  const queued = queues.get(cell.key);
  if (queued) {
    queued.waiting.push(participant as Participant<unknown>);
    return;
  }
  queues.set(cell.key, { cell, waiting: [participant as Participant<unknown>] });
  queueMicrotask(() => void drain(cell.key));
}

/** Runs rounds for one cell one after another, each with every update that arrived meanwhile. */
async function drain(key: string): Promise<void> {
  for (;;) {
    const entry = queues.get(key)!;
    if (entry.waiting.length === 0) {
      queues.delete(key);
      return;
    }
    await runRound(entry.cell, entry.waiting.splice(0));
  }
}

/** One round for `participants`, with the options of the first of them. Settles every participant. */
async function runRound<T>(cell: VersionedCell<T>, participants: Participant<T>[]): Promise<void> {
  const { slot, index } = acquireSlot(cell.key);
  const combined = participants.length === 1 ? undefined : allAborted(participants as Participant<unknown>[]);
  const abortSignal = combined ? combined.signal : participants[0]!.abortSignal;
  try {
    await attemptRound(cell, participants, { ...participants[0]!.settings, abortSignal }, slot);
  } catch (error) {
    for (const p of participants) p.fail(error);
  } finally {
    combined?.dispose();
    releaseSlot(cell.key, index);
  }
}

/** One participant's step: what it returned (written), or undefined (skipped: decoded from `content` later). */
type Step<T> = {
  readonly participant: Participant<T>;
  /** Stored content after this step. */
  readonly content: unknown;
} & ({ readonly written: true; readonly value: T } | { readonly written: false; readonly value: undefined });

async function attemptRound<T>(
  cell: VersionedCell<T>,
  participants: readonly Participant<T>[],
  settings: Settings,
  slot: string,
): Promise<void> {
  const { abortSignal } = settings;
  const cached = settings.skipReadAfterOwnWrite ? cachedVersion(cell.key) : undefined;
  let base: CellVersion<unknown> | undefined = cached;
  let unread = cached === undefined;
  let previousDelayInMs = 0;
  for (let attempt = 1; ; attempt++) {
    if (unread) base = await readVersion(cell, abortSignal);
    unread = false;
    const mutated = runMutations(cell, participants, base, attempt);
    const steps = mutated instanceof Promise ? await mutated : mutated;
    if (steps === undefined) return; // every caller failed or was cancelled
    const last = steps.findLast((s) => s.written);
    if (!last) {
      resolveSteps(cell, steps, base?.etag, attempt, false);
      return;
    }

    const writer = { slot, id: newWriteId() };
    const written = nextWriteLog(base, writer);
    const log = formatWriteLog(written);
    const condition = base ? { ifMatch: base.etag } : { ifNoneMatch: "*" as const };
    try {
      const etag = await cell.write(last.content, { abortSignal, condition, log, base });
      const stored = cell.storedAfterWrite ? cell.storedAfterWrite(last.content, base) : last.content;
      const version = { content: stored, etag, log, extras: base?.extras };
      rememberVersion(cell.key, version, cell.sizeInBytes?.(stored));
      resolveSteps(cell, steps, etag, attempt, false);
      return;
    } catch (thrown) {
      forgetVersion(cell.key);
      const notSent = thrown instanceof WriteNotSent;
      const error = notSent ? thrown.cause : thrown;
      if (classifyError(error).kind === "cancelled") throw error;
      const conflict = isWriteConflict(error);
      if (notSent && !conflict) throw wrapStorageError(error, `write ${cell.description} (nothing was written)`);
      if (conflict) {
        const delayInMs = settings.backoff.delayInMs(attempt, previousDelayInMs);
        previousDelayInMs = delayInMs;
        logger.verbose(
          `conflict on ${cell.description} (attempt ${attempt}); reading again in ${Math.round(delayInMs)} ms`,
        );
        settings.onConflict?.({ cell: cell.description, attempt, delayInMs, error });
        await sleep(delayInMs, abortSignal);
      }
      const now = await readBack(cell, error, conflict, abortSignal);
      const verdict = notSent ? "not-applied" : judgeWrite(now, base, writer, written);
      if (verdict === "applied") {
        logger.info(`a write to ${cell.description} whose response was lost had been applied; counted once`);
        if (now && isHeadedBy(now.log, written)) rememberVersion(cell.key, now, cell.sizeInBytes?.(now.content));
        resolveSteps(cell, steps, now!.etag, attempt, true);
        return;
      }
      if (verdict === "unknown") {
        throw new OptimisticOutcomeUnknownError(
          cell.description,
          "its write history no longer reaches back to this write",
          error,
        );
      }
      if (verdict === "unchanged" && !conflict && classifyError(error).kind === "network") {
        throw new OptimisticOutcomeUnknownError(
          cell.description,
          "the connection failed and the cell is unchanged, so the request may still reach the service",
          error,
        );
      }
      if (!conflict) throw wrapStorageError(error, `write ${cell.description} (nothing was written)`);
      if (attempt >= settings.maxAttempts) throw new OptimisticConflictError(cell.description, attempt, error);
      base = now;
    }
  }
}

/** The state of one pass of the mutations over a round's participants. */
interface MutationPass<T> {
  readonly cell: VersionedCell<T>;
  readonly live: readonly Participant<T>[];
  readonly base: CellVersion<unknown> | undefined;
  readonly attempt: number;
  /** Stored content after the last step. */
  content: unknown;
  /** What the next participant is given. */
  current: T | undefined;
  readonly steps: Step<T>[];
}

/**
 * Runs each live participant's mutation in call order; `undefined` when none is left. Synchronous
 * while the mutations are (the common case), and free of per-call closures: this runs between the
 * read and the write of every update, where each microsecond shows.
 */
function runMutations<T>(
  cell: VersionedCell<T>,
  participants: readonly Participant<T>[],
  base: CellVersion<unknown> | undefined,
  attempt: number,
): Step<T>[] | undefined | Promise<Step<T>[] | undefined> {
  const live = participants.filter((p) => !p.settled);
  if (live.length === 0) return undefined;
  // A content error here (say, a JSON blob that does not parse) rejects the whole round: nothing is written.
  const current = base === undefined ? undefined : cell.decode(base.content);
  const pass: MutationPass<T> = { cell, live, base, attempt, content: base?.content, current, steps: [] };
  for (let index = 0; index < live.length; index++) {
    const participant = live[index]!;
    if (participant.settled) continue;
    try {
      const next = participant.mutate(pass.current, mutationContext(pass, participant));
      if (isPromiseLike(next)) return continueMutations(pass, index, next);
      recordStep(pass, participant, next);
    } catch (error) {
      participant.fail(error);
    }
    afterStep(pass);
  }
  return pass.steps.length > 0 ? pass.steps : undefined;
}

/** The rest of {@link runMutations} once a mutation returned a promise. */
async function continueMutations<T>(
  pass: MutationPass<T>,
  from: number,
  pending: PromiseLike<T | typeof SKIP_WRITE>,
): Promise<Step<T>[] | undefined> {
  for (let index = from; index < pass.live.length; index++) {
    const participant = pass.live[index]!;
    if (index !== from && participant.settled) continue;
    try {
      recordStep(
        pass,
        participant,
        await (index === from ? pending : participant.mutate(pass.current, mutationContext(pass, participant))),
      );
    } catch (error) {
      participant.fail(error);
    }
    afterStep(pass);
  }
  return pass.steps.length > 0 ? pass.steps : undefined;
}

function mutationContext<T>(pass: MutationPass<T>, participant: Participant<T>): MutationContext {
  return {
    attempt: pass.attempt,
    etag: pass.base?.etag,
    abortSignal: participant.abortSignal ?? new AbortController().signal,
  };
}

/** Records what a mutation returned; throws (for its participant alone) when the value is refused. */
function recordStep<T>(pass: MutationPass<T>, participant: Participant<T>, next: T | typeof SKIP_WRITE): void {
  if (next === undefined) {
    throw new TypeError(
      `\`mutate\` returned undefined for ${pass.cell.description}: return the new value, or SKIP_WRITE to leave the cell as it is.`,
    );
  }
  if (next === SKIP_WRITE) {
    pass.steps.push({ participant, written: false, value: undefined, content: pass.content });
    return;
  }
  const encoded = pass.cell.encode(next);
  pass.steps.push({ participant, written: true, value: next, content: encoded });
  pass.content = encoded;
}

/** The next caller gets a copy of its own, so nobody's value is changed behind its back. */
function afterStep<T>(pass: MutationPass<T>): void {
  if (pass.live.length > 1) pass.current = pass.content === undefined ? undefined : pass.cell.decode(pass.content);
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === "function";
}

function resolveSteps<T>(
  cell: VersionedCell<T>,
  steps: readonly Step<T>[],
  etag: string | undefined,
  attempts: number,
  recoveredLostResponse: boolean,
): void {
  const coalesced = steps.filter((s) => s.written).length;
  for (const step of steps) {
    const round = { etag, attempts, recoveredLostResponse, coalesced };
    step.participant.succeed(
      step.written
        ? { written: true, value: step.value, ...round }
        : { written: false, value: step.content === undefined ? undefined : cell.decode(step.content), ...round },
    );
  }
}

/** Reads the cell after a failed write; a read failure makes the outcome unknown unless the write clearly failed. */
async function readBack<T>(
  cell: VersionedCell<T>,
  writeError: unknown,
  conflict: boolean,
  abortSignal: AbortSignal | undefined,
): Promise<CellVersion<unknown> | undefined> {
  try {
    return await readVersion(cell, abortSignal);
  } catch (readError) {
    if (classifyError(readError).kind === "cancelled") throw readError;
    const { transient, statusCode, kind } = classifyError(writeError);
    // A definite refusal (403, 404 container not found, ...) was not applied on its last try, and
    // the SDK retries only transient failures; an error that is no storage failure at all (say, the
    // SDK refusing a value) was never sent. Throw either as it is.
    if (kind === "other" || (!conflict && !transient && statusCode !== undefined)) {
      throw wrapStorageError(writeError, `write ${cell.description} (nothing was written)`);
    }
    throw new OptimisticOutcomeUnknownError(
      cell.description,
      "reading it back to check failed too",
      writeError,
      readError,
    );
  }
}

async function readOrThrow<T>(cell: VersionedCell<T>, abortSignal: AbortSignal | undefined, ifNoneMatch?: string) {
  try {
    return await cell.read({ abortSignal, ifNoneMatch });
  } catch (error) {
    throw wrapStorageError(error, `read ${cell.description}`);
  }
}

/** Reads the current version (no `If-None-Match`, so never {@link NOT_MODIFIED}). */
async function readVersion<T>(
  cell: VersionedCell<T>,
  abortSignal: AbortSignal | undefined,
): Promise<CellVersion<unknown> | undefined> {
  let read;
  try {
    read = await cell.read({ abortSignal });
  } catch (error) {
    throw wrapStorageError(error, `read ${cell.description}`);
  }
  return read === NOT_MODIFIED ? undefined : read;
}

/**
 * The answers that mean "someone else wrote first": 412 (ETag no longer matches; not a lease
 * refusal), 409 when creating something that now exists or when another writer holds the lease
 * that serialises writers (container metadata), and
 * 404 when updating something that was deleted meanwhile (not a missing container or table).
 */
function isWriteConflict(error: unknown): boolean {
  const status = statusOf(error);
  const code = serviceCodeOf(error) ?? "";
  if (status === 412) return !/^Lease/.test(code);
  if (status === 409) return /AlreadyExists$|^LeaseAlreadyPresent$|BeingDeleted$/.test(code);
  if (status === 404) return !/^(ContainerNotFound|TableNotFound)$/.test(code);
  return false;
}

function isHeadedBy(log: string | undefined, written: WriteLog): boolean {
  const current = parseWriteLog(log);
  return current !== undefined && current.chain === written.chain && current.seq === written.seq;
}

/** A signal that aborts once every participant's own signal has (a round shared by several callers). */
function allAborted(participants: readonly Participant<unknown>[]) {
  const controller = new AbortController();
  const signals = participants.map((p) => p.abortSignal);
  const check = () => {
    if (signals.every((s) => s?.aborted)) controller.abort(signals[0]!.reason);
  };
  for (const s of signals) s?.addEventListener("abort", check, { once: true });
  return {
    signal: controller.signal,
    dispose: () => signals.forEach((s) => s?.removeEventListener("abort", check)),
  };
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
