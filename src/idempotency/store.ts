/**
 * The idempotency store port: what the queue consumer (and {@link idempotent}) needs to turn
 * at-least-once delivery into exactly-once effects. One record per idempotency key moves through
 *
 *   (absent) --claim--> claimed --complete--> done --expires--> (absent again)
 *                 ^          |                  |
 *                 |       release (the handler failed) / expires (the consumer died)
 *                 +----------+                  +--purge--> (row deleted)
 *
 * in the manner of the "in progress records with an expiry" of AWS Powertools' idempotency
 * utility (https://docs.powertools.aws.dev/lambda/typescript/latest/features/idempotency/):
 *
 * - `claim` inserts the record if absent. An existing `done` record answers "done" (the handler is
 *   not run again); a live claim of someone else answers "busy". A claim whose expiry has passed,
 *   or one made for an earlier delivery of the same message (the queue made the message visible
 *   again, so its previous holder no longer owns it), is taken over by a write conditioned on the
 *   record's ETag, so that of two consumers racing to take over, exactly one wins.
 * - `extend` pushes the expiry forward while the handler runs (the consumer's heartbeat).
 * - `complete` turns the claim into a `done` mark with a small result, conditioned on the ETag, and
 *   can commit the handler's effects in the same atomic write when the store supports it.
 * - `release` gives the claim up after a failure, so the next delivery can claim it at once.
 * - A done record keeps its key recognised until its expiry (`ExpiresOn`, the completion time plus
 *   the retention); after it, the key counts as new whether or not the row is still there, so
 *   `purge` (which deletes expired records, each only if unchanged since it read it) never changes
 *   what a claim answers. Azure Tables has no TTL: without a purge, rows stay.
 *
 * One shortcut: when the key is the message id and this is the message's first delivery
 * (`firstDelivery`), no other consumer can hold or have finished the key (the queue has never
 * handed this message out before), so a store may write nothing at claim time and create the
 * record together with the done mark, as an insert that fails if anyone wrote the key meanwhile
 * (a redelivery of the same message, received because this consumer lost it). That saves one
 * request per message and changes no guarantee.
 *
 * The same deferred claim serves any key when every effect of the handler is committed with the
 * done mark (the consumer's `idempotency.effects: "tables-only"`, issue 27): another delivery of the
 * key (a producer's duplicate, a redelivery) may then run at the same time, but only one done mark
 * can be inserted, and the effects travel in its atomic write, so the loser's effects are discarded
 * whole. Its `complete` throws {@link IdempotencyClaimLostError} with reason `"key-done"` (and the
 * winner's result) when it finds the key done by another delivery: its message is a duplicate.
 *
 * Implementations: {@link TableIdempotencyStore} (Azure Table Storage, the inbox table) and
 * {@link MemoryIdempotencyStore} (one process; tests).
 */
import { describeError } from "../internal/describe-error.js";

/** What {@link IdempotencyStore.claim} is asked to claim. */
export interface ClaimRequest {
  /** The idempotency key: the message id by default, or a key derived from the body. */
  readonly key: string;
  /**
   * The partition the record lives in, for stores that have partitions (Azure Tables). Effects
   * committed atomically with the done mark must be in this partition.
   */
  readonly partitionKey?: string | undefined;
  /** Who claims: the consumer's id, recorded for diagnostics. */
  readonly owner: string;
  /** The message being processed ({@link idempotent}: an id of the call). */
  readonly messageId: string;
  /** Its dequeue count for this delivery. A claim made for a lower count of the same message can be taken over. */
  readonly dequeueCount: number;
  /** How long the claim lasts unless extended (the consumer uses the visibility timeout). */
  readonly ttlInMs: number;
  /**
   * Write no record now: the done mark creates it, as an insert that fails if the key has a record
   * by then. The consumer sets it on a message's first delivery (`dequeueCount` 1) when the key is
   * the message id (no record can exist yet), or when the handler's effects are tables-only (a
   * record may exist: `complete` then fails, with reason `"key-done"` when the key is done). A store
   * may ignore it and claim as usual.
   * @default false
   */
  readonly firstDelivery?: boolean;
  /**
   * A hash of the payload the key stands for ({@link idempotent} sets it), kept with the record so
   * that a later call with the same key and another payload can be told apart.
   */
  readonly payloadHash?: string | undefined;
}

/** A claim held by one consumer. Treat it as opaque: stores return a new one on each extension. */
export interface IdempotencyClaim {
  /** The idempotency key claimed. */
  readonly key: string;
  /** The record's partition (stores without partitions echo the request's or use the key). */
  readonly partitionKey: string;
  /** The record's row key, for stores with rows (the Table store); the key otherwise. */
  readonly rowKey: string;
  /**
   * The record's version: every write is conditioned on it. `undefined` when nothing was written
   * yet (a `firstDelivery` claim): the done mark is then an insert that fails if the key exists.
   */
  readonly etag: string | undefined;
  /** When the claim expires unless extended. */
  readonly expiresOn: Date;
  /** The consumer holding the claim (the request's `owner`). */
  readonly owner: string;
  /** The owner this claim was taken over from, if it was taken over. */
  readonly takenOverFrom?: string | undefined;
}

