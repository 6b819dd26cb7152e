/**
 * What every store's purge shares: its options checked before any request, and the tally it
 * resolves with. The rule the stores follow is stated once, in `store.ts`: a purge deletes only
 * records that have expired (they already count as absent to every claim), and each one only if
 * it has not changed since the purge read it.
 */
import { checkNumber, checkOptionalSignal, optionalNumber } from "../internal/validate.js";
import type { PurgeOptions, PurgeResult } from "./store.js";

/** The default client-side time limit of one request of a purge. */
const DEFAULT_PURGE_REQUEST_TIMEOUT_IN_MS = 10_000;
/** How many failures a purge result keeps. */
const MAX_ERRORS = 10;

export interface ResolvedPurgeOptions {
  readonly olderThan: Date;
  readonly requestTimeoutInMs: number;
  readonly maxConcurrency: number;
  readonly abortSignal: AbortSignal | undefined;
}

/** Checks a purge's options (`nowMs`: the store's clock). */
export function resolvePurgeOptions(options: PurgeOptions, nowMs: number): ResolvedPurgeOptions {
  if (typeof options !== "object" || options === null) throw new TypeError("`options` must be an object.");
  const { olderThan } = options;
  if (olderThan !== undefined && (!(olderThan instanceof Date) || Number.isNaN(olderThan.getTime()))) {
    throw new TypeError("`olderThan` must be a valid Date.");
  }
  if (olderThan !== undefined && olderThan.getTime() > nowMs) {
    throw new RangeError(
      `\`olderThan\` (${olderThan.toISOString()}) is in the future: a record that has not expired yet still answers claims, ` +
        "so a purge deletes only records that expired by now or earlier. Shorten the retention instead.",
    );
  }
  checkOptionalSignal("abortSignal", options.abortSignal);
  return {
    olderThan: olderThan ?? new Date(nowMs),
    requestTimeoutInMs: optionalNumber(
      "requestTimeoutInMs",
      options.requestTimeoutInMs,
      DEFAULT_PURGE_REQUEST_TIMEOUT_IN_MS,
      { min: 1 },
    ),
    maxConcurrency: optionalNumber("maxConcurrency", options.maxConcurrency, 8, { min: 1, integer: true }),
    abortSignal: options.abortSignal,
  };
}

/** Checks a retention: at least one second. */
export function checkRetention(name: string, value: unknown, fallback: number): number {
  return value === undefined ? fallback : checkNumber(name, value, { min: 1_000 });
}

/** Counts what a purge did, and makes its {@link PurgeResult}. */
export class PurgeTally {
  expired = 0;
  deleted = 0;
  changed = 0;
  failed = 0;
  readonly #errors: unknown[] = [];
  readonly #started = performance.now();

  fail(error: unknown): void {
    this.failed += 1;
    if (this.#errors.length < MAX_ERRORS) this.#errors.push(error);
  }

  result(): PurgeResult {
    return {
      expired: this.expired,
      deleted: this.deleted,
      changed: this.changed,
      failed: this.failed,
      errors: [...this.#errors],
      durationInMs: performance.now() - this.#started,
    };
  }
}
