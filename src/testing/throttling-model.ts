/**
 * A model of Azure Storage's throttling, for the fault proxy (`createFaultProxy({ throttling })`):
 * each partition and the account are served at a configured rate, and requests past it are
 * answered as the service answers them. Azurite has no partition servers and never throttles, so
 * this is the ground truth the adaptive limiter and the retry budget are measured against.
 *
 * What the service does, and where it is written:
 *
 * - "Scalability and performance targets for standard storage accounts": 20,000 requests per
 *   second per account; a table partition serves up to 2,000 entities per second (1 KiB entities),
 *   a queue 2,000 messages per second. "When your application reaches the limit of what a partition
 *   can handle for your workload, Azure Storage begins to return error code 503 (Server Busy) or
 *   error code 500 (Operation Timeout) responses." The defaults here are those targets.
 * - "Common REST API error codes": ServerBusy, 503, "The server is currently unable to receive
 *   requests. Please retry your request." for a partition; "Operations per second is over the
 *   account limit." (and the Ingress / Egress variants) for the account; OperationTimedOut, 500,
 *   "The operation could not be completed within the permitted time."
 * - The answer's shape, as the SDKs' recorded sessions show it (tests/unit/conformance): Blob and
 *   Queue send the code in `x-ms-error-code` and an XML body `<Error><Code>…</Code><Message>…
 *   RequestId:…\nTime:…</Message></Error>` (with a byte order mark); the Table service sends the
 *   code in the JSON body only (`odata.error`), no `x-ms-error-code`.
 *
 * The model: a token bucket per partition ({@link throttleScopeOf}: table partition, queue, blob)
 * and one for the account, refilled at their rates and holding at most `burstInMs` of it. A
 * request takes a token from each (an entity group transaction as many as it has operations, the
 * entities being what a partition's target counts); one that finds either bucket empty is refused,
 * not forwarded (the service applied nothing), and costs nothing. A share of the refusals may be
 * 500 OperationTimedOut instead, applied or not: the ambiguous answer a writer has to settle.
 * Rates can change while it runs ({@link ThrottlingModel.setRates}): a partition losing three
 * quarters of its capacity while the service rebalances, and getting it back.
 */
import type { IncomingHttpHeaders } from "node:http";
import { randomUUID } from "node:crypto";
import { throttleScopeOf, type StorageService } from "../throttling/index.js";
import { checkNumber } from "../internal/validate.js";

/** Options for the throttling model (`createFaultProxy({ target, throttling: { … } })`). */
export interface ThrottlingModelOptions {
  /**
   * Each partition's rate: table entities (a transaction counts its operations), queue requests or
   * blob requests per second.
   * @default 2000
   */
  readonly partitionRatePerSec?: number;
  /**
   * The account's rate, in requests per second (a transaction counts its operations).
   * @default 20000
   */
  readonly accountRatePerSec?: number;
  /**
   * A partition's own rate, when it differs from `partitionRatePerSec` (by its key, such as
   * `table:devstoreaccount1/orders/p1`); `undefined` keeps the common rate.
   */
  readonly partitionRate?: (partition: string) => number | undefined;
  /**
   * How much unused rate a bucket saves up, in milliseconds of its rate (at least one request's
   * worth): the burst a partition absorbs before it throttles. The service publishes no such
   * figure; a quarter of a second lets a read and its write through together on a slow partition.
   * @default 250
   */
  readonly burstInMs?: number;
  /**
   * The share (0 to 1) of refused requests answered 500 OperationTimedOut instead of 503 ServerBusy.
   * @default 0
   */
  readonly operationTimedOutShare?: number;
  /**
   * Whether a request answered 500 OperationTimedOut was applied first (forwarded, and its answer
   * replaced): the case where "the operation may or may not have succeeded".
   * @default false
   */
  readonly timedOutAfterApply?: boolean;
  /**
   * The proxied service, for requests whose URL does not say it (the proxy's port is not Azurite's).
   * @default guessed from the target's port (Azurite's 10000, 10001, 10002) or host name
   */
  readonly service?: StorageService;
  /** The random source of `operationTimedOutShare`. @default Math.random */
  readonly random?: () => number;
}

/** What the model counted since it started (or since {@link ThrottlingModel.resetStats}). */
export interface ThrottlingModelStats {
  /** Requests let through to the service. */
  readonly admitted: number;
  /** Requests refused with 503 ServerBusy (the partition's or the account's). */
  readonly serverBusy: number;
  /** Requests answered 500 OperationTimedOut. */
  readonly operationTimedOut: number;
  /** Of the refusals, those the account's limit made. */
  readonly accountRefusals: number;
  /** Per partition key: requests let through and refused. */
  readonly partitions: Readonly<
    Record<
      string,
      {
        /** Requests of the partition let through. */
        readonly admitted: number;
        /** Requests of the partition refused. */
        readonly refused: number;
      }
    >
  >;
}

