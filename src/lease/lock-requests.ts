/**
 * The requests of one lock, each within its client-side time limit: one acquire attempt (acquire
 * the lease, creating the lock blob when missing, then write the holder record and the next fencing
 * token), giving back a lease id the lock may hold without knowing it, and reading the lease state.
 * The waiting and the decisions around them are `LeaseLock`'s (`./lock.ts`).
 */
import { classifyError } from "../retry/index.js";
import { serviceCodeOf, statusOf } from "../errors.js";
import { logger } from "../internal/logger.js";
import { withTimeLimit } from "../internal/time-limit.js";
import { runThrottled, throttleScopeOf } from "../throttling/index.js";
import { LeaseTargetNotFoundError } from "./errors.js";
import { sentNow } from "./guard.js";
import { isLeaseGone, releaseLease, startHandle, type LockHandle } from "./handle.js";
import { buildLockMetadata, ownLockMetadata, readLockRecord } from "./holder.js";
import { INFINITE_LEASE_SECONDS, type Leasable, type LeasableProperties } from "./leasable.js";
import type { ResolvedLeaseLockOptions } from "./options.js";
import type { WaitingRoom } from "./waiting-room.js";

/** The requests of one lock; see the module's description. */
export class LockRequests {
  readonly leasable: Leasable;
  readonly options: ResolvedLeaseLockOptions;
  /**
   * The lock's record as this lock last saw it (its ETag and metadata): from its latest look at the
   * lease state, or from its own latest record write. An attempt without a fresher look writes the
   * next record `If-Match` this ETag, so that a lock taken again and again by the same process costs
   * no read (acquire, record write, release). Leasing and releasing do not change the ETag; any
   * write does, and then the condition fails (412) and the record is read after the acquire, as
   * without it. So a stale entry costs one request, never a wrong token.
   */
  #lastSeen: Pick<LeasableProperties, "etag" | "metadata"> | undefined;

  /**
   * The lock's waiting room in this process (`open`: only if one is open), told when a handle of
   * this lock holds and lets go, and sharing the record last seen with the process's other locks
   * on the same resource.
   */
  readonly #room: (open?: "open") => WaitingRoom | undefined;

  constructor(leasable: Leasable, options: ResolvedLeaseLockOptions, room: (open?: "open") => WaitingRoom | undefined) {
    this.leasable = leasable;
    this.options = options;
    this.#room = room;
  }

  /**
   * One acquire attempt; `undefined` when someone else holds the lease. `known` is what a look at
   * the lease state just before found (it saves reading the lock's record again).
   */
  async attempt(
    leaseId: string,
    acquisitionId: string,
    abortSignal: AbortSignal | undefined,
    known?: LeasableProperties,
  ): Promise<LockHandle | undefined> {
    const sentAt = sentNow();
    const acquiredAt = new Date(sentAt.wall);
    const seen = known ?? this.#room("open")?.lastSeen ?? this.#lastSeen;
    const granted = await this.#acquireOrCreate(leaseId, abortSignal);
    if (!granted) return undefined;
    let record: { fencingToken: number; lockMetadata: Record<string, string> } | undefined;
    try {
      record = await this.#recordAcquisition(leaseId, acquisitionId, acquiredAt, abortSignal, seen);
    } catch (error) {
      // The lease is ours but its record could not be written: give it back rather than hold it unfenced.
      await this.forget(leaseId);
      if (isLeaseGone(error)) return undefined; // broken in between: someone else has it
      throw error;
    }
    const fencingToken = record?.fencingToken;
    logger.info(
      `acquired the lock on ${this.leasable.description}${fencingToken === undefined ? "" : ` (fencing token ${fencingToken})`}`,
    );
    const room = this.#room()!;
    room.held();
    room.lastSeen = this.#lastSeen;
    return startHandle({
      onEnd: (freed) => room.letGo(freed),
      leasable: this.leasable,
      options: this.options,
      leaseId,
      sentAt,
      acquiredAt,
      fencingToken,
      lockMetadata: record?.lockMetadata ?? {},
    });
  }

