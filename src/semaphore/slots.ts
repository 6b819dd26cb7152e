/**
 * A semaphore's slots: the blobs `<name>/slot-0` … `<name>/slot-<maxCount - 1>` in its container,
 * each a lease lock of its own (lease, holder record, fencing token). One listing of the prefix
 * `<name>/slot-` reads every slot's lease state and lock record at once: that is a waiter's look.
 *
 * A slot blob the listing does not show has never been taken (it is created on first use), and is
 * free. Slots at or above the `maxCount` of the caller (left by a deployment with a larger count)
 * are listed too, so that operators see their holders, but never counted as free.
 */
import type { ContainerClient } from "@azure/storage-blob";
import type { ListLocksOptions, ListPageRunner, LockHolder } from "../lease/index.js";
// The lock's own listing of lock blobs (one page of up to 5,000 blobs per request, with metadata).
import { listLocks } from "../lease/index.js";

/** What a slot name is made of: `<name>` + this + the slot's number. */
const SLOT_INFIX = "/slot-";

/**
 * The blob name of `slot` of the semaphore `name` (`<name>/slot-<slot>`): the blob whose lease is
 * that permit.
 *
 * @example
 * ```ts
 * import { slotBlobName } from "azure-storage-concurrency/semaphore";
 *
 * console.log(slotBlobName("tenant-exports", 0)); // "tenant-exports/slot-0"
 * ```
 */
export function slotBlobName(name: string, slot: number): string {
  return `${name}${SLOT_INFIX}${slot}`;
}

/** The slot number in `blobName` when it is a slot of the semaphore `name` (exactly, no leading zeros). */
export function slotOf(name: string, blobName: string): number | undefined {
  const prefix = `${name}${SLOT_INFIX}`;
  if (!blobName.startsWith(prefix)) return undefined;
  const digits = blobName.slice(prefix.length);
  return /^(0|[1-9]\d{0,5})$/.test(digits) ? Number(digits) : undefined;
}

/** One slot of a semaphore, as a listing saw it. */
export interface SlotRow {
  /** The slot's number: 0 to `maxCount - 1` (higher for slots of a former, larger `maxCount`). */
  readonly slot: number;
  /** The slot blob's name. */
  readonly blobName: string;
  /** The lease state, as the service reports it (`available`, `leased`, `expired`, `breaking`, `broken`). */
  readonly state: string;
  /** Whether someone holds the slot's lease (state `leased` or `breaking`). */
  readonly held: boolean;
  /** The slot's latest fencing token (0 before its first acquisition). */
  readonly fencingToken: number;
  /** The slot's latest holder, as recorded at its acquisition (the current holder when `held`). */
  readonly holder: LockHolder | undefined;
}

/**
 * Lists the slots of the semaphore `name` in `container` (one request per page of 5,000 blobs; one
 * in practice), in slot order, each page under a client-side time limit (`options`: see
 * `listLocks`). What `azure-storage-concurrency semaphore list` prints.
 *
 * @example
 * ```ts
 * import { listSlots } from "azure-storage-concurrency/semaphore";
 *
 * const slots = await listSlots(container, "tenant-exports", { requestTimeoutInMs: 10_000 });
 * console.log(slots.filter((slot) => slot.held).length, "permits held");
 * ```
 */
export async function listSlots(
  container: ContainerClient,
  name: string,
  options: ListLocksOptions | ListPageRunner = {},
): Promise<SlotRow[]> {
  const rows = await listLocks(container, `${name}${SLOT_INFIX}`, options);
  const slots: SlotRow[] = [];
  for (const row of rows) {
    const slot = slotOf(name, row.name);
    if (slot === undefined) continue; // another semaphore's slot (`<name>/slot-1/slot-0`), or not a slot
    const { state, held, fencingToken, holder } = row;
    slots.push({ slot, blobName: row.name, state, held, fencingToken, holder });
  }
  return slots.sort((a, b) => a.slot - b.slot);
}

/** The slots below `maxCount` that `rows` do not show held: listed as free, or never created. */
export function freeSlots(rows: readonly SlotRow[], maxCount: number): number[] {
  const held = new Set(rows.filter((row) => row.held).map((row) => row.slot));
  return Array.from({ length: maxCount }, (_, slot) => slot).filter((slot) => !held.has(slot));
}