/** The model of a fault proxy (`proxy.throttling`): change its rates, read what it counted. */
export interface ThrottlingModel {
  /** The rates now in force. */
  readonly rates: {
    /** The rate each partition is served at, per second. */
    readonly partitionRatePerSec: number;
    /** The rate the whole account is served at, per second. */
    readonly accountRatePerSec: number;
  };
  /**
   * Changes the rates from now on (buckets keep their tokens, up to their new size): a drop to a
   * quarter of the capacity and back, for instance.
   */
  setRates(rates: { readonly partitionRatePerSec?: number; readonly accountRatePerSec?: number }): void;
  /** What it counted. */
  stats(): ThrottlingModelStats;
  /** Starts counting again. */
  resetStats(): void;
}

/** The model's decision on one request. */
type ThrottlingDecision =
  | { readonly kind: "admit" }
  | {
      readonly kind: "refuse";
      /** 503 ServerBusy or 500 OperationTimedOut. */
      readonly statusCode: 503 | 500;
      /** Whether the account's limit (not the partition's) refused it. */
      readonly account: boolean;
      /** For a 500: forward it first (it is applied), then answer the error. */
      readonly afterApply: boolean;
    };

/** The request the model looks at. */
interface ModelledRequest {
  readonly method: string;
  /** The full URL (the proxy's own origin is fine: only the path and query are read, and the port for the service). */
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  /** The body, read for table inserts and transactions (their PartitionKey and operation count). */
  readonly body?: string | undefined;
}

interface Bucket {
  tokens: number;
  at: number;
}

/** The model itself, on an injectable clock (milliseconds). */
export class ThrottlingModelState implements ThrottlingModel {
  #partitionRate: number;
  #accountRate: number;
  readonly #burstInMs: number;
  readonly #timedOutShare: number;
  readonly #timedOutAfterApply: boolean;
  readonly #partitionRateOf: ((partition: string) => number | undefined) | undefined;
  readonly #service: StorageService | undefined;
  readonly #random: () => number;
  readonly #now: () => number;
  readonly #buckets = new Map<string, Bucket>();
  #stats = emptyStats();

