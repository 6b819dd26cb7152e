/**
 * The lease lock's options, their defaults, and the checks that reject impossible combinations
 * before any request is made.
 */
import { checkNumber, checkOptionalInstance, describeValue, optionalNumber } from "../internal/validate.js";
import type { AdaptiveRateLimiter } from "../throttling/index.js";
import type { Leasable } from "./leasable.js";

/** Options for {@link LeaseLock}. */
export interface LeaseLockOptions {
  /**
   * How long the lease lasts without a renewal: 15 to 60 seconds, or `Infinity` for an infinite
   * lease (held until released or broken; never expires, so a crashed holder keeps it until an
   * operator breaks it). Infinite-only leasables (file leases) default to, and accept only, `Infinity`.
   * @default 30
   */
  readonly durationInSeconds?: number;
  /**
   * How often the lease is renewed while held. For an infinite lease, how often the lock checks
   * that the lease is still its own (someone may have broken it). Must be shorter than the
   * duration minus {@link LeaseLockOptions.safetyMarginInMs}.
   * @default durationInSeconds * 1000 / 3, or 10000 for an infinite lease
   */
  readonly renewIntervalInMs?: number;
  /**
   * The local expiry guard: the handle's signal aborts this long before the lease could expire at
   * the service, counted from when the last successful renewal (or the acquire) was *sent*, so
   * that no delay of a response can make the holder outlive its lease. Finite leases only.
   * @default max(1000, 10% of the duration)
   */
  readonly safetyMarginInMs?: number;
  /**
   * While waiting in `acquire`, the average time between two looks at the lease state, per
   * process and lock: the `acquire()` calls of one process that wait for the same lock share one
   * waiting room, and only the one at its head looks (one HEAD request), so the process makes about
   * `1000 / pollIntervalInMs` requests a second however many calls wait. Each wait is drawn around
   * the interval (shorter for a head that has waited long, longer for a fresh one, jittered) so
   * that processes do not move in step; a release in the same process wakes the next waiter at once.
   * @default 500
   */
  readonly pollIntervalInMs?: number;
  /**
   * The client-side time limit of each request the lock makes on its own: the reads and acquires
   * while waiting, the holder record's write, each renewal, the release. A request without an answer
   * by then is abandoned and counts as a lost answer (the lock's handling of those applies: the same
   * proposed lease id again, a renewal tried again, a release left to expire). The SDKs have no
   * such limit of their own (their `tryTimeoutInMs` is the service's timeout), so without it one
   * hung connection could keep a renewal, a release or `withLock` waiting for ever. A renewal gets
   * at most half the time left before the expiry guard, so that another can follow before it.
   * @default 5000
   */
  readonly requestTimeoutInMs?: number;
  /**
   * How long `acquire` keeps waiting while no request gets any answer from the service (an unknown
   * host, a refused or hung connection): after this, the wait ends with a `StorageRequestError`
   * whose `cause` is the last failure, instead of waiting for ever. Any answer, even a 503, restarts
   * the count.
   * @default 30000
   */
  readonly unreachableTimeoutInMs?: number;
  /**
   * A name for the holder, recorded in the lock's metadata next to its host and process id (1 to 256
   * characters of well-formed Unicode; percent-encoded in the metadata).
   */
  readonly holderName?: string;
  /**
   * Create the lock blob (and its container) when missing. With `false`, a missing one gives a
   * `LeaseTargetNotFoundError`. Leasables that the library must not create (containers) ignore it.
   * @default true
   */
  readonly createIfMissing?: boolean;
  /**
   * Send the requests of `acquire` and `tryAcquire` (the looks at the lease while waiting, the
   * acquires, the holder record) when the lock blob's adaptive rate allows (see
   * docs/throttling.md). Renewals and releases are never held back: they keep the lock.
   * @default undefined (requests go out at once)
   */
  readonly rateLimiter?: AdaptiveRateLimiter;
}

/** A lock's {@link LeaseLockOptions} with the defaults filled in and checked ({@link LeaseLock.options}). */
export interface ResolvedLeaseLockOptions {
  /** The lease duration in seconds (15 to 60), or `Infinity` for an infinite lease. */
  readonly durationInSeconds: number;
  /** How often the lease is renewed (or, infinite, checked) while held, in milliseconds. */
  readonly renewIntervalInMs: number;
  /** How long before the lease could expire the handle gives itself up, in milliseconds; 0 for an infinite lease. */
  readonly safetyMarginInMs: number;
  /** The average wait between two looks at the lease state while `acquire` waits, in milliseconds. */
  readonly pollIntervalInMs: number;
  /** The client-side time limit of each request the lock makes on its own, in milliseconds. */
  readonly requestTimeoutInMs: number;
  /** How long `acquire` waits while no request gets an answer before it fails, in milliseconds. */
  readonly unreachableTimeoutInMs: number;
  /** The holder name recorded in the lock's metadata, if one was given. */
  readonly holderName: string | undefined;
  /** Whether a missing lock blob (and container) is created. */
  readonly createIfMissing: boolean;
  /** The limiter that paces the acquisition's requests, if one was given. */
  readonly rateLimiter: AdaptiveRateLimiter | undefined;
}

