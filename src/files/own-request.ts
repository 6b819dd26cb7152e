/**
 * The requests the Files helpers make on their own, not because the caller asked for that request:
 * the read-back that decides whether a write whose answer was lost was applied, the lock's lease
 * releases and its periodic check. Each attempt has a client-side time limit (an abort signal with a
 * timeout; the SDK's `tryTimeoutInMs` is a server-side timeout and does not end a request that gets
 * no answer), and a request that is safe to repeat (a read, a release of the caller's own lease id)
 * gets a few attempts: one lost answer must not decide the outcome of a write, or leave an infinite
 * file lease held.
 */
import { withTimeLimit } from "../internal/time-limit.js";
import { exponentialBackoff } from "../retry/index.js";
import { retryPolicy } from "../retry/index.js";

/** The default client-side time limit of each attempt of a request a Files helper makes on its own. */
const OWN_REQUEST_TIMEOUT_IN_MS = 10_000;

/** How many attempts a repeatable request of a Files helper's own gets. */
const OWN_REQUEST_ATTEMPTS = 3;

/** Short waits between the attempts (about 50, 150 ms): the SDK's own retries have waited already. */
const BACKOFF = exponentialBackoff({ deltaInMs: 50, minInMs: 0, maxInMs: 1_000 });

/**
 * Runs `request` with a client-side time limit on each attempt, trying again (up to `attempts`) on
 * a transient failure or when the time limit ends an attempt. `what` follows "Could not" in errors;
 * `options.abortSignal` (the caller's or the lock's) cancels every attempt and the waits;
 * `attemptTimeoutInMs` defaults to 10 s and `attempts` to 3.
 * An attempt that ran out of time fails as a transient `StorageRequestError` (code `RequestTimedOut`,
 * service code `ClientTimeout`, as the queue consumer's time limits do); the caller's cancellation
 * comes out as its signal's reason.
 */
export async function ownRequest<T>(
  what: string,
  request: (abortSignal: AbortSignal) => Promise<T>,
  options: {
    readonly abortSignal?: AbortSignal | undefined;
    readonly attemptTimeoutInMs?: number | undefined;
    readonly attempts?: number;
  } = {},
): Promise<T> {
  const timeoutInMs = options.attemptTimeoutInMs ?? OWN_REQUEST_TIMEOUT_IN_MS;
  const caller = options.abortSignal;
  const policy = retryPolicy({
    backoff: BACKOFF,
    maxRetries: (options.attempts ?? OWN_REQUEST_ATTEMPTS) - 1,
    honorRetryAfter: false,
  });
  try {
    return await policy.execute(() => withTimeLimit(what, timeoutInMs, caller, request), {
      operationName: what,
      ...(caller ? { abortSignal: caller } : {}),
    });
  } catch (error) {
    if (caller?.aborted) throw caller.reason;
    throw error;
  }
}
