/**
 * What the optimistic engine remembers within one process:
 * - one {@link CellState} per cell, keyed by the cell's identity (`VersionedCell.key`: kind, URL
 *   without query, entity keys), handed to every round on the cell. It holds the cell's turns
 *   (`turns.ts`), the version this process last wrote to it (the write-skip cache, so that the next
 *   update of a cell this process wrote last can skip the read) and its coalescing queue
 *   (`coalescing.ts`). The least recently used cells are forgotten first, never one whose queue is
 *   under way (its rounds must stay one after another); {@link forgetAllCells} forgets them all, for
 *   tests;
 * - the writer slots in use: a slot is this process plus a small number, held by one write (a
 *   read-modify-write round, or a last-writer-wins write) at a time. Slots come from one pool for the
 *   whole process, not one per cell: two cells can reach the same stored object (a JSON and a text
 *   cell on one blob, or one blob through two URLs), and two rounds writing it at the same time must
 *   never carry the same slot (see `write-log.ts` for why).
 */
import type { CellVersion, VersionedCell } from "./cell.js";
import type { Participant } from "./participant.js";
import { newTurns, type Turns } from "./turns.js";
import { PROCESS_ID } from "./write-log.js";

/** The most cells whose state is remembered; the least recently used go first. */
const MAX_CELLS = 1_000;

/** Content larger than this is not cached (the next update reads it again). */
const MAX_CACHED_CONTENT_BYTES = 4 * 1024 * 1024;

/** What this process knows of one cell; every round on the cell is handed it. */
export interface CellState {
  /** The cell's identity (`VersionedCell.key`). */
  readonly key: string;
  /** When this process skips reads and when it hands the cell over (`turns.ts`). */
  readonly turns: Turns;
  /**
   * The version this process last wrote to the cell (the write-skip cache). A guess: another
   * process may have written since, so a round proves it by its `If-Match` write or by a read.
   */
  version: CellVersion<unknown> | undefined;
  /** The updates waiting for the cell's next round (`coalescing.ts`); undefined while none is queued or running. */
  queue: CoalescingQueue | undefined;
}

/** The updates sharing a cell's next round, and the cell (as its first caller passed it) they run on. */
interface CoalescingQueue {
  readonly cell: VersionedCell<unknown>;
  readonly waiting: Participant<unknown>[];
}

const cells = new Map<string, CellState>();
const slotsInUse = new Set<number>();

/** The state of the cell `key`, made when this process has none (or forgot it); marks it the most recently used. */
export function cellState(key: string): CellState {
  let state = cells.get(key);
  if (state) {
    cells.delete(key);
  } else {
    state = { key, turns: newTurns(), version: undefined, queue: undefined };
    if (cells.size >= MAX_CELLS) forgetLeastRecentlyUsed();
  }
  cells.set(key, state);
  return state;
}

/** Forgets the least recently used cell whose queue is idle. */
function forgetLeastRecentlyUsed(): void {
  for (const [key, state] of cells) {
    if (state.queue === undefined) {
      cells.delete(key);
      return;
    }
  }
}

/**
 * Forgets every cell's turns and cached version, as a new process would start (for tests). Rounds
 * under way keep the state they were handed; writer slots are left to their holders.
 */
export function forgetAllCells(): void {
  cells.clear();
}

/** Remembers `version` as the one this process just wrote to the cell. */
export function rememberVersion(
  state: CellState,
  version: CellVersion<unknown>,
  sizeInBytes: number | undefined,
): void {
  state.version = sizeInBytes !== undefined && sizeInBytes > MAX_CACHED_CONTENT_BYTES ? undefined : version;
}

/** Forgets what this process knew of the cell's version (after a failed write: someone else may have written). */
export function forgetVersion(state: CellState): void {
  state.version = undefined;
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
