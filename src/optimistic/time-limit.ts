/**
 * A client-side time limit for the requests the optimistic engine and its cells make on their own
 * (read-backs, resends, the container-metadata cell's lease requests). The SDK's `tryTimeoutInMs` is
 * a server-side timeout and does not stop a client waiting on a dead connection; an abort signal
 * does, and it also cuts short the SDK's waits between its own retries.
 */
import { StorageRequestError } from "../errors.js";

/**
 * Runs `request` with a signal that aborts when the caller's does or after `timeoutInMs`. When the
 * time limit (not the caller) stopped it, rejects with a transient {@link StorageRequestError}
 * without a status (no answer: like a lost response, the request may or may not have been applied).
 */
export async function withTimeLimit<T>(
  what: string,
  timeoutInMs: number,
  abortSignal: AbortSignal | undefined,
  request: (abortSignal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error(`no answer within ${timeoutInMs} ms`));
  }, timeoutInMs);
  const onAbort = () => controller.abort(abortSignal!.reason);
  if (abortSignal?.aborted) onAbort();
  else abortSignal?.addEventListener("abort", onAbort, { once: true });
  try {
    return await request(controller.signal);
  } catch (error) {
    if (!timedOut || abortSignal?.aborted) throw error;
    throw new StorageRequestError(
      `Could not ${what}: no answer within ${timeoutInMs} ms (client-side time limit). The request may or may not have reached the service.`,
      { code: "StorageRequestFailed", serviceCode: "ClientTimeout", transient: true, cause: error },
    );
  } finally {
    clearTimeout(timer);
    abortSignal?.removeEventListener("abort", onAbort);
  }
}
