/**
 * A counting semaphore over blob leases: at most `maxCount` holders at once, across every process,
 * machine and deployment that uses it with that count.
 *
 * The design: `maxCount` slot blobs (`<name>/slot-0` …, see `./slots.ts`), each a lease lock of the
 * lease engine (`../lease/`), and a permit is a lease on one of them. So the service itself makes
 * sure that no slot has two holders, and every guarantee of the lock holds for each permit as it is,
 * with the same code: a lost-response-safe acquire (one proposed lease id per try, given back when
 * the try fails), renewal in the background, a loss signal that fires before the lease can lapse
 * (the two-clock expiry guard), a release that settles within twice `requestTimeoutInMs`, and a
 * fencing token per slot that only goes up. Waiting adds one thing: a look at every slot at once,
 * one listing request of the prefix (its lease states and lock records come with it), made by one
 * waiter per process per poll interval (`./waiting-room.ts`).
 *
 * Alternatives weighed, and why not:
 * - one blob holding a count or a list of holders, updated with `If-Match`: the service enforces
 *   nothing per permit, so a crashed holder's entry must expire by a timestamp, and then clocks
 *   that disagree across machines let in one holder too many; every acquire, release and renewal
 *   writes the same blob (412 storms under contention, one blob's request rate for all holders);
 *   and a write whose answer was lost leaves an entry that looks held;
 * - one blob per holder, counted by listing: two callers can both count `maxCount - 1` and both
 *   create theirs; nothing compares and swaps across blobs;
 * - a queue holding `maxCount` token messages (receive to take, visibility timeout as the lease):
 *   delivery is at least once, a renewal (Update Message) whose answer is lost strands the holder
 *   with a stale pop receipt, and there is no fencing token.
 * The slot design costs a listing per look where a lock costs a HEAD, and an acquire exactly as the
 * lock's; `npm run bench -- semaphore` measures it against raw lease calls in the same run.
 *
 * Which slot to try: a call with nobody of its process waiting ahead of it tries one slot at once,
 * without a look (the one this semaphore object held last, else one the process's latest look saw
 * free, else slot 0), and looks at every slot only if that one is taken. Waiters take turns as the
 * lock's do: one look per poll interval per process, by the longest waiting; a release in the
 * process hands its slot to the next waiter (at most twice in a row); a look that finds several free
 * slots hands one to each of the first waiters, in random order so that processes that looked at
 * the same time spread over the free slots instead of all trying the same.
 *
 * `maxCount` is a promise each caller keeps, not a setting stored in the container: a caller never
 * takes a slot at or above its own `maxCount`. Lowering it between deployments is safe: the new
 * deployment's callers stop taking the upper slots, and their holders keep them until they release
 * (or lose) them; while both deployments run, the old one still counts to its larger number.
 */
import type { ContainerClient } from "@azure/storage-blob";
import { logger } from "../internal/logger.js";
import { describeError } from "../internal/describe-error.js";
import { withTimeLimit } from "../internal/time-limit.js";
import { checkNumber, checkOptionalSignal } from "../internal/validate.js";
import { serviceCodeOf, statusOf } from "../errors.js";
import {
  blobLock,
  describeHolder,
  LeaseTargetNotFoundError,
  type LeaseLock,
  type LeaseLockOptions,
  type LockHandle,
  type ResolvedLeaseLockOptions,
} from "../lease/index.js";
// Not (yet) on the lease entry point: the blob name rules of lock blobs, and the bookkeeping of a
// wait's failures (logged, kept as the timeout's cause, "unreachable" after a while). See the report of issue 24.
import { checkLockBlobName, describeFailure, WaitFailures } from "../lease/internal.js";
import { classifyError, wrapStorageError } from "../retry/index.js";
import { SemaphoreTimeoutError } from "./errors.js";
import {
  checkSemaphoreOptions,
  type AcquirePermitOptions,
  type BlobSemaphoreOptions,
  type TryAcquirePermitOptions,
} from "./options.js";
import { startPermit, type PermitHandle } from "./permit.js";
import { freeSlots, listSlots, slotBlobName, type SlotRow } from "./slots.js";
import { checkTracingOptions } from "../observability/scope.js";
import { noteSemaphoreLook, traceSemaphoreAcquire } from "./telemetry.js";
import { openSemaphoreRoom, semaphoreRoom, type SemaphoreRoom } from "./waiting-room.js";

