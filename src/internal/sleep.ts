/**
 * An abortable wait. Rejects with the signal's reason when aborted, and removes its listener and
 * timer either way, so nothing outlives the wait.
 *
 * A wait that a caller awaits keeps the process alive (the default); background activities
 * (renewals, polling) pass `unref: true` so they never do.
 */
export function sleep(ms: number, abortSignal?: AbortSignal, { unref = false } = {}): Promise<void> {
  if (abortSignal?.aborted) return Promise.reject(abortSignal.reason);
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortSignal!.reason);
    };
    const timer = setTimeout(() => {
      abortSignal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    if (unref) timer.unref();
    abortSignal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** A uniformly random number in `[min, max)`, from `random` (defaults to `Math.random`). */
export function uniform(min: number, max: number, random: () => number = Math.random): number {
  return min + (max - min) * random();
}
