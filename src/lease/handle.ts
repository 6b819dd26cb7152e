/**
 * A held lock: renews its lease in the background, knows when it may no longer count on it, and
 * says so through an `AbortSignal`.
 *
 * Timing, for a finite lease of D ms with safety margin M and renewal interval R:
 * - each renewal is *sent* at time s; if it succeeds, the service's lease lasts at least until
 *   s + D (the service starts its clock when it handles the request, which is after s);
 * - so the handle's guard deadline is s + D - M for the latest successful renewal (or the acquire):
 *   when it passes, the signal aborts, before the service can let the lease expire and hand it on;
 * - renewals are due every R after the last successful one was sent; a failed renewal is tried
 *   again soon (a quarter of the time left to the guard, between 100 ms and 2 s), until the guard;
 * - a renewal the service refuses (409/412: broken, or taken after expiry; 404: the blob is gone)
 *   means the lock is lost at once;
 * - each renewal has a client-side time limit: `requestTimeoutInMs`, and at most half the time left
 *   to the guard, so that a renewal whose answer never comes is abandoned and another is sent before
 *   the guard (one stuck connection does not cost the lock);
 * - the guard (`./guard.ts`) also watches the wall clock, for a machine that was suspended, and is
 *   checked whenever the handle is read (`status`, `signal.aborted`, `timeLeftInMs()`, ...), so that
 *   a holder whose event loop was blocked past the deadline sees the loss before its next step.
 * For an infinite lease there is no guard: `renew` is the periodic "still ours?" check.
 *
 * Every timer is unref'd; `release()` stops them, abandons a renewal in flight, then releases (at
 * most two tries, each within `requestTimeoutInMs`), so nothing outlives the handle and release
 * settles in bounded time.
 */
import { randomUUID } from "node:crypto";
import { serviceCodeOf, statusOf } from "../errors.js";
import { logger } from "../internal/logger.js";
import { detached } from "../observability/scope.js";
import { noteLockEnded, noteRenewalFailed } from "./telemetry.js";
import { uniform } from "../internal/sleep.js";
import { withTimeLimit } from "../internal/time-limit.js";
import { classifyError, wrapStorageError } from "../retry/index.js";
import { isLeaseLostError, LeaseLostError, LockNotHeldError, type LeaseLossReason } from "./errors.js";
import { checkedOnRead, ExpiryGuard, sentNow, type GuardExpiry, type SentAt } from "./guard.js";
import { INFINITE_LEASE_SECONDS, type Leasable, type LeasableRequestOptions } from "./leasable.js";
import type { ResolvedLeaseLockOptions } from "./options.js";
import { describeFailure } from "./wait-failures.js";

/** Where a handle stands. */
export type LockStatus = "held" | "lost" | "released";

/** Options for {@link LockHandle.assertHeld}. */
export interface AssertHeldOptions {
  /**
   * Also refuse when the lock has less than this much time left before its local expiry guard.
   * @default 0
   */
  readonly minTimeLeftInMs?: number;
}

/**
 * A held lock, as returned by `LeaseLock.acquire`/`tryAcquire`. Release it with `release()` or
 * `await using`; until then its lease is renewed in the background.
 *
 * @example
 * ```ts
 * declare function doWork(options: { abortSignal: AbortSignal; fencingToken: number | undefined }): Promise<void>;
 *
 * await using held = await lock.acquire({ timeoutInMs: 10_000 });
 * await doWork({ abortSignal: held.abortSignal, fencingToken: held.fencingToken });
 * // released here, even if doWork throws
 * ```
 */
