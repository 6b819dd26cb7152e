/**
 * A held permit: the lease lock handle of one slot (renewed in the background, a loss signal that
 * fires before the lease can lapse, a release that settles within twice `requestTimeoutInMs`, a
 * fencing token), plus which slot it is. Everything a lock handle guarantees, the permit does,
 * because it *is* one: this wrapper only adds the slot and tells the semaphore's waiting room when
 * the permit ends (released: the slot is free, a waiter of this process may try it at once; lost:
 * nothing to hand on).
 */
import {
  isLeaseLostError,
  type AssertHeldOptions,
  type LeasableRequestOptions,
  type LockHandle,
} from "../lease/index.js";

/**
 * A held permit of a {@link BlobSemaphore}: a lease on one of its slots. Release it with
 * `release()` or `await using`; until then its lease is renewed in the background, and its
 * `abortSignal` aborts (with a `LeaseLostError`) if it is lost.
 *
 * Fencing tokens count per slot: a permit's token is one more than the previous holder of the same
 * slot had. Fence a resource on the pair (`slot`, `fencingToken`), or on the token alone when each
 * slot guards its own resources.
 *
 * @example
 * ```ts
 * declare function exportTenant(options: { abortSignal: AbortSignal }): Promise<void>; // your own work
 *
 * await using held = await semaphore.acquire({ timeoutInMs: 60_000 });
 * console.log(`slot ${held.slot}, fencing token ${held.fencingToken}`);
 * await exportTenant({ abortSignal: held.abortSignal });
 * // released here, even if exportTenant throws
 * ```
 */
export interface PermitHandle extends LockHandle {
  /** The slot this permit holds: 0 to `maxCount - 1`. */
  readonly slot: number;
  /** The slot's blob name (`<name>/slot-<slot>`), as `lock show` and `semaphore show` print it. */
  readonly slotBlobName: string;
}

/** Wraps the lock handle of `slot`; `onEnd(freed)` is called once, when the permit stops being held. */
export function startPermit(
  handle: LockHandle,
  slot: number,
  slotBlobName: string,
  onEnd: (freed: boolean) => void,
): PermitHandle {
  return new Permit(handle, slot, slotBlobName, onEnd);
}

class Permit implements PermitHandle {
  readonly slot: number;
  readonly slotBlobName: string;
  readonly #inner: LockHandle;
  #onEnd: ((freed: boolean) => void) | undefined;
  #releasing: Promise<void> | undefined;

  constructor(inner: LockHandle, slot: number, slotBlobName: string, onEnd: (freed: boolean) => void) {
    this.#inner = inner;
    this.slot = slot;
    this.slotBlobName = slotBlobName;
    this.#onEnd = onEnd;
    const signal = inner.abortSignal;
    // A loss frees nothing this process could hand on (the lease may be someone else's by now).
    signal.addEventListener("abort", () => isLeaseLostError(signal.reason) && this.#ended(false), { once: true });
    void signal.aborted; // reading it runs the expiry guard: a loss before the listener was added is seen now
  }

  get leaseId(): string {
    return this.#inner.leaseId;
  }
  get abortSignal(): AbortSignal {
    return this.#inner.abortSignal;
  }
  /** @deprecated Use `abortSignal`. */
  get signal(): AbortSignal {
    return this.#inner.abortSignal;
  }
  get fencingToken(): number | undefined {
    return this.#inner.fencingToken;
  }
  get acquiredAt(): Date {
    return this.#inner.acquiredAt;
  }
  get lockMetadata(): Readonly<Record<string, string>> {
    return this.#inner.lockMetadata;
  }
  get status(): LockHandle["status"] {
    return this.#inner.status;
  }
  timeLeftInMs(): number {
    return this.#inner.timeLeftInMs();
  }
  assertHeld(options?: AssertHeldOptions): void {
    this.#inner.assertHeld(options);
  }

  release(options?: LeasableRequestOptions): Promise<void> {
    return (this.#releasing ??= this.#release(options));
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }

  async #release(options: LeasableRequestOptions | undefined): Promise<void> {
    const held = this.#inner.status === "held";
    try {
      await this.#inner.release(options);
    } catch (error) {
      this.#ended(false);
      throw error;
    }
    this.#ended(held);
  }

  #ended(freed: boolean): void {
    const onEnd = this.#onEnd;
    this.#onEnd = undefined;
    onEnd?.(freed);
  }
}
