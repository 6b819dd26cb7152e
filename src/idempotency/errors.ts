/**
 * The errors of the idempotency stores and of {@link idempotent}: a claim lost to another caller, a
 * key reused for another payload, and a call whose key is being processed by another call right
 * now. Each extends {@link StorageConcurrencyError} and has a guard that checks the brand and the
 * `name`.
 */
import { isStorageConcurrencyError, StorageConcurrencyError } from "../errors.js";

/**
 * A call reused an idempotency key with a different payload than the call that claimed it: the
 * payload's hash differs from the one kept with the key's record. Nothing was run. Usually a client
 * bug (a key generated once and sent with two requests), which Stripe and AWS Powertools refuse the
 * same way; an HTTP API answers it with 422 or 409.
 */
export class IdempotencyPayloadMismatchError extends StorageConcurrencyError {
  /** The idempotency key. */
  readonly key: string;

  constructor(key: string, status: "done" | "in progress") {
    super(
      `The idempotency key '${key}' was used before with a different payload (its record is ${status}): ` +
        "a key stands for one request. Nothing was run; send a new key for a new request.",
      { code: "IdempotencyPayloadMismatch" },
    );
    this.name = "IdempotencyPayloadMismatchError";
    this.key = key;
  }
}

/**
 * True when `error` is an {@link IdempotencyPayloadMismatchError}.
 *
 * @example
 * ```ts
 * import { idempotent, isIdempotencyPayloadMismatchError, MemoryIdempotencyStore } from "azure-storage-concurrency/idempotency";
 *
 * const charge = idempotent(async (order: { id: string; amount: number }) => ({ charged: order.amount }), {
 *   store: new MemoryIdempotencyStore(),
 *   key: (order) => order.id,
 * });
 * await charge({ id: "order-1", amount: 10 });
 * try {
 *   await charge({ id: "order-1", amount: 99 });
 * } catch (error) {
 *   if (isIdempotencyPayloadMismatchError(error)) console.log(`422: ${error.message}`);
 * }
 * ```
 *
 * @deprecated Use `isStorageConcurrencyError(error, "IdempotencyPayloadMismatch")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isIdempotencyPayloadMismatchError(error: unknown): error is IdempotencyPayloadMismatchError {
  return isStorageConcurrencyError(error) && error.name === "IdempotencyPayloadMismatchError";
}

/**
 * Another call holds the key right now (a concurrent duplicate): with `whenInProgress: "reject"`
 * (the default) at once, with `"wait"` once `waitTimeoutInMs` has passed. Nothing was run; try
 * again later (an HTTP API answers 409 with `Retry-After`), and the retry gets the stored result.
 */
export class IdempotencyInProgressError extends StorageConcurrencyError {
  /** The idempotency key. */
  readonly key: string;
  /** Who holds the key's claim. */
  readonly owner: string;
  /** When that claim expires unless its holder extends it. */
  readonly expiresOn: Date;

  constructor(key: string, owner: string, expiresOn: Date, waitedInMs: number | undefined) {
    super(
      `The idempotency key '${key}' is being processed by another call (${owner}, claim until ${expiresOn.toISOString()})` +
        `${waitedInMs === undefined ? "" : `; waited ${Math.round(waitedInMs)} ms`}. Nothing was run: try again later to get its result.`,
      { code: "IdempotencyInProgress" },
    );
    this.name = "IdempotencyInProgressError";
    this.key = key;
    this.owner = owner;
    this.expiresOn = expiresOn;
  }
}

/**
 * True when `error` is an {@link IdempotencyInProgressError}.
 *
 * @example
 * ```ts
 * import { idempotent, isIdempotencyInProgressError, TableIdempotencyStore } from "azure-storage-concurrency/idempotency";
 *
 * declare function createInvoice(request: { requestId: string }): Promise<{ invoiceId: string }>;
 * const handle = idempotent(createInvoice, { store: new TableIdempotencyStore(tableClient), key: (r) => r.requestId });
 * try {
 *   await handle({ requestId: "r-1" });
 * } catch (error) {
 *   if (isIdempotencyInProgressError(error)) console.log(`409, retry after ${error.expiresOn.toISOString()}`);
 *   else throw error;
 * }
 * ```
 *
 * @deprecated Use `isStorageConcurrencyError(error, "IdempotencyInProgress")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isIdempotencyInProgressError(error: unknown): error is IdempotencyInProgressError {
  return isStorageConcurrencyError(error) && error.name === "IdempotencyInProgressError";
}

/**
 * Why an idempotency claim was given up: `"record-changed"`, its record changed since it was
 * claimed (another caller took it over after it expired) or is gone; `"expiry-guard"`, no extension
 * succeeded in time, so the claim may expire and go to another caller at any moment (the holder
 * gives it up before it can, as a lock gives up its lease); `"key-done"`, a claim that wrote no record
 * (a first delivery's, see `ClaimRequest.firstDelivery`) found the key done by another delivery when
 * its done mark was to be inserted: that delivery committed first, this one's effects are discarded
 * whole and its message is a duplicate.
 */
export type IdempotencyClaimLossReason = "record-changed" | "expiry-guard" | "key-done";

/**
 * An idempotency claim is no longer this caller's: its record changed since it was claimed
 * (another consumer took it over after it expired), or it was deleted (`reason` `"record-changed"`);
 * or no extension succeeded before the claim could expire (`"expiry-guard"`); or a claim that wrote
 * no record found the key done by another delivery (`"key-done"`, with that record's `result`). Thrown by
 * {@link IdempotencyStore} `extend` and `complete`, and by `idempotent()`; nothing was written when
 * it is thrown. `idempotent()` aborts `fn`'s signal with it.
 */
export class IdempotencyClaimLostError extends StorageConcurrencyError {
  /** The idempotency key. */
  readonly key: string;
  /** Why the claim was given up. */
  readonly reason: IdempotencyClaimLossReason;
  /** With `reason` `"key-done"`: the result kept by the delivery that marked the key done. */
  readonly result: unknown;

  constructor(
    message: string,
    options: {
      key: string;
      reason?: IdempotencyClaimLossReason | undefined;
      result?: unknown;
      statusCode?: number | undefined;
      serviceCode?: string | undefined;
      cause?: unknown;
    },
  ) {
    super(message, {
      code: "IdempotencyClaimLost",
      statusCode: options.statusCode,
      serviceCode: options.serviceCode,
      cause: options.cause,
    });
    this.name = "IdempotencyClaimLostError";
    this.key = options.key;
    this.reason = options.reason ?? "record-changed";
    this.result = options.result;
  }
}

/**
 * True when `error` is an {@link IdempotencyClaimLostError}.
 *
 * @example
 * ```ts
 * import { MemoryIdempotencyStore, isIdempotencyClaimLostError, type IdempotencyClaim } from "azure-storage-concurrency/idempotency";
 *
 * declare const store: MemoryIdempotencyStore;
 * declare const claim: IdempotencyClaim; // from an earlier store.claim(…)
 * try {
 *   await store.complete(claim, { result: "ok" });
 * } catch (error) {
 *   if (isIdempotencyClaimLostError(error)) console.log("someone else took the key over; nothing was written");
 *   else throw error;
 * }
 * ```
 *
 * @deprecated Use `isStorageConcurrencyError(error, "IdempotencyClaimLost")` (from the package root): one guard for every error, narrowed by its code.
 */
export function isIdempotencyClaimLostError(error: unknown): error is IdempotencyClaimLostError {
  return isStorageConcurrencyError(error) && error.name === "IdempotencyClaimLostError";
}