export interface LockHandle extends AsyncDisposable {
  /** The lease id: pass it as the lease condition of writes to the leased blob itself. */
  readonly leaseId: string;
  /**
   * Aborts when the lock is lost (its `reason` is a `LeaseLostError` saying why) or released.
   * Pass it to everything done under the lock. Reading `signal.aborted` (or `reason`,
   * `throwIfAborted()`) checks the expiry guard first, so it is up to date even after the event loop
   * was blocked or the machine suspended past the guard, before any timer had a turn.
   */
  readonly abortSignal: AbortSignal;
  /**
   * The same signal as {@link LockHandle.abortSignal}.
   * @deprecated Use `abortSignal`, the name every other option and context of the library uses. Kept until 1.0.
   */
  readonly signal: AbortSignal;
  /**
   * The fencing token of this acquisition: one more than the previous acquisition's, recorded in
   * the lock's metadata. Stamp it on guarded writes so that a stale holder's writes can be refused.
   * `undefined` when the leasable cannot store metadata.
   */
  readonly fencingToken: number | undefined;
  /** When the lock was acquired (when the acquire request was sent). */
  readonly acquiredAt: Date;
  /**
   * The lock's record (holder, fencing token) as written into the leased resource's metadata.
   * Writing the leased blob itself (`upload`, `setMetadata`) replaces its metadata: include these
   * entries, or the next holder's fencing token starts again from 1.
   */
  readonly lockMetadata: Readonly<Record<string, string>>;
  /** `"held"`, `"lost"` or `"released"`. */
  readonly status: LockStatus;
  /** Time until the local expiry guard gives the lock up: `Infinity` for an infinite lease, 0 once not held. */
  timeLeftInMs(): number;
  /** Throws a `LockNotHeldError` unless the lock is held (with at least `minTimeLeftInMs` left). */
  assertHeld(options?: AssertHeldOptions): void;
  /**
   * Stops renewing (abandoning a renewal in flight) and releases the lease so that a waiter gets it
   * at once. Safe to call more than once. Settles within twice the lock's `requestTimeoutInMs` (one
   * request, tried once more if its answer was lost). Rejects only if the service could not be
   * reached, in which case the lease expires on its own (within the lease duration).
   */
  release(options?: LeasableRequestOptions): Promise<void>;
}

/** What the engine knows at the moment an acquire succeeded. */
interface Acquisition {
  readonly leasable: Leasable;
  readonly options: ResolvedLeaseLockOptions;
  readonly leaseId: string;
  /** When the acquire request was sent, on the monotonic and the wall clock. */
  readonly sentAt: SentAt;
  readonly acquiredAt: Date;
  readonly fencingToken: number | undefined;
  readonly lockMetadata: Readonly<Record<string, string>>;
  /** Called once when the handle stops holding: `freed` when its release freed the lease. */
  readonly onEnd?: (freed: boolean) => void;
}

/** Reads a renewal failure: does it mean the lease is gone? */
export function isLeaseGone(error: unknown): boolean {
  const status = statusOf(error);
  return isLeaseLostError(error) || status === 409 || status === 412 || status === 404;
}

/**
 * Releases the lease `leaseId` holds: at most two tries, each within `requestTimeoutInMs`, so that
 * one lost answer is not taken for a failure (the second try of a release that was applied is
 * refused with 409: nothing held). Resolves `true` when released, `false` when the id held nothing
 * (409/412: expired and taken, broken, or released already); rejects with the last failure.
 */
export async function releaseLease(
  leasable: Leasable,
  leaseId: string,
  options: Pick<ResolvedLeaseLockOptions, "requestTimeoutInMs">,
  abortSignal?: AbortSignal,
): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    try {
      await withTimeLimit(
        `release the lease on ${leasable.description}`,
        options.requestTimeoutInMs,
        abortSignal,
        (signal) => leasable.release(leaseId, { abortSignal: signal }),
      );
      return true;
    } catch (error) {
      if (isLeaseGone(error)) return false;
      if (attempt >= 2 || abortSignal?.aborted || !classifyError(error).transient) throw error;
    }
  }
}

/** Starts renewing an acquired lease and returns its handle. */
export function startHandle(acquisition: Acquisition): LockHandle {
  return new HeldLease(acquisition);
}

class HeldLease implements LockHandle {
  readonly leaseId: string;
  readonly fencingToken: number | undefined;
  readonly acquiredAt: Date;
  readonly lockMetadata: Readonly<Record<string, string>>;
  readonly abortSignal: AbortSignal;
  readonly #leasable: Leasable;
  readonly #options: ResolvedLeaseLockOptions;
  readonly #controller = new AbortController();
  /** The local expiry guard; absent for an infinite lease. */
  readonly #guard: ExpiryGuard | undefined;
  #status: LockStatus = "held";

  /** @deprecated Use `abortSignal`. */
  get signal(): AbortSignal {
    return this.abortSignal;
  }
  #renewTimer: NodeJS.Timeout | undefined;
  #inflight: { controller: AbortController; done: Promise<void> } | undefined;
  #releasing: Promise<void> | undefined;
  #onEnd: ((freed: boolean) => void) | undefined;

