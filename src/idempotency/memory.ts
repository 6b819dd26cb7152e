/**
 * An idempotency store in one process's memory: for tests, examples and single-process workers.
 * It follows the same rules as the Table store (see {@link judgeExistingRecord}); its effects are
 * functions, run synchronously together with the done mark, so they are atomic with it within
 * the process. Nothing survives the process.
 *
 * Expired records (done records past their retention, claims past their expiry) are dropped by the
 * store itself: at most once a minute of its clock (MEMORY_SWEEP_INTERVAL_IN_MS), on the next
 * claim or done mark, it deletes them as `purge()` would (no timer: an idle store keeps the process
 * free to exit, and grows no more). So a long-running worker's memory holds about one retention
 * period of keys (about 1 KB each), not every key it ever saw.
 */
import { checkOptionalFunction } from "../internal/validate.js";
import { IdempotencyClaimLostError } from "./errors.js";
import { checkRetention, PurgeTally, resolvePurgeOptions } from "./purge.js";
import {
  DEFAULT_RETENTION_IN_MS,
  judgeExistingRecord,
  serializeResult,
  type ClaimOutcome,
  type ClaimRequest,
  type CompleteEntry,
  type CompleteOptions,
  type IdempotencyClaim,
  type IdempotencyStore,
  type PurgeOptions,
  type PurgeResult,
} from "./store.js";

/** How often, at most, the memory store drops its expired records by itself (on its clock). */
const MEMORY_SWEEP_INTERVAL_IN_MS = 60_000;

/** An effect the memory store runs together with the done mark. */
export type MemoryEffect = () => void;

/** Options for {@link MemoryIdempotencyStore}. */
export interface MemoryIdempotencyStoreOptions {
  /**
   * The clock, in milliseconds since the epoch (for tests that move time).
   * @default Date.now
   */
  readonly now?: () => number;
  /**
   * How long a done record keeps its key recognised, in milliseconds (as the Table store's).
   * @default 604800000 (7 days)
   */
  readonly retentionInMs?: number;
}

/** A `firstDelivery` claim: no record until its done mark, so it carries its delivery itself. */
interface PendingClaim extends IdempotencyClaim {
  readonly messageId: string;
  readonly dequeueCount: number;
}

interface MemoryRecord {
  status: "claimed" | "done";
  owner: string;
  messageId: string;
  dequeueCount: number;
  expiresOnMs: number;
  etag: string;
  resultJson: string | undefined;
  completedOn: Date | undefined;
  doneExpiresOnMs: number | undefined;
  payloadHash: string | undefined;
}

/** What {@link MemoryIdempotencyStore.inspect} shows of a key. */
export interface MemoryIdempotencyRecord {
  /** `claimed` while a consumer processes the key, `done` once it is marked done. */
  readonly status: "claimed" | "done";
  /** The consumer that claimed the key last (and completed it, when done). */
  readonly owner: string;
  /** The message whose delivery made the claim. */
  readonly messageId: string;
  /** When the claim expires (or expired) unless extended; kept as it was when the key was done. */
  readonly expiresOn: Date;
  /** The result kept with the done mark; undefined while claimed. */
  readonly result: unknown;
  /** When a done record's retention ends (the key then counts as new); undefined while claimed. */
  readonly doneExpiresOn: Date | undefined;
}

/**
 * An in-memory {@link IdempotencyStore}.
 *
 * @example
 * ```ts
 * import { MemoryIdempotencyStore } from "azure-storage-concurrency/idempotency";
 *
 * const store = new MemoryIdempotencyStore();
 * const outcome = await store.claim({ key: "order-1", owner: "me", messageId: "m1", dequeueCount: 1, ttlInMs: 30_000 });
 * if (outcome.status === "claimed") await store.complete(outcome.claim, { result: { ok: true } });
 * ```
 */
export class MemoryIdempotencyStore implements IdempotencyStore<MemoryEffect> {
  readonly name = "memory";
  readonly #records = new Map<string, MemoryRecord>();
  readonly #now: () => number;
  readonly #retentionInMs: number;
  #version = 0;
  #lastSweepMs: number;

  constructor(options: MemoryIdempotencyStoreOptions = {}) {
    checkOptionalFunction("now", options.now);
    this.#now = options.now ?? Date.now;
    this.#retentionInMs = checkRetention("retentionInMs", options.retentionInMs, DEFAULT_RETENTION_IN_MS);
    this.#lastSweepMs = this.#now();
  }

  /** How many records the store holds (claims and done records, expired ones not yet dropped). */
  get size(): number {
    return this.#records.size;
  }