/**
 * The shortest finite lease the services grant, in seconds.
 *
 * @example
 * ```ts
 * import { blobLock, MIN_LEASE_SECONDS } from "azure-storage-concurrency/lease";
 *
 * const lock = blobLock(container, "quick", { durationInSeconds: MIN_LEASE_SECONDS });
 * ```
 */
export const MIN_LEASE_SECONDS = 15;
/**
 * The longest finite lease the services grant, in seconds.
 *
 * @example
 * ```ts
 * import { blobLock, MAX_LEASE_SECONDS } from "azure-storage-concurrency/lease";
 *
 * const lock = blobLock(container, "slow", { durationInSeconds: MAX_LEASE_SECONDS });
 * ```
 */
export const MAX_LEASE_SECONDS = 60;

/** Fills in defaults and rejects impossible settings with a `TypeError`/`RangeError` naming the option. */
export function resolveLeaseLockOptions(leasable: Leasable, options: LeaseLockOptions = {}): ResolvedLeaseLockOptions {
  if (typeof options !== "object" || options === null) throw new TypeError("`options` must be an object.");
  const durationInSeconds = resolveDuration(leasable, options.durationInSeconds);
  const infinite = durationInSeconds === Infinity;
  const durationInMs = durationInSeconds * 1000;
  const safetyMarginInMs = infinite
    ? 0
    : optionalNumber("safetyMarginInMs", options.safetyMarginInMs, defaultSafetyMarginInMs(durationInSeconds), {
        min: 0,
        max: durationInMs - 100,
      });
  const renewIntervalInMs = optionalNumber(
    "renewIntervalInMs",
    options.renewIntervalInMs,
    infinite ? 10_000 : durationInMs / 3,
    { min: 100 },
  );
  if (!infinite && renewIntervalInMs >= durationInMs - safetyMarginInMs) {
    throw new RangeError(
      `\`renewIntervalInMs\` (${renewIntervalInMs}) must be shorter than the lease duration minus the safety margin ` +
        `(${durationInMs} - ${safetyMarginInMs} = ${durationInMs - safetyMarginInMs} ms), so that a renewal can happen ` +
        `before the lock gives itself up; the default is a third of the duration.`,
    );
  }
  const pollIntervalInMs = optionalNumber("pollIntervalInMs", options.pollIntervalInMs, 500, { min: 10 });
  const requestTimeoutInMs = optionalNumber("requestTimeoutInMs", options.requestTimeoutInMs, 5_000, { min: 50 });
  const unreachableTimeoutInMs = optionalNumber("unreachableTimeoutInMs", options.unreachableTimeoutInMs, 30_000, {
    min: 0,
    allowInfinity: true,
  });
  const holderName = options.holderName;
  if (holderName !== undefined) checkHolderName("holderName", holderName);
  if (options.createIfMissing !== undefined && typeof options.createIfMissing !== "boolean") {
    throw new TypeError("`createIfMissing` must be a boolean.");
  }
  checkOptionalInstance("rateLimiter", options.rateLimiter, "run", "an AdaptiveRateLimiter");
  return {
    durationInSeconds,
    renewIntervalInMs,
    safetyMarginInMs,
    pollIntervalInMs,
    requestTimeoutInMs,
    unreachableTimeoutInMs,
    holderName,
    createIfMissing: options.createIfMissing ?? true,
    rateLimiter: options.rateLimiter,
  };
}

/**
 * The safety margin a finite lease of `durationInSeconds` gets by default, and the least that leader
 * election accepts between its renew deadline and the lease duration: 10% of the duration, at least
 * one second.
 */
export function defaultSafetyMarginInMs(durationInSeconds: number): number {
  return Math.max(1000, durationInSeconds * 100);
}

/**
 * Checks a name that goes into the lock's metadata (percent-encoded there): 1 to 256 characters of
 * well-formed Unicode. A lone surrogate cannot be encoded, and would otherwise fail only after the
 * lease was taken.
 */
export function checkHolderName(name: string, value: unknown): string {
  if (typeof value !== "string" || value.length === 0 || value.length > 256) {
    throw new TypeError(
      `\`${name}\` must be a non-empty string of at most 256 characters, got ${describeValue(value)}.`,
    );
  }
  if (LONE_SURROGATE.test(value)) {
    throw new TypeError(
      `\`${name}\` must be well-formed Unicode: it holds a lone surrogate (half of a UTF-16 pair), which cannot be ` +
        `recorded in the lock's metadata.`,
    );
  }
  return value;
}

const LONE_SURROGATE = /\p{Surrogate}/u;

function resolveDuration(leasable: Leasable, value: unknown): number {
  if (!leasable.finiteDurations) {
    if (value !== undefined && value !== Infinity) {
      throw new RangeError(
        `\`durationInSeconds\` must be Infinity: ${leasable.description} only has infinite leases, got ${describeValue(value)}.`,
      );
    }
    return Infinity;
  }
  if (value === undefined) return 30;
  const seconds = checkNumber("durationInSeconds", value, { allowInfinity: true });
  if (
    seconds !== Infinity &&
    (!Number.isInteger(seconds) || seconds < MIN_LEASE_SECONDS || seconds > MAX_LEASE_SECONDS)
  ) {
    throw new RangeError(
      `\`durationInSeconds\` must be a whole number of seconds from ${MIN_LEASE_SECONDS} to ${MAX_LEASE_SECONDS}, ` +
        `or Infinity for an infinite lease, got ${seconds}.`,
    );
  }
  return seconds;
}