  constructor(acquisition: Acquisition) {
    this.#onEnd = acquisition.onEnd;
    this.leaseId = acquisition.leaseId;
    this.fencingToken = acquisition.fencingToken;
    this.acquiredAt = acquisition.acquiredAt;
    this.lockMetadata = acquisition.lockMetadata;
    this.#leasable = acquisition.leasable;
    this.#options = acquisition.options;
    this.abortSignal = checkedOnRead(this.#controller.signal, () => this.#guard?.check());
    const { durationInSeconds, safetyMarginInMs } = this.#options;
    this.#guard =
      durationInSeconds === Infinity
        ? undefined
        : new ExpiryGuard(durationInSeconds * 1000 - safetyMarginInMs, acquisition.sentAt, (expiry) =>
            this.#expired(expiry),
          );
    this.#scheduleRenewal(acquisition.sentAt.monotonic + this.#options.renewIntervalInMs - performance.now());
  }

  get status(): LockStatus {
    this.#guard?.check();
    return this.#status;
  }

  timeLeftInMs(): number {
    if (this.status !== "held") return 0;
    return this.#guard ? this.#guard.timeLeftInMs() : Infinity;
  }

  assertHeld({ minTimeLeftInMs = 0 }: AssertHeldOptions = {}): void {
    const timeLeftInMs = this.timeLeftInMs();
    if (this.#status !== "held") {
      throw new LockNotHeldError(
        `The lock on ${this.#leasable.description} is ${this.#status}; the write was not made.`,
        {
          timeLeftInMs: 0,
          cause: this.#status === "lost" ? this.#controller.signal.reason : undefined,
        },
      );
    }
    if (timeLeftInMs < minTimeLeftInMs) {
      throw new LockNotHeldError(
        `The lock on ${this.#leasable.description} has ${Math.round(timeLeftInMs)} ms left, less than the ` +
          `${minTimeLeftInMs} ms this write needs; the write was not made.`,
        { timeLeftInMs },
      );
    }
  }

  release(options: LeasableRequestOptions = {}): Promise<void> {
    return (this.#releasing ??= this.#release(options));
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }

  async #release(options: LeasableRequestOptions): Promise<void> {
    this.#guard?.check();
    const wasLost = this.#status === "lost";
    const reason: unknown = this.#controller.signal.reason;
    const refused = wasLost && isLeaseLostError(reason) && reason.reason === "renewal-rejected";
    this.#status = wasLost ? "lost" : "released";
    await this.#stopRenewing();
    if (!wasLost) {
      this.#controller.abort(new DOMException(`The lock on ${this.#leasable.description} was released.`, "AbortError"));
      noteLockEnded(this.#leasable, this.acquiredAt); // telemetry after the signal
    }
    if (refused) return this.#ended(false); // the service already said this lease id holds nothing
    let released = false;
    try {
      released = await releaseLease(this.#leasable, this.leaseId, this.#options, options.abortSignal);
      if (released) logger.info(`released the lock on ${this.#leasable.description}`);
    } catch (error) {
      // After a loss this is a best effort: the lease expires on its own.
      if (wasLost) return;
      logger.warning(`could not release the lock on ${this.#leasable.description}; it expires on its own`);
      throw wrapStorageError(error, `release the lease on ${this.#leasable.description}`);
    } finally {
      this.#ended(released);
    }
  }

  /** Tells the lock's waiting room, once, that this handle no longer holds the lock. */
  #ended(freed: boolean): void {
    const onEnd = this.#onEnd;
    this.#onEnd = undefined;
    onEnd?.(freed);
  }

  /** Stops the timers and abandons a renewal in flight (its time-limited call settles at once). */
  async #stopRenewing(): Promise<void> {
    clearTimeout(this.#renewTimer);
    this.#renewTimer = undefined;
    this.#guard?.stop();
    const inflight = this.#inflight;
    if (inflight) {
      inflight.controller.abort(new DOMException("The lock stopped renewing.", "AbortError"));
      await inflight.done;
    }
  }

  #expired(expiry: GuardExpiry): void {
    const { durationInSeconds, safetyMarginInMs } = this.#options;
    const silentForMs = Math.round(durationInSeconds * 1000 - safetyMarginInMs);
    this.#lose(
      "expiry-guard",
      expiry === "wall"
        ? `Gave up the lock on ${this.#leasable.description}: by the wall clock no renewal succeeded within ${silentForMs} ms ` +
            `(the monotonic clock did not see that time pass: the machine was probably suspended), so the lease may have ` +
            `expired at the service and gone to someone else.`
        : `Gave up the lock on ${this.#leasable.description}: no renewal succeeded within ${silentForMs} ms, so the lease ` +
            `may expire at the service within ${safetyMarginInMs} ms and go to someone else.`,
    );
  }