/** The answer of {@link IdempotencyStore.claim}. */
export type ClaimOutcome =
  /** The key is this consumer's to process now. */
  | {
      /** `"claimed"`: run the handler. */
      readonly status: "claimed";
      /** The claim to extend, complete or release. */
      readonly claim: IdempotencyClaim;
    }
  /** The key was processed already: settle the message without running the handler. */
  | {
      /** `"done"`: do not run the handler again. */
      readonly status: "done";
      /** The result kept with the done mark (undefined if the handler resolved to nothing). */
      readonly result: unknown;
      /** When the key was marked done, when the store recorded it. */
      readonly completedOn: Date | undefined;
      /** The payload hash the record was claimed with, if any. */
      readonly payloadHash: string | undefined;
    }
  /** Another consumer holds a live claim on the key (a duplicate message being processed right now). */
  | {
      /** `"busy"`: try again once the other claim has expired or been settled. */
      readonly status: "busy";
      /** The consumer holding the claim. */
      readonly owner: string;
      /** When that claim expires unless its holder extends it. */
      readonly expiresOn: Date;
      /** The payload hash the claim was made with, if any. */
      readonly payloadHash: string | undefined;
    };

/** What {@link IdempotencyStore.complete} writes. */
export interface CompleteOptions<TEffect> {
  /** A small, JSON-serialisable result kept with the done mark and handed to later duplicates. */
  readonly result?: unknown;
  /** Effects to commit atomically with the done mark (stores that support it; see each store). */
  readonly effects?: readonly TEffect[];
  /**
   * How long the done record keeps the key recognised, in milliseconds from now.
   * @default the store's `retentionInMs`
   */
  readonly retentionInMs?: number;
  /** Cancels the write (stores that make requests). */
  readonly abortSignal?: AbortSignal;
}

/** One claim to mark done in {@link IdempotencyStore.completeMany}. */
export interface CompleteEntry<TEffect> {
  /** The claim. */
  readonly claim: IdempotencyClaim;
  /** Its small result. */
  readonly result?: unknown;
  /** Its effects, committed with its done mark. */
  readonly effects?: readonly TEffect[];
  /** As {@link CompleteOptions.retentionInMs}. */
  readonly retentionInMs?: number;
}

/** Options of {@link IdempotencyStore.purge}. */
export interface PurgeOptions {
  /**
   * Delete the records that had expired by this time: done records whose retention ran out, and
   * claims whose holder stopped extending them. It may not be later than now (a record that has
   * not expired yet still answers claims); pass an earlier time to keep a margin.
   * @default now
   */
  readonly olderThan?: Date;
  /**
   * The client-side time limit of each request the purge makes (a page of the scan, one delete).
   * @default 10000
   */
  readonly requestTimeoutInMs?: number;
  /**
   * How many deletes may be in flight at once.
   * @default 8
   */
  readonly maxConcurrency?: number;
  /** Stops the purge: what is deleted stays deleted, the rest waits for the next purge. */
  readonly abortSignal?: AbortSignal;
}

/** What {@link IdempotencyStore.purge} did. */
export interface PurgeResult {
  /** Expired records found by the scan. */
  readonly expired: number;
  /** Of those, records deleted (or found gone already). */
  readonly deleted: number;
  /** Records left in place because they changed after the scan read them (claimed or completed again). */
  readonly changed: number;
  /** Records whose delete failed (the next purge tries again); see `errors`. */
  readonly failed: number;
  /** The first few failures (at most 10). */
  readonly errors: readonly unknown[];
  /** How long the purge took, in milliseconds. */
  readonly durationInMs: number;
}

/** Options of the other store calls. */
export interface IdempotencyStoreCallOptions {
  /** Cancels the call (stores that make requests). */
  readonly abortSignal?: AbortSignal;
}

/**
 * An idempotency store. `TEffect` is what can be committed atomically with the done mark
 * (`never` for stores that cannot).
 *
 * The consumer calls each method under a client-side time limit (`abortSignal`) and calls `claim`,
 * `extend` and `complete` again after an ambiguous failure (a time limit, a network failure, a
 * 5xx), while the message is still certainly its own: a store that makes requests must recognise
 * its own write applied by an earlier try whose answer was lost, as {@link TableIdempotencyStore}
 * does by reading the record back.
 */
