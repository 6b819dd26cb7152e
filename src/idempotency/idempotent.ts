/**
 * `idempotent(fn, { store, key })`: exactly-once for any async function (an HTTP handler, a
 * webhook, a job), on the same idempotency stores as the queue consumer, in the manner of AWS
 * Powertools' `makeIdempotent` (https://docs.powertools.aws.dev/lambda/typescript/latest/features/idempotency/):
 *
 * 1. The call's key is claimed (an insert; a take-over of an expired claim or of an expired done
 *    record is conditioned on the record's ETag), with a hash of its payload.
 * 2. A key that is done answers with the stored result, without running `fn`, when the payload
 *    hash matches, and with an {@link IdempotencyPayloadMismatchError} when it does not. A key held
 *    by another call right now gets an {@link IdempotencyInProgressError} at once, or after
 *    waiting for that call (`whenInProgress: "wait"`).
 * 3. While `fn` runs, its claim is extended every third of `claimDurationInMs` (`held-claim.ts`).
 *    A local expiry guard on two clocks gives the claim up before it can expire when no extension
 *    lands in time (the store unreachable, its answers hanging), as a lock gives up its lease; a
 *    claim given up, or taken over by another call meanwhile, aborts `fn`'s signal with an
 *    {@link IdempotencyClaimLostError} and refuses its done mark.
 * 4. `fn`'s result is kept with the done record (JSON, at most {@link MAX_RESULT_JSON_LENGTH}
 *    characters), together with its effects (`addEffects`, the Table store: in the same entity
 *    group transaction). A result that cannot be kept still marks the key done: every call with
 *    the key, the first included, then gets a RangeError that says so, and `fn` never runs again.
 * 5. `fn` throws: the claim is released and the error passes through; a later call runs again.
 *
 * Every request runs under `requestTimeoutInMs`; an ambiguous failure (time limit, network, 5xx)
 * is tried again while the claim certainly holds, and the store recognises its own write applied
 * by an earlier try (the same mechanism as the consumer's, `claims.ts`).
 */
import { randomUUID } from "node:crypto";
import { logger } from "../internal/logger.js";
import { sleep } from "../internal/sleep.js";
import { checkNonEmptyString, checkOptionalSignal } from "../internal/validate.js";
import { checkedOnRead, sentNow, type SentAt } from "../lease/internal.js";
import { safetyMarginInMs } from "./claim-guard.js";
import { StoreCalls, type HoldWindow } from "./store-calls.js";
import { isIdempotencyClaimLostError } from "./errors.js";
import { IdempotencyInProgressError, IdempotencyPayloadMismatchError } from "./errors.js";
import { HeldClaim } from "./held-claim.js";
import { resolveIdempotentOptions, type IdempotentOptions } from "./idempotent-options.js";
import { payloadHash } from "./payload-hash.js";
import { serializeResult, type ClaimRequest, type IdempotencyClaim } from "./store.js";
import { describeError } from "../internal/describe-error.js";

/** What `fn` is given besides its input. */
export interface IdempotentContext<TEffect = never> {
  /** The call's idempotency key. */
  readonly key: string;
  /** The record's partition (Table store): effects committed with the done record must be in it. */
  readonly partitionKey: string;
  /**
   * Aborted when the caller's `abortSignal` aborts, or when the claim can no longer be counted on
   * (an {@link IdempotencyClaimLostError}: another call took the key over, or no extension landed
   * in time and the claim was given up before it could expire). Pass it to everything `fn` awaits
   * and check it before each external effect: once it is aborted, another call may run `fn` for
   * the same key, and this call's result is not recorded. Reading `aborted` (or `reason`,
   * `throwIfAborted()`) checks the claim's expiry guard first, so it is up to date even after the
   * event loop was blocked or the machine suspended.
   */
  readonly abortSignal: AbortSignal;
  /** The call whose claim this one took over (it stalled or died), if any. */
  readonly takenOverFrom: string | undefined;
  /**
   * Adds effects committed atomically with the done record (Table store: transaction actions in
   * `partitionKey`; memory store: functions): exactly once per key.
   */
  readonly addEffects: (...effects: TEffect[]) => void;
}