  #scheduleRenewal(delayInMs: number): void {
    if (this.#status !== "held") return;
    clearTimeout(this.#renewTimer);
    this.#renewTimer = setTimeout(
      detached(() => this.#renew()),
      Math.max(0, delayInMs),
    );
    this.#renewTimer.unref();
  }

  /** The time limit of a renewal sent now: a second one must fit before the guard if this one hangs. */
  #renewalTimeLimitInMs(): number {
    const limit = this.#options.requestTimeoutInMs;
    return this.#guard ? Math.min(limit, Math.max(MIN_RENEWAL_LIMIT_IN_MS, this.#guard.timeLeftInMs() / 2)) : limit;
  }

  #renew(): void {
    this.#guard?.check();
    if (this.#status !== "held" || this.#inflight) return;
    const controller = new AbortController();
    const sent = sentNow();
    const durationInSeconds = this.#guard ? this.#options.durationInSeconds : INFINITE_LEASE_SECONDS;
    const timeLimitInMs = this.#renewalTimeLimitInMs();
    const done = withTimeLimit(
      `renew the lease on ${this.#leasable.description}`,
      timeLimitInMs,
      controller.signal,
      (abortSignal) => this.#leasable.renew(this.leaseId, { abortSignal, durationInSeconds }),
    ).then(
      () => {
        if (this.#status !== "held") return;
        this.#guard?.extend(sent);
        logger.verbose(`renewed the lease on ${this.#leasable.description}`);
        this.#scheduleRenewal(sent.monotonic + this.#options.renewIntervalInMs - performance.now());
      },
      (error: unknown) => {
        if (this.#status !== "held" || controller.signal.aborted) return;
        // State and signal first (a refusal loses the lock at once), telemetry after.
        if (isLeaseGone(error)) {
          const code = [statusOf(error), serviceCodeOf(error)].filter(Boolean).join(" ");
          // An infinite lease cannot expire: only a break, or a release or change by someone who
          // knew its id, can have taken it away.
          this.#lose(
            isLeaseLostError(error) ? "lease-gone" : "renewal-rejected",
            this.#guard
              ? `Lost the lock on ${this.#leasable.description}: the service refused to renew the lease` +
                  `${code ? ` (${code})` : ""}; it was broken, or it expired and another client took it.`
              : `Lost the lock on ${this.#leasable.description}: the periodic check found the lease no longer held by this lock` +
                  `${code ? ` (${code})` : ""}; it was broken (for example by \`lock break\`), or released or changed by someone else.`,
            error,
          );
          noteRenewalFailed(this.#leasable, error);
          return;
        }
        const timeLeft = this.#guard ? this.#guard.timeLeftInMs() : Infinity;
        const retryInMs = Math.min(2_000, Math.max(100, timeLeft / 4)) * uniform(0.8, 1.2);
        this.#scheduleRenewal(retryInMs);
        logger.warning(
          `renewing the lease on ${this.#leasable.description} failed (${describeFailure(error)}); trying again in ${Math.round(retryInMs)} ms`,
        );
        noteRenewalFailed(this.#leasable, error);
      },
    );
    const tracked = {
      controller,
      done: done.finally(() => void (this.#inflight === tracked && (this.#inflight = undefined))),
    };
    this.#inflight = tracked;
  }

  #lose(reason: LeaseLossReason, message: string, cause?: unknown): void {
    if (this.#status !== "held") return;
    this.#status = "lost";
    this.#ended(false);
    clearTimeout(this.#renewTimer);
    this.#guard?.stop();
    this.#inflight?.controller.abort(new DOMException("The lock was lost.", "AbortError"));
    this.#controller.abort(
      new LeaseLostError(message, {
        reason,
        leaseId: this.leaseId,
        statusCode: statusOf(cause),
        serviceCode: serviceCodeOf(cause),
        cause,
      }),
    );
    // The signal is aborted: only now the log line and telemetry (neither can throw, nor delay it).
    logger.warning(message);
    noteLockEnded(this.#leasable, this.acquiredAt, { reason, error: cause });
  }
}

/** The shortest time limit a renewal gets, however close the guard is. */
const MIN_RENEWAL_LIMIT_IN_MS = 50;

/** A fresh lease id to propose. */
export function newLeaseId(): string {
  return randomUUID();
}
