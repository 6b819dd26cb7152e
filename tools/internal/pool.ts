/**
 * Runs `task(0)` … `task(count - 1)` with at most `concurrency` of them in flight, in that order, and
 * resolves once every one has settled; if one rejected, rejects with the first rejection then. The
 * benchmarks use it to fill tables and to keep a set number of requests in flight.
 */
export async function forEachConcurrently(
  count: number,
  concurrency: number,
  task: (index: number) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const lane = async () => {
    for (let index = next++; index < count; index = next++) {
      await task(index).catch((error: unknown) => void (failure ??= { error }));
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, count)) }, lane));
  if (failure) throw failure.error;
}