/** Options of one call of an {@link IdempotentFunction}. */
export interface IdempotentCallOptions {
  /** Cancels the call: its claim, its wait, and (through its signal) `fn`. */
  readonly abortSignal?: AbortSignal;
}

/**
 * The function {@link idempotent} returns: the same input, and `fn`'s result as it was kept with
 * the done record, through JSON: the first call and every duplicate get the same value (a `Date`
 * comes back as its ISO text, a `Map` as `{}`, `undefined` properties are left out).
 */
export type IdempotentFunction<I, R> = (input: I, options?: IdempotentCallOptions) => Promise<JsonRoundTrip<R>>;

/**
 * What a value of type `T` becomes after `JSON.parse(JSON.stringify(value))`, the form in which
 * {@link idempotent} keeps and returns results: a `Date` (anything with `toJSON()`) becomes what
 * `toJSON()` returns, functions, symbols and `undefined` properties are left out, a top-level
 * `undefined` stays `undefined` (no result is kept).
 *
 * @example
 * ```ts
 * import type { JsonRoundTrip } from "azure-storage-concurrency/idempotency";
 *
 * type Stored = JsonRoundTrip<{ chargeId: string; at: Date; note?: string }>; // { chargeId: string; at: string; note?: string }
 * ```
 */
export type JsonRoundTrip<T> = T extends undefined ? undefined : JsonValueOf<T>;

/** {@link JsonRoundTrip} of a value inside a JSON document (`never`: left out). */
export type JsonValueOf<T> = T extends {
  /** What `JSON.stringify` writes in the value's place (a `Date`'s ISO string, for example). */
  toJSON(): infer J;
}
  ? JsonValueOf<J>
  : T extends string | number | boolean | null
    ? T
    : T extends undefined | symbol | ((...args: never[]) => unknown)
      ? never
      : T extends readonly (infer E)[]
        ? (JsonValueOf<E> | ([E] extends [JsonValueOf<E>] ? never : null))[]
        : T extends object
          ? { [K in keyof T as [JsonValueOf<T[K]>] extends [never] ? never : K]: JsonValueOf<T[K]> }
          : never;

/** Marks a done record whose result could not be kept. */
const REFUSED_RESULT = "__azureStorageConcurrencyRefusedResult";

/**
 * Makes `fn` exactly-once per key: a duplicate call returns the stored result without running
 * `fn`; the same key with a different payload is refused; concurrent duplicates wait or are
 * refused (`whenInProgress`). See `docs/queue-processing.md` for the guarantees.
 *
 * @param fn - the work, given the input and an {@link IdempotentContext} (pass its `abortSignal` on).
 * @param options - the store and how a call's key (and payload) are derived; see {@link IdempotentOptions}.
 *
 * @example
 * ```ts
 * import { TableClient, type TransactionAction } from "@azure/data-tables";
 * import { idempotent, TableIdempotencyStore } from "azure-storage-concurrency/idempotency";
 *
 * interface ChargeRequest { idempotencyKey: string; customerId: string; amount: number }
 * declare function chargeCard(request: ChargeRequest, signal: AbortSignal): Promise<{ chargeId: string }>;
 *
 * const inbox = TableClient.fromConnectionString(connectionString, "requests");
 * const charge = idempotent<ChargeRequest, { chargeId: string }, TransactionAction>(
 *   async (request, { abortSignal, addEffects, partitionKey }) => {
 *     const { chargeId } = await chargeCard(request, abortSignal);
 *     // Written with the done record, in one transaction: exactly once.
 *     addEffects(["create", { partitionKey, rowKey: `charge-${chargeId}`, amount: request.amount }]);
 *     return { chargeId };
 *   },
 *   { store: new TableIdempotencyStore(inbox), key: (request) => request.idempotencyKey, whenInProgress: "wait" },
 * );
 *
 * // In an HTTP handler: a retried request gets the first one's result; chargeCard ran once.
 * const { chargeId } = await charge({ idempotencyKey: "9c1f…", customerId: "c-7", amount: 25 });
 * ```
 */
