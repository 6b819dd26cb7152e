/**
 * A client-side time limit for one storage call. The SDKs have none of their own (`tryTimeoutInMs`
 * is sent to the service as its server-side timeout), so a request whose answer never comes keeps
 * its caller waiting for ever. Every request the library makes on its own (renewals, releases,
 * read-backs) goes through {@link withTimeLimit}.
 *
 * The call is given a signal that aborts when the limit passes or the caller's signal aborts; the
 * returned promise settles then even if the call ignores its signal (with `waitOnCancel`, a
 * cancelled call is given until the limit to settle with an error of its own). A call cut off by the limit
 * rejects with a {@link StorageRequestError} without a status (a network-like failure: transient,
 * and the request may or may not have been applied), so the one classifier treats it like a lost
 * answer; one cut off by the caller rejects with the caller's reason.
 */
import { StorageRequestError } from "../errors.js";

/**
 * Runs `call` with a signal that aborts after `timeLimitInMs` or when `abortSignal` aborts.
 * `operation` says what the call does, phrased to follow "Could not" (`"renew the lease on blob 'a'"`).
 */
export function withTimeLimit<T>(
  operation: string,
  timeLimitInMs: number,
  abortSignal: AbortSignal | undefined,
  call: (signal: AbortSignal) => Promise<T>,
  {
    waitOnCancel = false,
  }: {
    /**
     * When the caller's signal aborts, let the call settle (still within the limit) instead of
     * rejecting at once: for a call that ends a cancelled wait with an error saying more.
     */
    readonly waitOnCancel?: boolean;
  } = {},
): Promise<T> {
  if (abortSignal?.aborted) return Promise.reject(abortSignal.reason);
  const controller = new AbortController();
  return new Promise<T>((resolve, reject) => {
    const stop = (reason: unknown) => {
      clearTimeout(timer);
      abortSignal?.removeEventListener("abort", onAbort);
      controller.abort(reason);
      reject(reason);
    };
    const onAbort = () => (waitOnCancel ? controller.abort(abortSignal!.reason) : stop(abortSignal!.reason));
    // A Node.js timer longer than its longest delay (about 24.8 days) would fire after 1 ms instead.
    const delayInMs = Math.min(Math.max(0, timeLimitInMs), MAX_TIMER_DELAY_IN_MS);
    const timer = setTimeout(() => stop(timeLimitError(operation, timeLimitInMs)), delayInMs);
    timer.unref();
    abortSignal?.addEventListener("abort", onAbort, { once: true });
    let pending: Promise<T>;
    try {
      pending = call(controller.signal);
    } catch (error) {
      stop(error);
      return;
    }
    pending.then(
      (value) => {
        clearTimeout(timer);
        abortSignal?.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        // After the limit (or the caller) cut the call off, its own rejection is only the echo.
        if (!controller.signal.aborted || (waitOnCancel && abortSignal?.aborted)) stop(error);
      },
    );
  });
}

/** The longest delay a Node.js timer takes (2^31 - 1 ms); a longer limit is cut to it. */
const MAX_TIMER_DELAY_IN_MS = 2_147_483_647;

/** The error of a call that got no answer within its time limit. */
function timeLimitError(operation: string, timeLimitInMs: number): StorageRequestError {
  return new StorageRequestError(
    `Could not ${operation}: no answer within ${timeLimitInMs} ms (the client-side time limit), so the request ` +
      `may or may not have been applied. This is transient: try again later.`,
    { code: "RequestTimedOut", serviceCode: "ClientTimeout", transient: true },
  );
}
