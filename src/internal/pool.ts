/**
 * Runs tasks with at most `concurrency` of them in flight, in the order given, and resolves with
 * their results in that order once every task has settled. Tasks are expected not to reject (the
 * callers record failures as results); if one does, the pool still waits for the others and then
 * rejects with the first rejection.
 */
export async function runPool<T>(tasks: readonly (() => Promise<T>)[], concurrency: number): Promise<T[]> {
  const results = new Array<T>(tasks.length);
  let next = 0;
  let firstError: { error: unknown } | undefined;
  const worker = async () => {
    while (next < tasks.length) {
      const index = next++;
      try {
        results[index] = await tasks[index]!();
      } catch (error) {
        firstError ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, tasks.length)) }, worker));
  if (firstError) throw firstError.error;
  return results;
}