  async claim(request: ClaimRequest): Promise<ClaimOutcome> {
    try {
      return this.#claim(request);
    } finally {
      this.#sweepIfDue(); // after the claim: an expired record it takes over is reported (`takenOverFrom`) first
    }
  }

  #claim(request: ClaimRequest): ClaimOutcome {
    const partitionKey = request.partitionKey ?? request.key;
    if (request.firstDelivery) {
      const claim: PendingClaim = {
        key: request.key,
        partitionKey,
        rowKey: request.key,
        etag: undefined,
        expiresOn: new Date(this.#now() + request.ttlInMs),
        owner: request.owner,
        takenOverFrom: undefined,
        messageId: request.messageId,
        dequeueCount: request.dequeueCount,
      };
      return { status: "claimed", claim };
    }
    const id = recordId(partitionKey, request.key);
    const existing = this.#records.get(id);
    let takenOverFrom: string | undefined;
    if (existing) {
      const verdict = judgeExistingRecord(existing, request, this.#now());
      if (verdict === "done") {
        const { resultJson, completedOn, payloadHash } = existing;
        return { status: "done", result: parse(resultJson), completedOn, payloadHash };
      }
      if (verdict === "busy") {
        const { owner, expiresOnMs, payloadHash } = existing;
        return { status: "busy", owner, expiresOn: new Date(expiresOnMs), payloadHash };
      }
      takenOverFrom = existing.owner;
    }
    const record: MemoryRecord = {
      status: "claimed",
      owner: request.owner,
      messageId: request.messageId,
      dequeueCount: request.dequeueCount,
      expiresOnMs: this.#now() + request.ttlInMs,
      etag: this.#nextEtag(),
      resultJson: undefined,
      completedOn: undefined,
      doneExpiresOnMs: undefined,
      payloadHash: request.payloadHash,
    };
    this.#records.set(id, record);
    return {
      status: "claimed",
      claim: this.#claimOf(request.partitionKey ?? request.key, request.key, record, takenOverFrom),
    };
  }

  async extend(claim: IdempotencyClaim, ttlInMs: number): Promise<IdempotencyClaim> {
    if (claim.etag === undefined) return this.#extendPending(claim, ttlInMs);
    const record = this.#held(claim, "extend");
    record.expiresOnMs = this.#now() + ttlInMs;
    record.etag = this.#nextEtag();
    return this.#claimOf(claim.partitionKey, claim.key, record, claim.takenOverFrom);
  }

  async complete(claim: IdempotencyClaim, options: CompleteOptions<MemoryEffect> = {}): Promise<void> {
    try {
      this.#complete(claim, options);
    } finally {
      this.#sweepIfDue();
    }
  }

  #complete(claim: IdempotencyClaim, options: CompleteOptions<MemoryEffect>): void {
    const resultJson = serializeResult(claim.key, options.result);
    const retentionInMs = checkRetention("retentionInMs", options.retentionInMs, this.#retentionInMs);
    const effects = options.effects ?? [];
    for (const effect of effects) {
      if (typeof effect !== "function")
        throw new TypeError("Effects for the memory idempotency store must be functions.");
    }
    const record = claim.etag === undefined ? this.#createForPending(claim) : this.#held(claim, "complete");
    for (const effect of effects) effect();
    record.status = "done";
    record.resultJson = resultJson;
    record.completedOn = new Date(this.#now());
    record.doneExpiresOnMs = this.#now() + retentionInMs;
    record.etag = this.#nextEtag();
    this.#records.set(recordId(claim.partitionKey, claim.key), record);
  }

  /** Completes each entry by itself (everything in memory is one atomic step); `false` for an entry whose claim was lost or whose result or effects were refused. */
  async completeMany(entries: readonly CompleteEntry<MemoryEffect>[]): Promise<readonly boolean[]> {
    const committed: boolean[] = [];
    for (const { claim, ...options } of entries) {
      committed.push(
        await this.complete(claim, options).then(
          () => true,
          () => false,
        ),
      );
    }
    return committed;
  }

  /**
   * Deletes the records that have expired by `olderThan` (default now, on the store's clock): done
   * records past their retention and claims past their expiry. Same rule as the Table store.
   */
  async purge(options: PurgeOptions = {}): Promise<PurgeResult> {
    const { olderThan, abortSignal } = resolvePurgeOptions(options, this.#now());
    const tally = new PurgeTally();
    for (const [id, record] of [...this.#records]) {
      abortSignal?.throwIfAborted();
      if (!expiredBy(record, olderThan.getTime())) continue;
      tally.expired += 1;
      this.#records.delete(id);
      tally.deleted += 1;
    }
    return tally.result();
  }

  /** Drops the expired records, at most once per MEMORY_SWEEP_INTERVAL_IN_MS of the store's clock. */
  #sweepIfDue(): void {
    const nowMs = this.#now();
    if (nowMs - this.#lastSweepMs < MEMORY_SWEEP_INTERVAL_IN_MS) return;
    this.#lastSweepMs = nowMs;
    for (const [id, record] of this.#records) if (expiredBy(record, nowMs)) this.#records.delete(id);
  }

  async release(claim: IdempotencyClaim): Promise<void> {
    if (claim.etag === undefined) return; // nothing was written
    const id = recordId(claim.partitionKey, claim.key);
    const record = this.#records.get(id);
    if (record && record.etag === claim.etag && record.status === "claimed") this.#records.delete(id);
  }

  /** The record of `key` (in `partitionKey`, when the consumer sets partitions), for tests. */
  inspect(key: string, partitionKey: string = key): MemoryIdempotencyRecord | undefined {
    const record = this.#records.get(recordId(partitionKey, key));
    if (!record) return undefined;
    return {
      status: record.status,
      owner: record.owner,
      messageId: record.messageId,
      expiresOn: new Date(record.expiresOnMs),
      result: parse(record.resultJson),
      doneExpiresOn: record.doneExpiresOnMs === undefined ? undefined : new Date(record.doneExpiresOnMs),
    };
  }

  #extendPending(claim: IdempotencyClaim, ttlInMs: number): IdempotencyClaim {
    if (this.#records.has(recordId(claim.partitionKey, claim.key))) throw this.#lost(claim, "extend");
    return { ...claim, expiresOn: new Date(this.#now() + ttlInMs) };
  }

  #createForPending(claim: IdempotencyClaim): MemoryRecord {
    const delivery = claim as Partial<PendingClaim>;
    const existing = this.#records.get(recordId(claim.partitionKey, claim.key));
    const live = existing?.doneExpiresOnMs === undefined || existing.doneExpiresOnMs > this.#now();
    if (existing?.status === "done" && live && existing.messageId !== delivery.messageId) {
      // Another message's delivery committed first: this one's effects are discarded, its message is a
      // duplicate. (Done by a later delivery of this same message: this one lost it, as in the Table store.)
      throw new IdempotencyClaimLostError(
        `Idempotency key '${claim.key}' was marked done by another delivery (message '${existing.messageId}') before this one's done mark.`,
        { key: claim.key, reason: "key-done", result: parse(existing.resultJson) },
      );
    }
    if (existing) throw this.#lost(claim, "complete");
    return {
      status: "claimed",
      owner: claim.owner,
      messageId: delivery.messageId ?? "",
      dequeueCount: delivery.dequeueCount ?? 1,
      expiresOnMs: claim.expiresOn.getTime(),
      etag: this.#nextEtag(),
      resultJson: undefined,
      completedOn: undefined,
      doneExpiresOnMs: undefined,
      payloadHash: undefined,
    };
  }

  #lost(claim: IdempotencyClaim, operation: string): IdempotencyClaimLostError {
    return new IdempotencyClaimLostError(
      `Could not ${operation} the claim on key '${claim.key}': another consumer took it over or it is gone.`,
      { key: claim.key },
    );
  }

  #held(claim: IdempotencyClaim, operation: string): MemoryRecord {
    const record = this.#records.get(recordId(claim.partitionKey, claim.key));
    if (!record || record.etag !== claim.etag || record.status !== "claimed") throw this.#lost(claim, operation);
    return record;
  }

  #claimOf(
    partitionKey: string,
    key: string,
    record: MemoryRecord,
    takenOverFrom: string | undefined,
  ): IdempotencyClaim {
    return {
      key,
      partitionKey,
      rowKey: key,
      etag: record.etag,
      expiresOn: new Date(record.expiresOnMs),
      owner: record.owner,
      takenOverFrom,
    };
  }

  #nextEtag(): string {
    this.#version += 1;
    return `"${this.#version}"`;
  }
}

/** The purge rule: a done record past its retention, a claim past its expiry. */
function expiredBy(record: MemoryRecord, nowMs: number): boolean {
  const expiresOnMs = record.status === "done" ? record.doneExpiresOnMs : record.expiresOnMs;
  return expiresOnMs !== undefined && expiresOnMs <= nowMs;
}

function recordId(partitionKey: string, key: string): string {
  return `${partitionKey}\u0000${key}`;
}

function parse(json: string | undefined): unknown {
  return json === undefined ? undefined : JSON.parse(json);
}