export function idempotent<I, R, TEffect = never>(
  fn: (input: I, context: IdempotentContext<TEffect>) => Promise<R>,
  options: IdempotentOptions<I, TEffect>,
): IdempotentFunction<I, R> {
  return idempotentDelivery(fn, options, () => ({ messageId: `call-${randomUUID()}`, dequeueCount: 1 }));
}

/** Which delivery of a message a call is: the queue message's id and dequeue count, or a call's own id and 1. */
interface Delivery {
  readonly messageId: string;
  readonly dequeueCount: number;
}

/**
 * {@link idempotent} for calls that are deliveries of queue messages (the Azure Functions queue
 * trigger): a claim made for an earlier delivery of the same message (a lower dequeue count) is
 * taken over at once, since the queue hands a message out again only after its previous holder's
 * visibility ended (the rule of `judgeExistingRecord`, as for the consumer).
 */
export function idempotentDelivery<I, R, TEffect = never>(
  fn: (input: I, context: IdempotentContext<TEffect>) => Promise<R>,
  options: IdempotentOptions<I, TEffect>,
  delivery: (input: I) => Delivery,
): IdempotentFunction<I, R> {
  if (typeof fn !== "function") throw new TypeError("`fn` must be an async function (input, context) => result.");
  const o = resolveIdempotentOptions(options);
  // Not a consumer: a missing table or a refused credential is thrown as the SDK reported it.
  const calls = new StoreCalls(o.store, o.requestTimeoutInMs, { retentionInMs: o.retentionInMs });

  return async (input: I, callOptions: IdempotentCallOptions = {}): Promise<JsonRoundTrip<R>> => {
    if (typeof callOptions !== "object" || callOptions === null) throw new TypeError("`options` must be an object.");
    checkOptionalSignal("abortSignal", callOptions.abortSignal);
    const abortSignal = callOptions.abortSignal ?? new AbortController().signal;
    const key = checkNonEmptyString("the key (`key(input)`)", o.key(input));
    const partitionKey = o.partitionKey?.(input);
    const request: ClaimRequest = {
      key,
      partitionKey,
      owner: o.owner,
      ...delivery(input),
      ttlInMs: o.claimDurationInMs,
      payloadHash: payloadHash(o.payload(input)),
    };
    const acquired = await acquire(calls, request, o, abortSignal);
    if (acquired.done) return resultOf<JsonRoundTrip<R>>(key, acquired.result);
    return runHeld(calls, acquired, (context) => fn(input, context), o.claimDurationInMs, abortSignal);
  };
}

/** Claims the key; or the stored result of a done key; throws for another payload or a key in progress. */
async function acquire<TEffect>(
  calls: StoreCalls<TEffect>,
  request: ClaimRequest,
  o: {
    readonly claimDurationInMs: number;
    readonly whenInProgress: "reject" | "wait";
    readonly waitTimeoutInMs: number;
  },
  abortSignal: AbortSignal,
): Promise<{ done: true; result: unknown } | { done: false; claim: IdempotencyClaim; sent: SentAt }> {
  const started = performance.now();
  const lifetimeInMs = o.claimDurationInMs - safetyMarginInMs(o.claimDurationInMs);
  let pollInMs = 50;
  for (;;) {
    // The claim lasts its duration from this send at least: the store computes its expiry later.
    const sent = sentNow();
    const window: HoldWindow = {
      remainingInMs: () => lifetimeInMs - Math.max(performance.now() - sent.monotonic, Date.now() - sent.wall),
    };
    const outcome = await calls.claim(request, window, abortSignal);
    if (outcome.status === "claimed") return { done: false, claim: outcome.claim, sent };
    if (outcome.payloadHash !== undefined && outcome.payloadHash !== request.payloadHash) {
      throw new IdempotencyPayloadMismatchError(request.key, outcome.status === "done" ? "done" : "in progress");
    }
    if (outcome.status === "done") return { done: true, result: outcome.result };
    const waitedInMs = performance.now() - started;
    const left = o.waitTimeoutInMs - waitedInMs;
    if (o.whenInProgress === "reject" || left <= 0) {
      throw new IdempotencyInProgressError(
        request.key,
        outcome.owner,
        outcome.expiresOn,
        o.whenInProgress === "wait" ? waitedInMs : undefined,
      );
    }
    pollInMs = Math.min(pollInMs * 2, 1_000);
    const untilExpiry = Math.max(0, outcome.expiresOn.getTime() - Date.now()) + 50;
    await sleep(Math.min(pollInMs, untilExpiry, left), abortSignal);
  }
}

