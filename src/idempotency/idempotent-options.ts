/**
 * The options of {@link idempotent}, checked once when the function is made (a TypeError or
 * RangeError naming the option, before any request), with their defaults.
 */
import { randomUUID } from "node:crypto";
import { checkNonEmptyString, checkOptionalFunction, optionalNumber } from "../internal/validate.js";
import { checkRetention } from "./purge.js";
import type { IdempotencyStore } from "./store.js";

/** Options of {@link idempotent}. */
export interface IdempotentOptions<I, TEffect = never> {
  /** Where the records live: a {@link TableIdempotencyStore} (shared by every process) or a {@link MemoryIdempotencyStore}. */
  readonly store: IdempotencyStore<TEffect>;
  /** The call's idempotency key, e.g. the request's `Idempotency-Key` header or an order id. */
  readonly key: (input: I) => string;
  /**
   * The record's partition (Table store), for effects that must commit with the done record in a
   * partition of your choosing.
   * @default the key
   */
  readonly partitionKey?: (input: I) => string;
  /**
   * What must be the same for a call to count as a duplicate: its hash is kept with the record, and
   * a call with the same key and another payload gets an {@link IdempotencyPayloadMismatchError}.
   * Leave out what legitimately varies between retries (a timestamp, a trace id).
   * @default the input
   */
  readonly payload?: (input: I) => unknown;
  /**
   * What a call does when another call holds the key right now: `"reject"` throws an
   * {@link IdempotencyInProgressError} at once (an HTTP API answers 409); `"wait"` waits for that
   * call and returns its stored result (or runs, if it failed), up to `waitTimeoutInMs`.
   * @default "reject"
   */
  readonly whenInProgress?: "reject" | "wait";
  /**
   * How long `"wait"` waits before giving up with an {@link IdempotencyInProgressError}.
   * @default 2 * claimDurationInMs
   */
  readonly waitTimeoutInMs?: number;
  /**
   * How long a claim lasts unless extended: the running call extends it every third of it, so this
   * is how soon another call can take over from a call whose process died. A call none of whose
   * extensions lands within it, less a margin of 1 s (at most a quarter of it), counted from the
   * send of the claim or of the last extension that landed, gives the claim up before it can
   * expire: `fn`'s signal is aborted with an {@link IdempotencyClaimLostError} and nothing is recorded.
   * @default 30000
   */
  readonly claimDurationInMs?: number;
  /**
   * How long done records keep their keys recognised, from completion.
   * @default the store's `retentionInMs` (7 days)
   */
  readonly retentionInMs?: number;
  /**
   * The client-side time limit of each store request (claim, extension, done record); must be
   * shorter than the claim's duration.
   * @default a quarter of claimDurationInMs, at most 10000
   */
  readonly requestTimeoutInMs?: number;
  /**
   * Who claims, as recorded in the records.
   * @default a random id per idempotent function
   */
  readonly owner?: string;
}

export function resolveIdempotentOptions<I, TEffect>(options: IdempotentOptions<I, TEffect>) {
  if (typeof options !== "object" || options === null)
    throw new TypeError("`options` must be an object with a `store` and a `key`.");
  const { store } = options;
  if (typeof store !== "object" || store === null || typeof store.claim !== "function") {
    throw new TypeError("`store` must be an IdempotencyStore (TableIdempotencyStore or MemoryIdempotencyStore).");
  }
  if (typeof options.key !== "function")
    throw new TypeError("`key` must be a function (input) => string: the call's idempotency key.");
  checkOptionalFunction("partitionKey", options.partitionKey);
  checkOptionalFunction("payload", options.payload);
  const whenInProgress = options.whenInProgress ?? "reject";
  if (whenInProgress !== "reject" && whenInProgress !== "wait")
    throw new TypeError(`\`whenInProgress\` must be "reject" or "wait", got ${JSON.stringify(whenInProgress)}.`);
  const claimDurationInMs = optionalNumber("claimDurationInMs", options.claimDurationInMs, 30_000, { min: 1_000 });
  const requestTimeoutInMs = optionalNumber(
    "requestTimeoutInMs",
    options.requestTimeoutInMs,
    Math.min(10_000, claimDurationInMs / 4),
    { min: 1 },
  );
  if (requestTimeoutInMs >= claimDurationInMs) {
    throw new RangeError(
      `\`requestTimeoutInMs\` (${requestTimeoutInMs}) must be shorter than \`claimDurationInMs\` (${claimDurationInMs}): ` +
        "an extension that hangs must be given up, and tried again, while the claim still holds.",
    );
  }
  return {
    store,
    key: options.key,
    partitionKey: options.partitionKey,
    payload: options.payload ?? ((input: I): unknown => input),
    whenInProgress,
    waitTimeoutInMs: optionalNumber("waitTimeoutInMs", options.waitTimeoutInMs, 2 * claimDurationInMs, { min: 0 }),
    claimDurationInMs,
    retentionInMs:
      options.retentionInMs === undefined ? undefined : checkRetention("retentionInMs", options.retentionInMs, 0),
    requestTimeoutInMs,
    owner: options.owner === undefined ? `idempotent-${randomUUID()}` : checkNonEmptyString("owner", options.owner),
  };
}