/** One slot of a semaphore, as {@link BlobSemaphore.inspect} reads it. */
export type SemaphoreSlot = SlotRow;

/** What {@link BlobSemaphore.inspect} reads: every slot, in one listing request. */
export interface SemaphoreInfo {
  /** What the semaphore is: `semaphore 'container/name'`. */
  readonly description: string;
  /** This caller's `maxCount`. */
  readonly maxCount: number;
  /** Permits held now, among the slots below `maxCount`. */
  readonly held: number;
  /** Permits free now (`maxCount - held`). */
  readonly available: number;
  /** Slots at or above `maxCount` still held (from a deployment with a larger `maxCount`). */
  readonly heldAboveMaxCount: number;
  /** Every slot blob there is, in slot order (slots never taken yet have no blob and are not listed). */
  readonly slots: readonly SemaphoreSlot[];
}

/**
 * A counting semaphore over the blobs `<name>/slot-0` … `<name>/slot-<maxCount - 1>` in `container`:
 * at most `maxCount` holders at once, across processes and machines. Each permit is a lease on one
 * slot blob, renewed in the background, with the lease lock's guarantees (see {@link PermitHandle}).
 * The slot blobs and the container are created when missing (unless `createIfMissing: false`).
 *
 * @example
 * ```ts
 * import { BlobServiceClient } from "@azure/storage-blob";
 * import { blobSemaphore } from "azure-storage-concurrency/semaphore";
 *
 * const locks = BlobServiceClient.fromConnectionString(process.env.AZURE_STORAGE_CONNECTION_STRING!)
 *   .getContainerClient("locks");
 * const exports = blobSemaphore(locks, "tenant-exports", { maxCount: 3 });
 * declare function exportTenant(options: { abortSignal: AbortSignal }): Promise<void>; // your own work
 *
 * await exports.withPermit((permit) => exportTenant({ abortSignal: permit.abortSignal }), { timeoutInMs: 60_000 });
 * ```
 */
export function blobSemaphore(container: ContainerClient, name: string, options: BlobSemaphoreOptions): BlobSemaphore {
  return new BlobSemaphore(container, name, options);
}

/**
 * A counting semaphore (see {@link blobSemaphore}): a value to keep and share; each `acquire` gives
 * a {@link PermitHandle}.
 *
 * @example
 * ```ts
 * import { BlobSemaphore } from "azure-storage-concurrency/semaphore";
 *
 * const partnerApi = new BlobSemaphore(container, "partner-api", { maxCount: 5, durationInSeconds: 15 });
 * const info = await partnerApi.inspect();
 * console.log(`${info.held} of ${info.maxCount} permits held`);
 * ```
 */
export class BlobSemaphore {
  /** The container of the slot blobs. */
  readonly container: ContainerClient;
  /** The semaphore's name: its slots are the blobs `<name>/slot-<n>`. */
  readonly name: string;
  /** How many permits there are. */
  readonly maxCount: number;
  /** What the semaphore is, for messages: `semaphore 'container/name'`. */
  readonly description: string;
  /** The lease options of every slot, with defaults filled in. */
  readonly options: ResolvedLeaseLockOptions;

  readonly #leaseOptions: LeaseLockOptions;
  readonly #slots: LeaseLock[] = [];
  /** Identifies the semaphore among this process's, for its waiting room (no query string: no SAS). */
  readonly #key: string;
  /** The slot this object held last: its lock remembers the record it wrote, so taking it again costs no read. */
  #lastHeld: number | undefined;