/**
 * Runs `run` while its claim is held (extended, and given up by its expiry guard: `held-claim.ts`),
 * then writes the done record with its result and effects, only while the claim still holds.
 */
async function runHeld<R, TEffect>(
  calls: StoreCalls<TEffect>,
  acquired: { readonly claim: IdempotencyClaim; readonly sent: SentAt },
  run: (context: IdempotentContext<TEffect>) => Promise<R>,
  claimDurationInMs: number,
  abortSignal: AbortSignal,
): Promise<JsonRoundTrip<R>> {
  const { claim } = acquired;
  const controller = new AbortController();
  const held = new HeldClaim(calls, claim, acquired.sent, claimDurationInMs, (lost) => controller.abort(lost));
  const onAbort = () => controller.abort(abortSignal.reason);
  abortSignal.addEventListener("abort", onAbort, { once: true });
  if (abortSignal.aborted) onAbort();
  const effects: TEffect[] = [];
  let open = true;
  try {
    let result: R;
    try {
      result = await run({
        key: claim.key,
        partitionKey: claim.partitionKey,
        abortSignal: checkedOnRead(controller.signal, () => held.lost),
        takenOverFrom: claim.takenOverFrom,
        addEffects: (...added: TEffect[]) => {
          if (!open) throw new Error(`addEffects() after the call with key '${claim.key}' ended: not committed.`);
          effects.push(...added);
        },
      });
    } catch (error) {
      open = false;
      await held.stopExtending();
      await release(calls, held.claim);
      throw error;
    } finally {
      abortSignal.removeEventListener("abort", onAbort);
    }
    open = false;
    await held.stopExtending();
    // Taken over, or given up by the guard: nothing is recorded (the done mark checks again before it is sent).
    const lost = held.lost;
    if (lost) throw lost;
    let refused: Error | undefined;
    let stored: unknown = result;
    let json: string | undefined;
    try {
      json = serializeResult(claim.key, result);
    } catch (error) {
      refused = error as Error;
      stored = { [REFUSED_RESULT]: refused.message };
    }
    try {
      await held.complete(stored, effects);
    } catch (error) {
      if (!isIdempotencyClaimLostError(error)) await release(calls, held.claim);
      throw error;
    }
    if (refused) throw refusedResult(claim.key, refused.message);
    // What a duplicate will get: the kept JSON, not `fn`'s own object (so that every call sees the same value).
    return (json === undefined ? undefined : JSON.parse(json)) as JsonRoundTrip<R>;
  } finally {
    held.end();
  }
}

/** Gives the claim up after a failure (it expires by itself anyway); a failure here is logged, never thrown. */
async function release<TEffect>(calls: StoreCalls<TEffect>, claim: IdempotencyClaim): Promise<void> {
  try {
    await calls.release(claim);
  } catch (error) {
    logger.warning(
      `idempotent(): could not release the claim on '${claim.key}' (it expires by itself): ${describeError(error)}`,
    );
  }
}

/** A stored result (as `fn` returned it, through JSON), or the RangeError of one that could not be kept. */
function resultOf<R>(key: string, stored: unknown): R {
  const refused = (stored as Record<string, unknown> | null)?.[REFUSED_RESULT];
  if (typeof stored === "object" && stored !== null && typeof refused === "string") throw refusedResult(key, refused);
  return stored as R;
}

function refusedResult(key: string, why: string): RangeError {
  return new RangeError(
    `The call with idempotency key '${key}' ran once and its effects were committed, but its result could not be kept ` +
      `with the done record (${why}): every call with this key gets this error instead of the result.`,
  );
}
