/** Resolves with how `promise` settled, or with "pending" if it has not within `withinMs` (the time-limit tests: ended, or still hanging). */
export async function settles<T>(promise: Promise<T>, withinMs = 10_000) {
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    promise.then(
      (value) => ({ settled: "resolved" as const, value, error: undefined }),
      (error: unknown) => ({ settled: "rejected" as const, error, value: undefined }),
    ),
    new Promise<{ settled: "pending"; error: undefined; value: undefined }>(
      (resolve) =>
        (timer = setTimeout(() => resolve({ settled: "pending", error: undefined, value: undefined }), withinMs)),
    ),
  ]);
  clearTimeout(timer);
  return outcome;
}
