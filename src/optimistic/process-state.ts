/**
 * What the optimistic engine remembers within one process:
 * - the version this process last wrote to each cell (the write-skip cache), keyed by the cell's
 *   identity (`VersionedCell.key`: kind, URL without query, entity keys), so that the next update of
 *   a cell this process wrote last can skip the read;
 * - the writer slots in use: a slot is this process plus a small number, held by one write (a
 *   read-modify-write round, or a last-writer-wins write) at a time. Slots come from one pool for the
 *   whole process, not one per cell: two cells can reach the same stored object (a JSON and a text
 *   cell on one blob, or one blob through two URLs), and two rounds writing it at the same time must
 *   never carry the same slot (see `write-log.ts` for why).
 */
import type { CellVersion } from "./cell.js";
import { PROCESS_ID } from "./write-log.js";

/** The most cells the write-skip cache remembers; the least recently used go first. */
const MAX_CACHED_CELLS = 1_000;

/** Content larger than this is not cached (the next update reads it again). */
const MAX_CACHED_CONTENT_BYTES = 4 * 1024 * 1024;

const versions = new Map<string, CellVersion<unknown>>();
const slotsInUse = new Set<number>();

/** The version this process last wrote to the cell `key`, if it is remembered. */
export function cachedVersion(key: string): CellVersion<unknown> | undefined {
  const version = versions.get(key);
  if (version) {
    versions.delete(key);
    versions.set(key, version);
  }
  return version;
}

/** Remembers `version` as the one this process just wrote to `key`. */
export function rememberVersion(key: string, version: CellVersion<unknown>, sizeInBytes: number | undefined): void {
  versions.delete(key);
  if (sizeInBytes !== undefined && sizeInBytes > MAX_CACHED_CONTENT_BYTES) return;
  versions.set(key, version);
  if (versions.size > MAX_CACHED_CELLS) versions.delete(versions.keys().next().value!);
}

/** Forgets what this process knew of `key` (after a failed write: someone else may have written). */
export function forgetVersion(key: string): void {
  versions.delete(key);
}

/**
 * Taking turns under contention. Skipping the read is what makes a process that wrote last so fast
 * that, racing writers of other processes, it tends to win again and again: they must read and write
 * (two round trips) between two of its writes (one round trip), while waiting out their backoff. So
 * a process that has seen another writer on a cell lately (a conflict, or a read of a version that
 * another process wrote) skips the read at most {@link SKIPS_BEFORE_YIELD} times in a row; then it
 * yields: it waits as a writer that lost would, and reads. A sign of another writer counts for the
 * next {@link CONTENDED_FOR_ROUNDS} rounds of this process on the cell; a writer alone on its cell
 * never yields. Only when to read changes: every write is still conditional on the version it was
 * computed from.
 */
const SKIPS_BEFORE_YIELD = 8;

/** For how many of this process's rounds on a cell a sign of another writer counts. */
const CONTENDED_FOR_ROUNDS = 64;

interface Contention {
  /** Rounds left before the last sign of another writer no longer counts. */
  remaining: number;
  /** Rounds in a row that skipped the read since this process last yielded. */
  skips: number;
}

const contention = new Map<string, Contention>();

/** Notes a sign of another writer on cell `key`: a conflict, or a version last written by another process. */
export function noteOtherWriter(key: string): void {
  const entry = contention.get(key);
  if (entry) entry.remaining = CONTENDED_FOR_ROUNDS;
  else {
    contention.set(key, { remaining: CONTENDED_FOR_ROUNDS, skips: 0 });
    if (contention.size > MAX_CACHED_CELLS) contention.delete(contention.keys().next().value!);
  }
}

/** True when `slot` (of a write history) belongs to another process than this one. */
export function isOtherProcess(slot: string): boolean {
  return !slot.startsWith(PROCESS_ID);
}

/**
 * Whether the next round on cell `key`, which has a cached version, may skip its read: false when it
 * is this process's turn to yield (see {@link SKIPS_BEFORE_YIELD}).
 */
export function maySkipRead(key: string): boolean {
  const entry = contention.get(key);
  if (!entry) return true;
  if (--entry.remaining < 0) {
    contention.delete(key);
    return true;
  }
  if (entry.skips < SKIPS_BEFORE_YIELD) {
    entry.skips++;
    return true;
  }
  entry.skips = 0;
  return false;
}

/** A writer slot taken with {@link acquireSlot}. */
interface WriterSlot {
  /** The slot's name in write histories: this process's id and the slot's number. */
  readonly slot: string;
  /** The slot's number, to give back with {@link releaseSlot}. */
  readonly index: number;
}

/** Takes the lowest writer slot no write of this process holds; give it back with {@link releaseSlot}. */
export function acquireSlot(): WriterSlot {
  let index = 0;
  while (slotsInUse.has(index)) index++;
  slotsInUse.add(index);
  // The process's random id makes slots of different processes differ.
  return { slot: `${PROCESS_ID}${index.toString(36)}`, index };
}

/** Gives back a slot taken with {@link acquireSlot}. */
export function releaseSlot(slot: WriterSlot): void {
  slotsInUse.delete(slot.index);
}
