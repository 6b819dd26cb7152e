/**
 * The local expiry guard of a held finite lease (and of an idempotency claim:
 * `../queue/claim-guard.ts`): the moment after which the holder may no longer count on its lease,
 * and a timer that says so on time.
 *
 * The deadline is `sent + lifetime` for the latest successful renewal (or the acquire), where
 * `sent` is when that request was sent and `lifetime` is the lease duration minus the safety margin.
 * It is kept on two clocks, and the guard has passed as soon as either says so:
 *
 * - the monotonic clock (`performance.now()`), which no change of the system time moves;
 * - the wall clock (`Date.now()`), because the monotonic clock stands still while the machine is
 *   suspended (laptop sleep, a paused VM) and the service's clock does not: after a resume, the
 *   monotonic clock says "a moment ago" while the lease has long expired and may be someone else's.
 *   A wall clock set backwards only makes this check later (the monotonic one still holds); one set
 *   forwards makes the holder give up early, which is safe.
 *
 * The timer counts on the event loop's clock, which runs on whole milliseconds and may fire up to
 * a couple of milliseconds before `performance.now()` reaches the deadline; a timer that fires early
 * is armed again for the rest. A timer cannot fire during a suspend or a blocked event loop, so the
 * holder also asks the guard ({@link ExpiryGuard.check}) whenever its state is read.
 */

/** The clocks and timers the guard runs on (the system's by default; tests pass their own). */
export interface GuardClock {
  /** A monotonic clock in milliseconds (`performance.now()`). */
  monotonic(): number;
  /** The wall clock in milliseconds since the epoch (`Date.now()`). */
  wall(): number;
  /** Calls `callback` after about `delayInMs`; the timer must not keep the process alive. */
  setTimer(callback: () => void, delayInMs: number): unknown;
  /** Cancels a timer from `setTimer`. */
  clearTimer(timer: unknown): void;
}

/** The system's clocks, with `unref`'d timers. */
export const systemClock: GuardClock = {
  monotonic: () => performance.now(),
  wall: () => Date.now(),
  setTimer: (callback, delayInMs) => setTimeout(callback, delayInMs).unref(),
  clearTimer: (timer) => clearTimeout(timer as NodeJS.Timeout),
};

/** Which clock saw the deadline pass: `"wall"` means the machine was probably suspended. */
export type GuardExpiry = "monotonic" | "wall";

/** When a request was sent, on both clocks. */
export interface SentAt {
  readonly monotonic: number;
  readonly wall: number;
}

/** Reads both clocks now. */
export function sentNow(clock: GuardClock = systemClock): SentAt {
  return { monotonic: clock.monotonic(), wall: clock.wall() };
}

/** The guard of one held lease: see the module's description. */
export class ExpiryGuard {
  readonly #lifetimeInMs: number;
  readonly #onExpired: (expiry: GuardExpiry) => void;
  readonly #clock: GuardClock;
  #monotonicDeadline: number;
  #wallDeadline: number;
  #timer: unknown;
  #done = false;

  /**
   * Starts guarding a lease whose acquire was sent at `sent`; `onExpired` is called once, when the
   * deadline has passed (from the timer or from {@link ExpiryGuard.check}).
   */
  constructor(
    lifetimeInMs: number,
    sent: SentAt,
    onExpired: (expiry: GuardExpiry) => void,
    clock: GuardClock = systemClock,
  ) {
    this.#lifetimeInMs = lifetimeInMs;
    this.#onExpired = onExpired;
    this.#clock = clock;
    this.#monotonicDeadline = sent.monotonic + lifetimeInMs;
    this.#wallDeadline = sent.wall + lifetimeInMs;
    this.#arm();
  }

  /** A renewal sent at `sent` succeeded: the deadline moves on (never back). */
  extend(sent: SentAt): void {
    if (this.#done) return;
    this.#monotonicDeadline = Math.max(this.#monotonicDeadline, sent.monotonic + this.#lifetimeInMs);
    this.#wallDeadline = Math.max(this.#wallDeadline, sent.wall + this.#lifetimeInMs);
    this.#arm();
  }

  /** Time left before the deadline by the stricter clock; 0 once passed. */
  timeLeftInMs(): number {
    const monotonic = this.#monotonicDeadline - this.#clock.monotonic();
    const wall = this.#wallDeadline - this.#clock.wall();
    return Math.max(0, Math.min(monotonic, wall));
  }

  /** Whether the deadline has passed; if so (the first time), calls `onExpired`. */
  check(): boolean {
    if (this.#done) return true;
    const expiry = this.#expiry();
    if (expiry === undefined) return false;
    this.stop();
    this.#onExpired(expiry);
    return true;
  }

  /** Stops the timer; the guard says nothing more. */
  stop(): void {
    this.#done = true;
    this.#clock.clearTimer(this.#timer);
    this.#timer = undefined;
  }

  #expiry(): GuardExpiry | undefined {
    if (this.#clock.monotonic() >= this.#monotonicDeadline) return "monotonic";
    if (this.#clock.wall() >= this.#wallDeadline) return "wall";
    return undefined;
  }

  #arm(): void {
    this.#clock.clearTimer(this.#timer);
    // Whole milliseconds, rounded up; a timer that still fires early finds time left and arms again.
    const delayInMs = Math.max(1, Math.ceil(this.timeLeftInMs()));
    this.#timer = this.#clock.setTimer(() => {
      this.#timer = undefined;
      if (!this.check()) this.#arm();
    }, delayInMs);
  }
}

/**
 * `signal` itself, whose `aborted`, `reason` and `throwIfAborted()` run `check` first. A timer
 * cannot fire while the event loop is blocked or the machine suspended; code that reads the signal
 * right after such a pause (its own, or the SDK's before a request) must still see the loss.
 */
export function checkedOnRead(signal: AbortSignal, check: () => void): AbortSignal {
  Object.defineProperties(signal, {
    aborted: {
      get: () => (check(), Reflect.get(AbortSignal.prototype, "aborted", signal) === true),
      configurable: true,
    },
    reason: {
      get: () => (check(), Reflect.get(AbortSignal.prototype, "reason", signal) as unknown),
      configurable: true,
    },
    throwIfAborted: {
      value: () => {
        check();
        if (Reflect.get(AbortSignal.prototype, "aborted", signal))
          throw Reflect.get(AbortSignal.prototype, "reason", signal);
      },
      configurable: true,
      writable: true,
    },
  });
  return signal;
}
