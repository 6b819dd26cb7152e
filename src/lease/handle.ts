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
 *   means the lock is lost at once.
 * For an infinite lease there is no guard: `renew` is the periodic "still ours?" check.
 *
 * Every timer is unref'd; `release()` stops them, aborts and waits for a renewal in flight, then
 * releases, so nothing outlives the handle.
 */
import { randomUUID } from "node:crypto";
import { serviceCodeOf, statusOf } from "../errors.js";
import { logger } from "../internal/logger.js";
import { uniform } from "../internal/sleep.js";
import { wrapStorageError } from "../retry/classify.js";
import { isLeaseLostError, LeaseLostError, LockNotHeldError, type LeaseLossReason } from "./errors.js";
import { INFINITE_LEASE_SECONDS, type Leasable, type LeasableRequestOptions } from "./leasable.js";
import type { ResolvedLeaseLockOptions } from "./options.js";

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
 * await doWork({ abortSignal: held.signal, fencingToken: held.fencingToken });
 * // released here, even if doWork throws
 * ```
 */
export interface LockHandle extends AsyncDisposable {
  /** The lease id: pass it as the lease condition of writes to the leased blob itself. */
  readonly leaseId: string;
  /**
   * Aborts when the lock is lost (its `reason` is a `LeaseLostError` saying why) or released.
   * Pass it to everything done under the lock.
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
   * Stops renewing (waiting for a renewal in flight) and releases the lease so that a waiter gets
   * it at once. Safe to call more than once. Rejects only if the service could not be reached, in
   * which case the lease expires on its own.
   */
  release(options?: LeasableRequestOptions): Promise<void>;
}

/** What the engine knows at the moment an acquire succeeded. */
interface Acquisition {
  readonly leasable: Leasable;
  readonly options: ResolvedLeaseLockOptions;
  readonly leaseId: string;
  /** `performance.now()` when the acquire request was sent. */
  readonly sentAt: number;
  readonly acquiredAt: Date;
  readonly fencingToken: number | undefined;
  readonly lockMetadata: Readonly<Record<string, string>>;
}

/** Reads a renewal failure: does it mean the lease is gone? */
export function isLeaseGone(error: unknown): boolean {
  const status = statusOf(error);
  return isLeaseLostError(error) || status === 409 || status === 412 || status === 404;
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
  readonly #leasable: Leasable;
  readonly #options: ResolvedLeaseLockOptions;
  readonly #durationInMs: number;
  readonly #controller = new AbortController();
  #status: LockStatus = "held";
  #guardDeadline: number;
  #guardTimer: NodeJS.Timeout | undefined;
  #renewTimer: NodeJS.Timeout | undefined;
  #inflight: { controller: AbortController; done: Promise<void> } | undefined;
  #releasing: Promise<void> | undefined;

  constructor(acquisition: Acquisition) {
    this.leaseId = acquisition.leaseId;
    this.fencingToken = acquisition.fencingToken;
    this.acquiredAt = acquisition.acquiredAt;
    this.lockMetadata = acquisition.lockMetadata;
    this.#leasable = acquisition.leasable;
    this.#options = acquisition.options;
    this.#durationInMs = acquisition.options.durationInSeconds * 1000;
    this.#guardDeadline = acquisition.sentAt + this.#durationInMs - this.#options.safetyMarginInMs;
    this.#armGuard();
    this.#scheduleRenewal(acquisition.sentAt + this.#options.renewIntervalInMs - performance.now());
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get status(): LockStatus {
    this.#checkGuard();
    return this.#status;
  }

  timeLeftInMs(): number {
    if (this.status !== "held") return 0;
    return Math.max(0, this.#guardDeadline - performance.now());
  }

  assertHeld({ minTimeLeftInMs = 0 }: AssertHeldOptions = {}): void {
    const timeLeftInMs = this.timeLeftInMs();
    if (this.#status !== "held") {
      throw new LockNotHeldError(
        `The lock on ${this.#leasable.description} is ${this.#status}; the write was not made.`,
        {
          timeLeftInMs: 0,
          cause: this.#status === "lost" ? this.signal.reason : undefined,
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
    this.#checkGuard();
    const wasLost = this.#status === "lost";
    const refused = wasLost && isLeaseLostError(this.signal.reason) && this.signal.reason.reason === "renewal-rejected";
    this.#status = wasLost ? "lost" : "released";
    await this.#stopRenewing();
    if (!wasLost)
      this.#controller.abort(new DOMException(`The lock on ${this.#leasable.description} was released.`, "AbortError"));
    if (refused) return; // the service already said this lease id holds nothing
    try {
      await this.#leasable.release(this.leaseId, { abortSignal: options.abortSignal });
      logger.info(`released the lock on ${this.#leasable.description}`);
    } catch (error) {
      // 409/412: the lease is no longer ours (expired and taken, or broken): nothing left to release.
      if (isLeaseGone(error)) return;
      // After a loss this is a best effort: the lease expires on its own.
      if (wasLost) return;
      logger.warning(`could not release the lock on ${this.#leasable.description}; it expires on its own`);
      throw wrapStorageError(error, `release the lease on ${this.#leasable.description}`);
    }
  }

  /** Stops the timers, aborts a renewal in flight and waits for it to settle. */
  async #stopRenewing(): Promise<void> {
    clearTimeout(this.#renewTimer);
    clearTimeout(this.#guardTimer);
    this.#renewTimer = this.#guardTimer = undefined;
    const inflight = this.#inflight;
    if (inflight) {
      inflight.controller.abort(new DOMException("The lock stopped renewing.", "AbortError"));
      await inflight.done;
    }
  }

  #finite(): boolean {
    return this.#durationInMs !== Infinity;
  }

  #armGuard(): void {
    if (!this.#finite()) return;
    clearTimeout(this.#guardTimer);
    this.#guardTimer = setTimeout(() => this.#checkGuard(), Math.max(0, this.#guardDeadline - performance.now()));
    this.#guardTimer.unref();
  }

  /** Gives the lock up once the guard deadline has passed (also when a blocked event loop delayed the timer). */
  #checkGuard(): void {
    if (this.#status !== "held" || !this.#finite() || performance.now() < this.#guardDeadline) return;
    const silentForMs = Math.round(this.#durationInMs - this.#options.safetyMarginInMs);
    this.#lose(
      "expiry-guard",
      `Gave up the lock on ${this.#leasable.description}: no renewal succeeded within ${silentForMs} ms, so the lease ` +
        `may expire at the service within ${this.#options.safetyMarginInMs} ms and go to someone else.`,
    );
  }

  #scheduleRenewal(delayInMs: number): void {
    if (this.#status !== "held") return;
    clearTimeout(this.#renewTimer);
    this.#renewTimer = setTimeout(() => this.#renew(), Math.max(0, delayInMs));
    this.#renewTimer.unref();
  }

  #renew(): void {
    this.#checkGuard();
    if (this.#status !== "held" || this.#inflight) return;
    const controller = new AbortController();
    const sentAt = performance.now();
    const durationInSeconds = this.#finite() ? this.#options.durationInSeconds : INFINITE_LEASE_SECONDS;
    const done = this.#leasable.renew(this.leaseId, { abortSignal: controller.signal, durationInSeconds }).then(
      () => {
        if (this.#status !== "held") return;
        if (this.#finite()) {
          this.#guardDeadline = Math.max(
            this.#guardDeadline,
            sentAt + this.#durationInMs - this.#options.safetyMarginInMs,
          );
          this.#armGuard();
        }
        logger.verbose(`renewed the lease on ${this.#leasable.description}`);
        this.#scheduleRenewal(sentAt + this.#options.renewIntervalInMs - performance.now());
      },
      (error: unknown) => {
        if (this.#status !== "held" || controller.signal.aborted) return;
        if (isLeaseGone(error)) {
          const code = [statusOf(error), serviceCodeOf(error)].filter(Boolean).join(" ");
          // An infinite lease cannot expire: only a break, or a release or change by someone who
          // knew its id, can have taken it away.
          this.#lose(
            isLeaseLostError(error) ? "lease-gone" : "renewal-rejected",
            this.#finite()
              ? `Lost the lock on ${this.#leasable.description}: the service refused to renew the lease` +
                  `${code ? ` (${code})` : ""}; it was broken, or it expired and another client took it.`
              : `Lost the lock on ${this.#leasable.description}: the periodic check found the lease no longer held by this lock` +
                  `${code ? ` (${code})` : ""}; it was broken (for example by \`lock break\`), or released or changed by someone else.`,
            error,
          );
          return;
        }
        const timeLeft = this.#finite() ? this.#guardDeadline - performance.now() : Infinity;
        const retryInMs = Math.min(2_000, Math.max(100, timeLeft / 4)) * uniform(0.8, 1.2);
        logger.warning(
          `renewing the lease on ${this.#leasable.description} failed (${String(statusOf(error) ?? serviceCodeOf(error) ?? error)}); trying again in ${Math.round(retryInMs)} ms`,
        );
        this.#scheduleRenewal(retryInMs);
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
    clearTimeout(this.#renewTimer);
    clearTimeout(this.#guardTimer);
    this.#inflight?.controller.abort(new DOMException("The lock was lost.", "AbortError"));
    logger.warning(message);
    this.#controller.abort(
      new LeaseLostError(message, {
        reason,
        leaseId: this.leaseId,
        statusCode: statusOf(cause),
        serviceCode: serviceCodeOf(cause),
        cause,
      }),
    );
  }
}

/** A fresh lease id to propose. */
export function newLeaseId(): string {
  return randomUUID();
}