  constructor(container: ContainerClient, name: string, options: BlobSemaphoreOptions) {
    if (typeof container !== "object" || container === null || typeof container.getBlockBlobClient !== "function") {
      throw new TypeError("`containerClient` must be a ContainerClient from @azure/storage-blob.");
    }
    checkLockBlobName("name", name);
    this.maxCount = checkSemaphoreOptions(options);
    checkLockBlobName("name", slotBlobName(name, this.maxCount - 1)); // the longest slot name fits too
    const { maxCount: _, ...leaseOptions } = options;
    this.container = container;
    this.name = name;
    this.description = `semaphore '${container.containerName}/${name}'`;
    this.#leaseOptions = leaseOptions;
    const url = new URL(container.url);
    this.#key = `${url.origin}${url.pathname}\u0000${name}`;
    this.options = this.#slot(0).options; // the lease engine checks its options here, by name
  }

  /**
   * Takes a permit if one is free now: resolves with it, or `undefined` when all `maxCount` are
   * held. Costs one request more than a lock's `tryAcquire` when its first pick is taken (a look at
   * every slot at once), and one try per slot that look saw free.
   *
   * @example
   * ```ts
   * declare function callPartner(signal: AbortSignal): Promise<void>; // your own work
   *
   * const held = await semaphore.tryAcquire();
   * if (!held) console.log("all permits are taken: try again later");
   * else {
   *   try { await callPartner(held.abortSignal); } finally { await held.release(); }
   * }
   * ```
   */
  async tryAcquire(options: TryAcquirePermitOptions = {}): Promise<PermitHandle | undefined> {
    return traceSemaphoreAcquire(this.#traced(), false, checkTracingOptions(options.tracingOptions), () =>
      this.#tryAcquire(options),
    );
  }

