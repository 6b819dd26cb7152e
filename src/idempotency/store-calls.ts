/**
 * The calls a holder of idempotency claims makes to its store (the queue consumer, `idempotent()`):
 * each under the client-side time limit, an ambiguous failure (time limit, network failure, 5xx)
 * tried again while the work is certainly still the caller's (the store recognises its own write
 * applied by an earlier try, see `IdempotencyStore`). A missing table or a refused credential is
 * thrown as the caller asks ({@link StoreCallsOptions.resourceFailure}: the consumer ends with a
 * `ConsumerResourceError` instead of failing the message), and so is a 403 on the transaction that
 * carries a key's effects ({@link StoreCallsOptions.effectsRefused}: the consumer fails that message
 * only, with an `EffectsRefusedError`).
 */
import { serviceCodeOf, statusOf } from "../errors.js";
import { withTimeLimit } from "../internal/time-limit.js";
import { classifyError } from "../retry/index.js";
import { isResourceFailure } from "../retry/internal.js";
import type { ClaimOutcome, ClaimRequest, IdempotencyClaim, IdempotencyStore } from "./store.js";

/** How many times an ambiguous call is tried, at most (and only within the caller's window). */
const MAX_TRIES = 3;

/**
 * How long the work is certainly still the caller's (a message's {@link MessageHold}, or the
 * claim's own expiry for `idempotent()`): an ambiguous call is tried again only within it.
 */
export interface HoldWindow {
  remainingInMs(): number;
}

/** One claim to complete in {@link StoreCalls.completeMany}. */
interface ClaimToComplete<TEffect> {
  readonly claim: IdempotencyClaim;
  readonly result: unknown;
  readonly effects: readonly TEffect[];
}

/** Options of {@link StoreCalls}. */
interface StoreCallsOptions {
  /** How long done records keep their keys (undefined: the store's default). */
  readonly retentionInMs?: number | undefined;
  /**
   * What a missing table or a refused credential is thrown as, given the operation ("claim
   * idempotency key 'k'") and the failure. Without it, the failure is thrown as the SDK reported it.
   */
  readonly resourceFailure?: ((operation: string, error: unknown) => Error) | undefined;
  /**
   * What a 403 refusing the transaction that carries a key's effects is thrown as (see
   * {@link isEffectsRefusal}), given the key and the failure. Without it, that 403 is a resource
   * failure like any other.
   */
  readonly effectsRefused?: ((key: string, error: unknown) => Error) | undefined;
}

export class StoreCalls<TEffect> {
  readonly store: IdempotencyStore<TEffect>;
  readonly #requestTimeoutInMs: number;
  readonly #retention: { readonly retentionInMs?: number };
  readonly #resourceFailure: StoreCallsOptions["resourceFailure"];
  readonly #effectsRefused: StoreCallsOptions["effectsRefused"];

  constructor(store: IdempotencyStore<TEffect>, requestTimeoutInMs: number, options: StoreCallsOptions = {}) {
    this.store = store;
    this.#requestTimeoutInMs = requestTimeoutInMs;
    this.#retention = options.retentionInMs === undefined ? {} : { retentionInMs: options.retentionInMs };
    this.#resourceFailure = options.resourceFailure;
    this.#effectsRefused = options.effectsRefused;
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

  claim(request: ClaimRequest, hold: HoldWindow, abortSignal: AbortSignal): Promise<ClaimOutcome> {
    return this.#call(
      `claim idempotency key '${request.key}'`,
      hold,
      (signal) => this.store.claim(request, { abortSignal: signal }),
      abortSignal,
    );
  }

  /** `abortSignal` abandons the extension (its holder gave the claim up). */
  extend(
    claim: IdempotencyClaim,
    ttlInMs: number,
    hold: HoldWindow,
    abortSignal?: AbortSignal,
  ): Promise<IdempotencyClaim> {
    return this.#call(
      `extend the claim on idempotency key '${claim.key}'`,
      hold,
      (signal) => this.store.extend(claim, ttlInMs, { abortSignal: signal }),
      abortSignal,
    );
  }

  /**
   * Marks the claim done with its effects. A 403 refusing the transaction that carries effects is
   * that key's failure ({@link StoreCallsOptions.effectsRefused}), not the caller's: see {@link isEffectsRefusal}.
   */
  complete(claim: IdempotencyClaim, result: unknown, effects: readonly TEffect[], hold: HoldWindow): Promise<void> {
    return this.#call(
      `mark idempotency key '${claim.key}' done`,
      hold,
      (signal) => this.store.complete(claim, { result, effects, ...this.#retention, abortSignal: signal }),
      undefined,
      effects.length > 0 ? claim.key : undefined,
    );
  }

  /**
   * Marks several claims done in shared writes when the store can (one try: what it did not
   * commit, `false`, is completed one by one with {@link complete}, which recognises a write that
   * landed); all `false` when it cannot.
   */
  async completeMany(entries: readonly ClaimToComplete<TEffect>[]): Promise<readonly boolean[]> {
    const completeMany = this.store.completeMany?.bind(this.store);
    if (!completeMany || entries.length < 2) return entries.map(() => false);
    const many = entries.map((entry) => ({ ...entry, ...this.#retention }));
    try {
      return await this.#call(`mark ${entries.length} idempotency keys done`, undefined, (signal) =>
        completeMany(many, { abortSignal: signal }),
      );
    } catch {
      return entries.map(() => false);
    }
  }

  /** Gives a claim up; one try (an unreleased claim expires anyway: with the visibility timeout, or the claim's duration). */
  release(claim: IdempotencyClaim): Promise<void> {
    return this.#call(`release the claim on idempotency key '${claim.key}'`, undefined, (signal) =>
      this.store.release(claim, { abortSignal: signal }),
    );
  }

  async #call<R>(
    operation: string,
    hold: HoldWindow | undefined,
    call: (abortSignal: AbortSignal) => Promise<R>,
    abortSignal?: AbortSignal,
    effectsOfKey?: string,
  ): Promise<R> {
    for (let tries = 1; ; tries++) {
      try {
        return await withTimeLimit(operation, this.#requestTimeoutInMs, abortSignal, call);
      } catch (error) {
        if (effectsOfKey !== undefined && this.#effectsRefused && isEffectsRefusal(error)) {
          throw this.#effectsRefused(effectsOfKey, error);
        }
        if (isResourceFailure(error)) throw this.#resourceFailure ? this.#resourceFailure(operation, error) : error;
        const again = hold !== undefined && tries < MAX_TRIES && hold.remainingInMs() > 0 && !abortSignal?.aborted;
        // Ambiguous: the request may have been applied, and trying again may succeed.
        if (!again || !classifyError(error).transient) throw error;
      }
    }
  }
}

/**
 * A 403 on the transaction that carries a key's effects, other than a credential refused outright
 * (AuthenticationFailed: a bad or expired key or SAS, which every request would meet). The caller's
 * own rows were writable (its claim, or the consumer's start check, went through); what was refused
 * is this transaction, whose rows the handler chose: one message's failure, not a reason for a
 * consumer to stop consuming the others. The store rethrows the transaction's own error only after
 * reading the row back (a refused read would be a resource failure, thrown as such).
 */
function isEffectsRefusal(error: unknown): boolean {
  return statusOf(error) === 403 && serviceCodeOf(error) !== "AuthenticationFailed";
}
