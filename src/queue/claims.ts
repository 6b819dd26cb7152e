/**
 * The consumer's calls to its idempotency store: each under the client-side time limit, an
 * ambiguous failure (time limit, network failure, 5xx) tried again while the message is certainly
 * still this consumer's (the store recognises its own write applied by an earlier try, see
 * `IdempotencyStore`), and a missing table or a refused credential turned into a
 * {@link ConsumerResourceError} that ends the consumer instead of failing the message.
 */
import { MessageOwnershipLostError } from "./errors.js";
import { MAX_TRIES, type MessageHold } from "./hold.js";
import type { ClaimOutcome, ClaimRequest, IdempotencyClaim, IdempotencyStore } from "./idempotency/store.js";
import { isAmbiguous, isResourceFailure, resourceError, withTimeout } from "./requests.js";

export class StoreCalls<TEffect> {
  readonly store: IdempotencyStore<TEffect>;
  readonly #requestTimeoutInMs: number;

  constructor(store: IdempotencyStore<TEffect>, requestTimeoutInMs: number) {
    this.store = store;
    this.#requestTimeoutInMs = requestTimeoutInMs;
  }

  /** Checks the store (when it can be checked), for `start()`. */
  async check(abortSignal: AbortSignal): Promise<void> {
    const check = this.store.check?.bind(this.store);
    if (check)
      await this.#call(
        "check the idempotency store",
        undefined,
        (signal) => check({ abortSignal: signal }),
        abortSignal,
      );
  }

  claim(request: ClaimRequest, hold: MessageHold, abortSignal: AbortSignal): Promise<ClaimOutcome> {
    return this.#call(
      `claim idempotency key '${request.key}'`,
      hold,
      (signal) => this.store.claim(request, { abortSignal: signal }),
      abortSignal,
    );
  }

  extend(claim: IdempotencyClaim, ttlInMs: number, hold: MessageHold): Promise<IdempotencyClaim> {
    return this.#call(`extend the claim on idempotency key '${claim.key}'`, hold, (signal) =>
      this.store.extend(claim, ttlInMs, { abortSignal: signal }),
    );
  }

  complete(claim: IdempotencyClaim, result: unknown, effects: readonly TEffect[], hold: MessageHold): Promise<void> {
    return this.#call(`mark idempotency key '${claim.key}' done`, hold, (signal) =>
      this.store.complete(claim, { result, effects, abortSignal: signal }),
    );
  }

  /** Gives a claim up; one try (an unreleased claim expires with the visibility timeout anyway). */
  release(claim: IdempotencyClaim): Promise<void> {
    return this.#call(`release the claim on idempotency key '${claim.key}'`, undefined, (signal) =>
      this.store.release(claim, { abortSignal: signal }),
    );
  }

  async #call<R>(
    operation: string,
    hold: MessageHold | undefined,
    call: (abortSignal: AbortSignal) => Promise<R>,
    abortSignal?: AbortSignal,
  ): Promise<R> {
    for (let tries = 1; ; tries++) {
      try {
        return await withTimeout(operation, this.#requestTimeoutInMs, call, abortSignal);
      } catch (error) {
        if (isResourceFailure(error)) {
          throw resourceError("idempotencyStore", this.store.resourceName ?? this.store.name, operation, error);
        }
        const again = hold !== undefined && tries < MAX_TRIES && hold.remainingInMs() > 0 && !abortSignal?.aborted;
        if (!again || !isAmbiguous(error)) throw error;
      }
    }
  }
}

/** The error that reports a lost idempotency claim. */
export function claimLost(messageId: string, operation: string, cause: unknown): MessageOwnershipLostError {
  return new MessageOwnershipLostError(
    `Another consumer took over the idempotency claim of message '${messageId}'; its done mark and effects were not written.`,
    { messageId, lost: "claim", operation, cause },
  );
}
