/**
 * A rate meter: events per second, as an exponential average over half-second windows (the AWS
 * SDKs' adaptive mode measures its send rate so: 0.5 s buckets, the newest weighing 0.8). While no
 * window has ended yet, the rate of the window under way, over at least a quarter of a second (a
 * burst of requests in the first milliseconds is not a rate).
 */

/** The window, and the weight of its newest value. */
const WINDOW_IN_MS = 500;
const SMOOTHING = 0.8;
const MIN_FIRST_WINDOW_IN_MS = 250;

export class RateMeter {
  #windowStart: number;
  #count = 0;
  #average = 0;
  #averaged = false;

  constructor(now: number) {
    this.#windowStart = now;
  }

  /** Counts one event at `now`. */
  count(now: number): void {
    this.#fold(now);
    this.#count += 1;
  }

  /** The rate at `now`, in events per second. */
  rate(now: number): number {
    this.#fold(now);
    if (this.#averaged) return this.#average;
    return (this.#count * 1000) / Math.max(now - this.#windowStart, MIN_FIRST_WINDOW_IN_MS);
  }

  /** Ends the window under way when it is over (an idle stretch counts as one long, quiet window). */
  #fold(now: number): void {
    const elapsed = now - this.#windowStart;
    if (elapsed < WINDOW_IN_MS) return;
    const rate = (this.#count * 1000) / elapsed;
    this.#average = this.#averaged ? SMOOTHING * rate + (1 - SMOOTHING) * this.#average : rate;
    this.#averaged = true;
    this.#windowStart = now;
    this.#count = 0;
  }
}
