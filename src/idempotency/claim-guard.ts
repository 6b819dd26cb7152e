/**
 * The local expiry guard of an idempotency claim: the lease lock's discipline (`../lease/handle.ts`,
 * `../lease/guard.ts`) for the claims of `idempotent()` and of the consumer.
 *
 * A claim's record says "claimed until T", where T is the claimer's own clock's now + the claim's
 * duration when it wrote the record; any caller whose clock has passed T may take the key over and
 * run the work too. Extensions move T on; when they fail (the store is unreachable, its answers
 * hang), T passes while the work still runs, and nothing but a local clock can tell the holder. So:
 *
 * - the claim lasts at least its duration from when the request that wrote T was **sent** (T is
 *   computed after that), and the guard's deadline is that send + the duration - a safety margin,
 *   on the monotonic and the wall clock ({@link ExpiryGuard}: a suspended machine gives up too);
 * - an extension moves the deadline only once its answer says it landed. When an earlier
 *   extension's outcome stayed unknown (a time limit, a lost answer), the record may carry *that*
 *   one's T (the store recognises it by reading the record back, and says "extended"), so the
 *   deadline moves on from the earliest extension sent since the last one known to have landed;
 * - an extension that fails or hangs moves nothing: at the deadline `onExpired` is called, whatever
 *   is in flight, and the holder aborts its work and writes no done mark;
 * - the margin covers the skew between this caller's clock and those of the callers that judge T,
 *   and the time the work needs to stop once aborted.
 */
import {
  ExpiryGuard,
  sentNow,
  systemClock,
  type GuardClock,
  type GuardExpiry,
  type SentAt,
} from "../lease/internal.js";
import { IdempotencyClaimLostError } from "./errors.js";

/** The safety margin of a claim or a visibility window of `durationInMs`: 1 s, at most a quarter of it. */
export function safetyMarginInMs(durationInMs: number): number {
  return Math.min(1_000, durationInMs / 4);
}

/** The guard of one held claim: see the module's description. */
export class ClaimGuard {
  readonly #guard: ExpiryGuard;
  readonly #clock: GuardClock;
  /** The earliest extension sent since the last one known to have landed. */
  #unconfirmed: SentAt | undefined;

  /**
   * Starts guarding a claim of `durationInMs` whose claim request was sent at `claimSent`;
   * `onExpired` is called once, when the deadline has passed (from the timer or from {@link check}).
   */
  constructor(
    durationInMs: number,
    claimSent: SentAt,
    onExpired: (expiry: GuardExpiry) => void,
    clock: GuardClock = systemClock,
  ) {
    this.#clock = clock;
    this.#guard = new ExpiryGuard(durationInMs - safetyMarginInMs(durationInMs), claimSent, onExpired, clock);
  }

  /** An extension is being sent now. */
  extending(): void {
    this.#unconfirmed ??= sentNow(this.#clock);
  }

  /** The last extension sent landed: the deadline moves on from the earliest one whose outcome was unknown. */
  extended(): void {
    if (this.#unconfirmed) this.#guard.extend(this.#unconfirmed);
    this.#unconfirmed = undefined;
  }

  /** Time left before the deadline by the stricter clock; 0 once passed. */
  timeLeftInMs(): number {
    return this.#guard.timeLeftInMs();
  }

  /** Whether the deadline has passed (and, the first time, calls `onExpired`). */
  check(): boolean {
    return this.#guard.check();
  }

  /** Stops the timer: the guard says nothing more. */
  stop(): void {
    this.#guard.stop();
  }
}

/** The loss a claim's guard reports: no extension landed within the claim's duration less its margin. */
export function claimGivenUp(key: string, durationInMs: number, expiry: GuardExpiry): IdempotencyClaimLostError {
  const lifetimeInMs = Math.round(durationInMs - safetyMarginInMs(durationInMs));
  return new IdempotencyClaimLostError(
    `Gave up the claim on idempotency key '${key}': no extension succeeded within ${lifetimeInMs} ms` +
      (expiry === "wall"
        ? " by the wall clock (the monotonic clock did not see that time pass: the machine was probably suspended)"
        : "") +
      ", so the claim may expire and another caller take the key over. The work's signal is aborted and " +
      "no done mark is written for it: the key runs again later.",
    { key, reason: "expiry-guard" },
  );
}