  async #acquireOrCreate(leaseId: string, abortSignal: AbortSignal | undefined): Promise<boolean> {
    const seconds =
      this.options.durationInSeconds === Infinity ? INFINITE_LEASE_SECONDS : this.options.durationInSeconds;
    for (let created = false; ; created = true) {
      try {
        await this.call(
          `acquire the lease on ${this.leasable.description}`,
          abortSignal,
          (signal) => this.leasable.acquire(seconds, leaseId, { abortSignal: signal }),
          { mayWaitOutConflicts: true },
        );
        return true;
      } catch (error) {
        const status = statusOf(error);
        // "Held by someone else" is the lease's own 409 (LeaseAlreadyPresent, ...): not an SMB client
        // holding a file (409 SharingViolation) nor an error the leasable raised about one.
        if (status === 409 && classifyError(error).kind === "client") return false;
        if (status !== 404) throw error;
        if (created || !this.options.createIfMissing || !this.leasable.createIfMissing) {
          throw new LeaseTargetNotFoundError(
            `Cannot lock ${this.leasable.description}: it does not exist` +
              (this.leasable.createIfMissing
                ? created
                  ? " (it was deleted right after being created)."
                  : "; create it, or leave `createIfMissing` at its default (true)."
                : "; create it first."),
            { statusCode: status, serviceCode: serviceCodeOf(error), cause: error },
          );
        }
        await this.call(`create ${this.leasable.description}`, abortSignal, (signal) =>
          this.leasable.createIfMissing!({ abortSignal: signal }),
        );
      }
    }
  }

  /**
   * Writes the holder record and the next fencing token under the new lease.
   *
   * The token must be one more than the latest recorded, so the record read must be the latest:
   * - with `known` (read just before the acquire, or this lock's own latest record: see
   *   `#lastSeen`) and a leasable whose metadata writes can be conditional, the write is made
   *   `If-Match` that ETag. Leasing does not change the ETag, so it only fails (412
   *   ConditionNotMet) if someone wrote since;
   * - otherwise, or after such a 412, the record is read after the acquire: from then on no earlier
   *   holder can write, so that read is the latest.
   * Each record carries the `acquire` call's own id (`lockacquisitionid`): a record write whose
   * answer was lost (the SDK's resend then gets 412, or the call tries again) is recognised when
   * the record is read back, and its token kept, so that a call that is told "held" advanced the
   * token exactly once. The unconditional write sets absolute values, so resending it changes nothing.
   */
  async #recordAcquisition(
    leaseId: string,
    acquisitionId: string,
    acquiredAt: Date,
    abortSignal: AbortSignal | undefined,
    known: Pick<LeasableProperties, "etag" | "metadata"> | undefined,
  ): Promise<{ fencingToken: number; lockMetadata: Record<string, string> } | undefined> {
    const setMetadata = this.leasable.setMetadata?.bind(this.leasable);
    if (!setMetadata) return undefined;
    const next = (existing: Readonly<Record<string, string>>) => {
      const fencingToken = readLockRecord(existing).fencingToken + 1;
      const { all, own } = buildLockMetadata(existing, {
        fencingToken,
        acquisitionId,
        name: this.options.holderName,
        acquiredAt,
        durationInSeconds: this.options.durationInSeconds,
        renewIntervalInMs: this.options.renewIntervalInMs,
      });
      return { fencingToken, all, lockMetadata: own };
    };
    const operation = `write the lock's record on ${this.leasable.description}`;
    if (known?.etag !== undefined && this.leasable.conditionalMetadataWrites) {
      const record = next(known.metadata);
      try {
        const written = await this.call(
          operation,
          abortSignal,
          (signal) => setMetadata(record.all, leaseId, { abortSignal: signal, ifMatch: known.etag }),
          { mayWaitOutConflicts: true },
        );
        this.#remember(written, record.all);
        return record;
      } catch (error) {
        if (statusOf(error) !== 412 || serviceCodeOf(error) !== "ConditionNotMet") throw error;
      }
    }
    const properties = await this.readState(abortSignal);
    const current = readLockRecord(properties?.metadata ?? {});
    if (current.acquisitionId === acquisitionId) {
      // This call's own record, written by an attempt whose answer was lost.
      return { fencingToken: current.fencingToken, lockMetadata: ownLockMetadata(properties!.metadata) };
    }
    const record = next(properties?.metadata ?? {});
    const written = await this.call(
      operation,
      abortSignal,
      (signal) => setMetadata(record.all, leaseId, { abortSignal: signal }),
      { mayWaitOutConflicts: true },
    );
    this.#remember(written, record.all);
    return record;
  }

  /** Keeps the record just written, when the leasable told its new ETag. */
  #remember(written: { readonly etag?: string } | void, metadata: Readonly<Record<string, string>>): void {
    this.#lastSeen = written?.etag === undefined ? undefined : { etag: written.etag, metadata };
  }

  /**
   * Best-effort release of a lease id this call may hold without knowing it: at most two tries,
   * each within `requestTimeoutInMs`, so that one lost answer does not leave the lease held until
   * it expires. A lease id that holds nothing is refused (409) at once.
   */
  async forget(leaseId: string): Promise<void> {
    await releaseLease(this.leasable, leaseId, this.options).catch(() => undefined);
  }

  /** Reads the lease state and the lock's record (one HEAD), within the request time limit. */
  async readState(abortSignal: AbortSignal | undefined): Promise<LeasableProperties | undefined> {
    const properties = await this.call(`read the lease state of ${this.leasable.description}`, abortSignal, (signal) =>
      this.leasable.getProperties({ abortSignal: signal }),
    );
    this.#lastSeen = properties?.etag === undefined ? undefined : properties;
    const room = this.#room("open");
    if (room) room.lastSeen = this.#lastSeen;
    return properties;
  }

  /**
   * One request of the lock's own, within `requestTimeoutInMs` (see `../internal/time-limit.ts`);
   * `acquire` and `setMetadata` get the leasable's `conflictWaitInMs` on top, and may end a
   * cancelled wait with their own error (fileLock's SMB conflicts).
   */
  call<T>(
    operation: string,
    abortSignal: AbortSignal | undefined,
    call: (signal: AbortSignal) => Promise<T>,
    { mayWaitOutConflicts = false } = {},
  ): Promise<T> {
    const conflictWaitInMs = mayWaitOutConflicts ? (this.leasable.conflictWaitInMs ?? 0) : 0;
    const send = () =>
      withTimeLimit(operation, this.options.requestTimeoutInMs + conflictWaitInMs, abortSignal, call, {
        waitOnCancel: conflictWaitInMs > 0,
      });
    // Paced by the lock's limiter, when it has one and can tell what the service throttles it by (its URL).
    const { key } = this.leasable;
    const limiter = typeof key === "string" ? this.options.rateLimiter : undefined;
    return runThrottled(limiter, () => throttleScopeOf(key!), send, abortSignal);
  }
}