  constructor(options: ThrottlingModelOptions, now: () => number = () => performance.now()) {
    this.#partitionRate = checkNumber("throttling.partitionRatePerSec", options.partitionRatePerSec ?? 2_000, {
      min: 0.01,
    });
    this.#accountRate = checkNumber("throttling.accountRatePerSec", options.accountRatePerSec ?? 20_000, {
      min: 0.01,
    });
    this.#burstInMs = checkNumber("throttling.burstInMs", options.burstInMs ?? 250, { min: 0, max: 86_400_000 });
    this.#timedOutShare = checkNumber("throttling.operationTimedOutShare", options.operationTimedOutShare ?? 0, {
      min: 0,
      max: 1,
    });
    this.#timedOutAfterApply = options.timedOutAfterApply ?? false;
    if (options.partitionRate !== undefined && typeof options.partitionRate !== "function")
      throw new TypeError("`throttling.partitionRate` must be a function of a partition key.");
    this.#partitionRateOf = options.partitionRate;
    if (options.service !== undefined && !["blob", "queue", "table", "file"].includes(options.service))
      throw new RangeError(`\`throttling.service\` must be "blob", "queue", "table" or "file".`);
    this.#service = options.service;
    this.#random = options.random ?? Math.random;
    this.#now = now;
  }

  get rates() {
    return { partitionRatePerSec: this.#partitionRate, accountRatePerSec: this.#accountRate };
  }

  setRates(rates: { readonly partitionRatePerSec?: number; readonly accountRatePerSec?: number }): void {
    const now = this.#now();
    // Settle every bucket at the old rates first, so the change applies from now on only.
    for (const [key, bucket] of this.#buckets) this.#refill(bucket, this.#rateOf(key), now);
    if (rates.partitionRatePerSec !== undefined)
      this.#partitionRate = checkNumber("partitionRatePerSec", rates.partitionRatePerSec, { min: 0.01 });
    if (rates.accountRatePerSec !== undefined)
      this.#accountRate = checkNumber("accountRatePerSec", rates.accountRatePerSec, { min: 0.01 });
  }

  stats(): ThrottlingModelStats {
    const s = this.#stats;
    return { ...s, partitions: Object.fromEntries([...s.partitions].map(([k, v]) => [k, { ...v }])) };
  }

  resetStats(): void {
    this.#stats = emptyStats();
  }

  /** Decides on one request: admit it (and take its tokens), or refuse it. */
  decide(request: ModelledRequest, defaultService?: StorageService): ThrottlingDecision {
    const isTable = request.headers["dataserviceversion"] !== undefined;
    const service = this.#service ?? defaultService ?? (isTable ? "table" : undefined);
    const scope = throttleScopeOf(request.url, { ...(service ? { service } : {}), body: request.body });
    const cost = operationsIn(request);
    const now = this.#now();
    const account = this.#bucket(scope.account, now);
    const partition = scope.partition === undefined ? undefined : this.#bucket(scope.partition, now);
    const accountShort = account.tokens < Math.min(cost, this.#capacity(scope.account));
    const partitionShort =
      partition !== undefined && partition.tokens < Math.min(cost, this.#capacity(scope.partition!));
    const tally = scope.partition === undefined ? undefined : this.#tally(scope.partition);
    if (!accountShort && !partitionShort) {
      account.tokens -= cost;
      if (partition) partition.tokens -= cost;
      this.#stats.admitted += 1;
      if (tally) tally.admitted += 1;
      return { kind: "admit" };
    }
    if (tally) tally.refused += 1;
    if (accountShort) this.#stats.accountRefusals += 1;
    if (this.#timedOutShare > 0 && this.#random() < this.#timedOutShare) {
      this.#stats.operationTimedOut += 1;
      if (this.#timedOutAfterApply) {
        // Applied all the same: it takes its tokens, as the work was done.
        account.tokens -= cost;
        if (partition) partition.tokens -= cost;
      }
      return { kind: "refuse", statusCode: 500, account: accountShort, afterApply: this.#timedOutAfterApply };
    }
    this.#stats.serverBusy += 1;
    return { kind: "refuse", statusCode: 503, account: accountShort, afterApply: false };
  }

  #tally(partition: string) {
    let tally = this.#stats.partitions.get(partition);
    if (!tally) this.#stats.partitions.set(partition, (tally = { admitted: 0, refused: 0 }));
    return tally;
  }

  #rateOf(key: string): number {
    if (key.startsWith("account:")) return this.#accountRate;
    return this.#partitionRateOf?.(key) ?? this.#partitionRate;
  }

  #capacity(key: string): number {
    return Math.max(1, (this.#rateOf(key) * this.#burstInMs) / 1000);
  }

  #bucket(key: string, now: number): Bucket {
    let bucket = this.#buckets.get(key);
    if (!bucket) {
      bucket = { tokens: this.#capacity(key), at: now };
      this.#buckets.set(key, bucket);
    }
    this.#refill(bucket, this.#rateOf(key), now);
    return bucket;
  }

  #refill(bucket: Bucket, rate: number, now: number): void {
    const capacity = Math.max(1, (rate * this.#burstInMs) / 1000);
    bucket.tokens = Math.min(capacity, bucket.tokens + ((now - bucket.at) * rate) / 1000);
    bucket.at = now;
  }
}

function emptyStats() {
  return {
    admitted: 0,
    serverBusy: 0,
    operationTimedOut: 0,
    accountRefusals: 0,
    partitions: new Map<string, { admitted: number; refused: number }>(),
  };
}

/** How many operations a request carries: a `$batch`'s request lines, else one. */
function operationsIn(request: ModelledRequest): number {
  if (request.body === undefined || !/\$batch(\?|$)/.test(request.url)) return 1;
  const lines = request.body.match(/^(?:POST|PUT|MERGE|PATCH|DELETE|GET) https?:\/\/\S+ HTTP\/1\.1\r?$/gm);
  return Math.max(1, lines?.length ?? 1);
}

/** What the service answers to a refused request: status, headers and body, per service. */
export function throttledAnswer(
  decision: Extract<ThrottlingDecision, { kind: "refuse" }>,
  request: { readonly headers: IncomingHttpHeaders },
  table: boolean,
): { statusCode: number; headers: Record<string, string | number>; body: string } {
  const code = decision.statusCode === 500 ? "OperationTimedOut" : "ServerBusy";
  const text =
    decision.statusCode === 500
      ? "The operation could not be completed within the permitted time."
      : decision.account
        ? "Operations per second is over the account limit."
        : "The server is currently unable to receive requests. Please retry your request.";
  const requestId = randomUUID();
  const message = `${text}\nRequestId:${requestId}\nTime:${new Date().toISOString()}`;
  const headers: Record<string, string | number> = {
    "x-ms-request-id": requestId,
    "x-ms-version": String(request.headers["x-ms-version"] ?? "2021-12-02"),
    date: new Date().toUTCString(),
  };
  const wantsJson = table && /json/i.test(String(request.headers.accept ?? "application/json"));
  let body: string;
  if (wantsJson) {
    // The Table service: the code in the JSON body only.
    body = JSON.stringify({ "odata.error": { code, message: { lang: "en-US", value: message } } });
    headers["content-type"] = "application/json;odata=minimalmetadata;streaming=true;charset=utf-8";
  } else {
    body = `\uFEFF<?xml version="1.0" encoding="utf-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`;
    headers["content-type"] = "application/xml";
    if (!table) headers["x-ms-error-code"] = code;
  }
  headers["content-length"] = Buffer.byteLength(body);
  return { statusCode: decision.statusCode, headers, body };
}