export interface IdempotencyStore<TEffect = never> {
  /** A short name for logs and benchmark reports. */
  readonly name: string;
  /** The storage resource the store works on (a table's name), for error messages; stores in memory have none. */
  readonly resourceName?: string;
  /**
   * Checks that the store can be used (for a table: that it exists and this credential may read
   * it); rejects with the service's error otherwise. The consumer calls it in `start()`.
   */
  check?(options?: IdempotencyStoreCallOptions): Promise<void>;
  /** Claims `request.key`, or says it is done or busy. */
  claim(request: ClaimRequest, options?: IdempotencyStoreCallOptions): Promise<ClaimOutcome>;
  /** Extends a claim to `ttlInMs` from now; throws {@link IdempotencyClaimLostError} if it is no longer held. */
  extend(claim: IdempotencyClaim, ttlInMs: number, options?: IdempotencyStoreCallOptions): Promise<IdempotencyClaim>;
  /**
   * Marks the key done with a small result, and commits `effects` in the same atomic write;
   * throws {@link IdempotencyClaimLostError} (and writes nothing) if the claim is no longer held.
   */
  complete(claim: IdempotencyClaim, options?: CompleteOptions<TEffect>): Promise<void>;
  /** Gives a claim up after a failure. Does nothing if the claim is no longer held. */
  release(claim: IdempotencyClaim, options?: IdempotencyStoreCallOptions): Promise<void>;
  /**
   * Marks several claims done in as few atomic writes as the store allows (the Table store: one
   * entity group transaction per partition, within 100 operations and 4 MiB). Resolves with one
   * boolean per entry: `true` when its done mark and effects were committed; `false` when this
   * call did not commit them (an entry alone in its partition, or a write that failed as a whole
   * because one claim in it was lost): call {@link complete} for it, which writes or recognises
   * it one by one. Never throws for one entry's sake.
   */
  completeMany?(
    entries: readonly CompleteEntry<TEffect>[],
    options?: IdempotencyStoreCallOptions,
  ): Promise<readonly boolean[]>;
  /**
   * Deletes the records that have expired (see {@link PurgeOptions.olderThan}), each only if it
   * has not changed since the purge read it, so a key claimed or completed meanwhile is never
   * deleted.
   */
  purge?(options?: PurgeOptions): Promise<PurgeResult>;
}

/** How long a done record keeps its key recognised by default: 7 days, the default time to live of a queue message. */
export const DEFAULT_RETENTION_IN_MS = 7 * 24 * 3_600_000;

/** The largest result a done mark keeps, in UTF-16 code units of its JSON (an Azure Table string property holds 32 K). */
export const MAX_RESULT_JSON_LENGTH = 30_000;

/** Serialises a handler's result for a done mark, refusing results that are too large or not JSON. */
export function serializeResult(key: string, result: unknown): string | undefined {
  if (result === undefined) return undefined;
  let json: string | undefined;
  try {
    json = JSON.stringify(result);
  } catch (error) {
    throw new TypeError(`The handler's result for key '${key}' is not JSON-serialisable: ${describeError(error)}.`);
  }
  if (json === undefined) throw new TypeError(`The handler's result for key '${key}' is not JSON-serialisable.`);
  if (json.length > MAX_RESULT_JSON_LENGTH) {
    throw new RangeError(
      `The handler's result for key '${key}' is ${json.length} characters of JSON; a done mark keeps at most ${MAX_RESULT_JSON_LENGTH}. ` +
        "Return a small result (an id, a status) and store large outputs elsewhere.",
    );
  }
  return json;
}

/** What a store knows about an existing record, for {@link judgeExistingRecord}. */
interface ExistingRecord {
  readonly status: "claimed" | "done";
  readonly messageId: string | undefined;
  readonly dequeueCount: number | undefined;
  /** When the claim expires (a claimed record). */
  readonly expiresOnMs: number | undefined;
  /** When the done record's retention ends (undefined: never, a record written before retention existed). */
  readonly doneExpiresOnMs?: number | undefined;
}

/**
 * The one rule every store applies to a key that already has a record: a done record is done
 * until its retention ends, and then counts as absent (it is taken over like an expired claim,
 * whether or not a purge has deleted it yet); a claim may be taken over when it has expired, or
 * when it was made for an earlier delivery of the same message (the queue only hands a message
 * out again once its previous holder's visibility timeout has run out, so that holder no longer
 * owns it); any other claim is busy.
 */
export function judgeExistingRecord(
  record: ExistingRecord,
  request: ClaimRequest,
  nowMs: number,
): "done" | "busy" | "take-over" {
  if (record.status === "done") {
    return record.doneExpiresOnMs !== undefined && record.doneExpiresOnMs <= nowMs ? "take-over" : "done";
  }
  if (record.expiresOnMs === undefined || record.expiresOnMs <= nowMs) return "take-over";
  if (record.messageId === request.messageId && (record.dequeueCount ?? 0) < request.dequeueCount) return "take-over";
  return "busy";
}