  async #tryAcquire({ abortSignal }: TryAcquirePermitOptions): Promise<PermitHandle | undefined> {
    checkOptionalSignal("abortSignal", abortSignal);
    const guess = this.#guess(openSemaphoreRoom(this.#key));
    if (guess !== undefined) {
      const permit = await this.#try(guess, abortSignal);
      if (permit) return permit;
    }
    const rows = await this.#look(abortSignal).catch((error: unknown) =>
      Promise.reject(wrapStorageError(error, `list the slots of ${this.description}`)),
    );
    for (const slot of shuffled(freeSlots(rows, this.maxCount).filter((slot) => slot !== guess))) {
      const permit = await this.#try(slot, abortSignal);
      if (permit) return permit;
    }
    return undefined;
  }

  /**
   * Takes a permit, waiting for one as long as `timeoutInMs` allows (forever by default).
   *
   * @example
   * ```ts
   * await using held = await semaphore.acquire({ timeoutInMs: 30_000 });
   * console.log(`permit on slot ${held.slot} (fencing token ${held.fencingToken})`);
   * ```
   */
  async acquire(options: AcquirePermitOptions = {}): Promise<PermitHandle> {
    return traceSemaphoreAcquire(this.#traced(), true, checkTracingOptions(options.tracingOptions), () =>
      this.#acquire(options),
    );
  }

  async #acquire(options: AcquirePermitOptions): Promise<PermitHandle> {
    checkOptionalSignal("abortSignal", options.abortSignal);
    const timeoutInMs = checkNumber("timeoutInMs", options.timeoutInMs ?? Infinity, { min: 0, allowInfinity: true });
    const controller = new AbortController();
    const onAbort = () => controller.abort(options.abortSignal!.reason);
    options.abortSignal?.addEventListener("abort", onAbort, { once: true });
    if (options.abortSignal?.aborted) onAbort();
    const failures = new WaitFailures(this.description, this.options.unreachableTimeoutInMs);
    let lastLook: readonly SlotRow[] | undefined;
    let timedOut = false;
    const timer =
      timeoutInMs === Infinity
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            controller.abort(this.#timeoutError(timeoutInMs, lastLook, failures));
          }, timeoutInMs);
    const signal = controller.signal;
    const room = semaphoreRoom(this.#key);
    // Waiters of this process come first; without them, a slot believed free is tried at once, and
    // believing none free, the call looks at once if the process has not looked lately (./waiting-room.ts).
    const alone = !room.someoneWaits;
    const firstTry = alone ? this.#guess(room) : undefined;
    let lookNow = alone && firstTry === undefined && room.lookDue(this.options.pollIntervalInMs);
    const waiter = room.enter();
    let acquired = false;
    let local = false;
    try {
      for (let first = true; ; first = false) {
        let slot: number | undefined;
        const guessed = first && firstTry !== undefined;
        local = false;
        if (guessed) slot = firstTry;
        else if (lookNow) room.looked();
        else {
          const turn = await room.next(waiter, this.options.pollIntervalInMs, signal);
          if (turn !== "look") ({ slot, local } = turn);
        }
        lookNow = false;
        if (slot === undefined) {
          try {
            lastLook = await this.#look(signal);
          } catch (error) {
            if (signal.aborted || !classifyError(error).transient) throw error;
            failures.transient("listing the slots", error);
            continue;
          }
          failures.answered();
          slot = room.share(waiter, shuffled(freeSlots(lastLook, this.maxCount)));
          if (slot === undefined) continue;
        }
        try {
          const permit = await this.#try(slot, signal);
          if (permit) {
            acquired = true;
            return permit;
          }
          failures.answered();
          // A 409 on a slot tried without a look says nothing of the others: look at once, if the
          // process has not looked within the poll interval.
          lookNow = guessed && room.lookDue(this.options.pollIntervalInMs);
        } catch (error) {
          if (signal.aborted || !classifyError(error).transient) throw error;
          failures.transient("acquiring a slot", error);
        }
      }
    } catch (error) {
      // A slot's try gives back a lease id it may have won before it rejects (see LeaseLock.tryAcquire).
      if (timedOut) throw this.#timeoutError(timeoutInMs, lastLook, failures);
      throw signal.aborted ? signal.reason : wrapStorageError(error, `take a permit of ${this.description}`);
    } finally {
      room.leave(waiter, acquired, local);
      clearTimeout(timer);
      options.abortSignal?.removeEventListener("abort", onAbort);
    }
  }

  /**
   * Runs `callback` under a permit and always releases it. Rejects with the callback's error, or,
   * if the permit was lost while the callback ran, with the `LeaseLostError` (even when the callback
   * finished: what it did was not protected to the end). Once the callback has settled, it settles
   * within twice `requestTimeoutInMs` (the release). A release that fails after the callback
   * succeeded does not reject (the work is done): it is logged, and the lease expires by itself.
   *
   * @example
   * ```ts
   * declare function exportTenant(tenant: string, options: { abortSignal: AbortSignal }): Promise<number>;
   *
   * const rows = await semaphore.withPermit((held) => exportTenant("contoso", { abortSignal: held.abortSignal }), {
   *   timeoutInMs: 10 * 60_000,
   * });
   * ```
   */
  async withPermit<T>(
    callback: (permit: PermitHandle) => Promise<T> | T,
    options: AcquirePermitOptions = {},
  ): Promise<T> {
    if (typeof callback !== "function") throw new TypeError("`callback` must be a function.");
    const permit = await this.acquire(options);
    let result: T;
    try {
      result = await callback(permit);
    } catch (error) {
      await permit.release().catch(() => undefined);
      throw error;
    }
    const lost = permit.status === "lost" ? (permit.abortSignal.reason as unknown) : undefined;
    try {
      await permit.release();
    } catch (error) {
      if (lost === undefined) {
        logger.warning(
          `${this.description}: the work under the permit (slot ${permit.slot}) succeeded, but releasing it failed ` +
            `(${describeError(error)}); it expires by itself within the lease duration`,
        );
      }
    }
    if (lost !== undefined) throw lost;
    return result;
  }

  /**
   * Reads every slot (one listing request): which are held, by whom, and their fencing tokens.
   *
   * @example
   * ```ts
   * const info = await semaphore.inspect();
   * for (const slot of info.slots) if (slot.held) console.log(`slot ${slot.slot}: ${slot.holder?.host}`);
   * ```
   */
  async inspect(options: TryAcquirePermitOptions = {}): Promise<SemaphoreInfo> {
    checkOptionalSignal("abortSignal", options.abortSignal);
    const slots = await this.#look(options.abortSignal).catch((error: unknown) =>
      Promise.reject(wrapStorageError(error, `list the slots of ${this.description}`)),
    );
    const held = slots.filter((row) => row.held && row.slot < this.maxCount).length;
    return {
      description: this.description,
      maxCount: this.maxCount,
      held,
      available: this.maxCount - held,
      heldAboveMaxCount: slots.filter((row) => row.held && row.slot >= this.maxCount).length,
      slots,
    };
  }

  /**
   * The slot to try without a look: one the process believes free (the one this object held last,
   * if it is), or, when the process has not looked and holds nothing, the slot held last (or 0);
   * `undefined` when it believes none free, or holds permits without having looked.
   */
  #guess(room: SemaphoreRoom | undefined): number | undefined {
    const last = this.#lastHeld !== undefined && this.#lastHeld < this.maxCount ? this.#lastHeld : undefined;
    const free = room?.believedFree?.filter((slot) => slot < this.maxCount);
    if (free === undefined) return room?.holding ? undefined : (last ?? 0);
    if (last !== undefined && free.includes(last)) return last;
    return free.length === 0 ? undefined : free[Math.floor(Math.random() * free.length)];
  }

  /** One try of one slot (the lock's tryAcquire: lost-response safe); a permit, or `undefined` when held. */
  async #try(slot: number, abortSignal: AbortSignal | undefined): Promise<PermitHandle | undefined> {
    const handle: LockHandle | undefined = await this.#slot(slot).tryAcquire({ abortSignal });
    openSemaphoreRoom(this.#key)?.notFree(slot);
    if (!handle) return undefined;
    this.#lastHeld = slot;
    const room = semaphoreRoom(this.#key);
    room.held();
    return startPermit(handle, slot, slotBlobName(this.name, slot), (freed) => room.letGo(slot, freed));
  }

  /** One look at every slot: one listing request within `requestTimeoutInMs` (a page each). */
  async #look(abortSignal: AbortSignal | undefined): Promise<SlotRow[]> {
    noteSemaphoreLook();
    let rows: SlotRow[];
    try {
      rows = await listSlots(this.container, this.name, (call) =>
        withTimeLimit(`list the slots of ${this.description}`, this.options.requestTimeoutInMs, abortSignal, call),
      );
    } catch (error) {
      if (statusOf(error) !== 404 || serviceCodeOf(error) !== "ContainerNotFound") throw error;
      if (!this.options.createIfMissing) {
        throw new LeaseTargetNotFoundError(
          `Cannot take a permit of ${this.description}: the container does not exist; create it first, or leave ` +
            "`createIfMissing` at its default (true).",
          { statusCode: 404, serviceCode: "ContainerNotFound", cause: error },
        );
      }
      rows = []; // no slot yet: the first acquire creates the container and its slot
    }
    openSemaphoreRoom(this.#key)?.saw(freeSlots(rows, this.maxCount));
    return rows;
  }

  #slot(slot: number): LeaseLock {
    return (this.#slots[slot] ??= blobLock(this.container, slotBlobName(this.name, slot), this.#leaseOptions));
  }

  #traced() {
    return { container: this.container, name: this.name, maxCount: this.maxCount, holderName: this.options.holderName };
  }

  #timeoutError(
    timeoutInMs: number,
    lastLook: readonly SlotRow[] | undefined,
    failures: WaitFailures,
  ): SemaphoreTimeoutError {
    const holders = (lastLook ?? [])
      .filter((row) => row.held && row.slot < this.maxCount)
      .flatMap((row) => row.holder ?? []);
    const why =
      failures.inARow > 0
        ? `: the last ${failures.inARow === 1 ? "look" : `${failures.inARow} looks`} failed (${describeFailure(failures.last)})`
        : holders.length > 0
          ? `: held by ${holders.slice(0, 3).map(describeHolder).join(", ")}${holders.length > 3 ? ` and ${holders.length - 3} more` : ""}`
          : "";
    return new SemaphoreTimeoutError(
      `Could not take a permit of ${this.description} (maxCount ${this.maxCount}) within ${timeoutInMs} ms${why}.`,
      { timeoutInMs, maxCount: this.maxCount, holders, cause: failures.last },
    );
  }
}

/** `items` in a random order (Fisher-Yates). */
function shuffled<T>(items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
