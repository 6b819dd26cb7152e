/**
 * The claim of one `idempotent()` call while `fn` runs: extended in the background, given up by its
 * local expiry guard (`../claim-guard.ts`) before it can expire when extensions fail or hang, and
 * marked done only while the guard still holds.
 *
 * Timing, for a claim of D ms with safety margin M (1 s, at most D / 4):
 * - the guard's deadline is D - M after the send of the claim or of the last extension known to
 *   have landed; when it passes, `onLost` is called with an {@link IdempotencyClaimLostError}
 *   (`reason: "expiry-guard"`) and the extension in flight is abandoned: the caller aborts `fn`;
 * - extensions are due D / 3 after that send; one that fails is tried again soon (a quarter of the
 *   time left to the guard, between 100 ms and 2 s), until the guard; each runs under
 *   `requestTimeoutInMs`, an ambiguous failure tried again while the guard holds (`claims.ts`);
 * - an extension the store refuses (the record changed: another call took the key over) calls
 *   `onLost` at once (`reason: "record-changed"`);
 * - the done mark is sent only while the guard holds, and is conditioned on the claim's version by
 *   the store, so it lands only if nobody took the key over; a lost answer is recognised by the
 *   store (it reads the record back), and tried again only while the guard holds.
 */
import { logger } from "../internal/logger.js";
import { uniform } from "../internal/sleep.js";
import { systemClock, type GuardClock, type GuardExpiry, type SentAt } from "../lease/internal.js";
import { ClaimGuard, claimGivenUp, safetyMarginInMs } from "./claim-guard.js";
import type { HoldWindow, StoreCalls } from "./store-calls.js";
import { isIdempotencyClaimLostError, type IdempotencyClaimLostError } from "./errors.js";
import { describeError } from "../internal/describe-error.js";
import type { IdempotencyClaim } from "./store.js";

export class HeldClaim<TEffect> {
  readonly #calls: StoreCalls<TEffect>;
  readonly #durationInMs: number;
  readonly #guard: ClaimGuard;
  readonly #onLost: (error: IdempotencyClaimLostError) => void;
  readonly #clock: GuardClock;
  /** While the guard holds: the window in which an ambiguous store call is tried again. */
  readonly #window: HoldWindow;
  #claim: IdempotencyClaim;
  #lost: IdempotencyClaimLostError | undefined;
  #stopped = false;
  #timer: unknown;
  #inFlight: { readonly controller: AbortController; readonly done: Promise<void> } | undefined;

  /**
   * Starts guarding and extending `claim`, whose claim request was sent at `claimSent`; `onLost` is
   * called once if it is lost or given up. `clock`: the system's (tests pass their own).
   */
  constructor(
    calls: StoreCalls<TEffect>,
    claim: IdempotencyClaim,
    claimSent: SentAt,
    durationInMs: number,
    onLost: (error: IdempotencyClaimLostError) => void,
    clock: GuardClock = systemClock,
  ) {
    this.#calls = calls;
    this.#clock = clock;
    this.#claim = claim;
    this.#durationInMs = durationInMs;
    this.#onLost = onLost;
    this.#guard = new ClaimGuard(durationInMs, claimSent, (expiry) => this.#expired(expiry), clock);
    this.#window = { remainingInMs: () => this.#guard.timeLeftInMs() };
    this.#schedule(claimSent.monotonic + durationInMs / 3 - clock.monotonic());
  }

  /** The claim as last extended. */
  get claim(): IdempotencyClaim {
    return this.#claim;
  }

  /** Why the claim can no longer be counted on (the guard is checked first), or undefined while it holds. */
  get lost(): IdempotencyClaimLostError | undefined {
    this.#guard.check();
    return this.#lost;
  }

  /**
   * Stops extending, and waits for an extension in flight: if it landed, its answer carries the
   * record's new version, which the done mark is conditioned on.
   */
  async stopExtending(): Promise<void> {
    this.#stopped = true;
    this.#clock.clearTimer(this.#timer);
    await this.#inFlight?.done;
  }

  /**
   * Writes the done mark with `result` and `effects`. Rejects with the loss, writing nothing, when
   * the claim is lost or the guard has passed.
   */
  async complete(result: unknown, effects: readonly TEffect[]): Promise<void> {
    const lost = this.lost;
    if (lost) throw lost;
    await this.#calls.complete(this.#claim, result, effects, this.#window);
  }

  /** Stops everything: no timer outlives the call. */
  end(): void {
    this.#stopped = true;
    this.#clock.clearTimer(this.#timer);
    this.#guard.stop();
    this.#inFlight?.controller.abort(new DOMException("The call ended.", "AbortError"));
  }

  #schedule(delayInMs: number): void {
    if (this.#stopped) return;
    this.#timer = this.#clock.setTimer(() => this.#extend(), Math.max(0, delayInMs));
  }

  #extend(): void {
    if (this.#stopped || this.lost) return;
    const controller = new AbortController();
    this.#guard.extending();
    const done = this.#calls.extend(this.#claim, this.#durationInMs, this.#window, controller.signal).then(
      (extended) => {
        if (this.#lost) return;
        this.#claim = extended;
        this.#guard.extended();
        // Due a third of the duration after the send the deadline now counts from.
        const lifetimeInMs = this.#durationInMs - safetyMarginInMs(this.#durationInMs);
        this.#schedule(this.#guard.timeLeftInMs() - (lifetimeInMs - this.#durationInMs / 3));
      },
      (error: unknown) => {
        if (this.#lost || controller.signal.aborted) return;
        if (isIdempotencyClaimLostError(error)) return this.#lose(error);
        const retryInMs = Math.min(2_000, Math.max(100, this.#guard.timeLeftInMs() / 4)) * uniform(0.8, 1.2);
        this.#schedule(retryInMs);
        warn(
          () =>
            `could not extend the claim on '${this.#claim.key}' (${describeError(error)}); ` +
            `trying again in ${Math.round(retryInMs)} ms, ${Math.round(this.#guard.timeLeftInMs())} ms before giving it up`,
        );
      },
    );
    const tracked = {
      controller,
      done: done.finally(() => void (this.#inFlight === tracked && (this.#inFlight = undefined))),
    };
    this.#inFlight = tracked;
  }

  #expired(expiry: GuardExpiry): void {
    this.#lose(claimGivenUp(this.#claim.key, this.#durationInMs, expiry));
  }

  /** The claim is lost: signal first (the caller aborts `fn`), then stop, then log. */
  #lose(error: IdempotencyClaimLostError): void {
    if (this.#lost) return;
    this.#lost = error;
    this.#stopped = true;
    this.#clock.clearTimer(this.#timer);
    this.#guard.stop();
    this.#inFlight?.controller.abort(new DOMException("The claim was lost.", "AbortError"));
    this.#onLost(error);
    warn(() => error.message);
  }
}

/** Logs a warning; a log line never decides anything, so a failure to write one is ignored. */
function warn(line: () => string): void {
  try {
    logger.warning(`idempotent(): ${line()}`);
  } catch {
    // nothing to do: the outcome is the operation's, not the log's
  }
}
