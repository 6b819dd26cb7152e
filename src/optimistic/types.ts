/**
 * The optimistic engine's public types: what `mutate` is and is told, the options of
 * {@link optimisticUpdate} and its result.
 */
import type { OperationTracingOptions } from "../observability/scope.js";
import type { BackoffStrategy } from "../retry/index.js";
import type { AdaptiveRateLimiter } from "../throttling/index.js";

/**
 * Return this from `mutate` to leave the cell as it is (the update resolves with `written: false`).
 *
 * @example
 * ```ts
 * import { blobJsonCell, optimisticUpdate, SKIP_WRITE } from "azure-storage-concurrency/optimistic";
 *
 * declare const email: string;
 * const profile = blobJsonCell<{ email: string; displayName?: string }>(container.getBlockBlobClient("profiles/42.json"));
 * await optimisticUpdate(profile, (current) => (current?.email === email ? SKIP_WRITE : { ...current, email }));
 * ```
 */
export const SKIP_WRITE: unique symbol = Symbol.for("azure-storage-concurrency.skip-write");

/** What `mutate` is told besides the current value. */
export interface MutationContext {
  /** The round's attempt, 1 for the first; `mutate` runs again on each attempt. */
  readonly attempt: number;
  /** The ETag of the stored version the attempt started from; `undefined` when the cell is absent. */
  readonly etag: string | undefined;
  /** The caller's `abortSignal` (one that never aborts when the caller gave none), for any call `mutate` makes. */
  readonly abortSignal: AbortSignal;
}

/**
 * Computes the new value from the current one (`undefined` when the cell does not exist). It may
 * run several times (once per attempt), so it must not have side effects beyond its result. Return
 * {@link SKIP_WRITE} to write nothing. Returning `undefined` is refused (a forgotten `return`).
 */
export type Mutation<T> = (
  current: T | undefined,
  context: MutationContext,
) => T | typeof SKIP_WRITE | PromiseLike<T | typeof SKIP_WRITE>;

/** Told before the engine waits and tries again after a conflict. */
export interface OptimisticConflictEvent {
  /** The cell, in words. */
  readonly cell: string;
  /** The attempt that met the conflict (1 for the first). */
  readonly attempt: number;
  /** How long the engine waits before reading again. */
  readonly delayInMs: number;
  /** The service's answer (412, or 409 when creating). */
  readonly error: unknown;
}

/** Options for {@link optimisticUpdate}. */
export interface OptimisticUpdateOptions {
  /** Cancels the update. A write already sent may still be applied. */
  readonly abortSignal?: AbortSignal;
  /**
   * As the Azure SDK's operations take them: `tracingContext` is the parent of the update's span
   * (`asc.optimistic.update`), and so of the SDK's spans under it. Default: the active context.
   */
  readonly tracingOptions?: OperationTracingOptions;
  /**
   * Send the update's reads and writes when the cell's partition's adaptive rate allows (see
   * docs/throttling.md): a partition the service throttles is slowed down, not hammered.
   * @default undefined (requests go out at once)
   */
  readonly rateLimiter?: AdaptiveRateLimiter;
  /**
   * How many read-modify-write rounds to try before giving up with {@link OptimisticConflictError}.
   * On a contended cell a writer waiting for its turn tries every few request times, so several
   * processes hammering one cell need tens of rounds for some updates.
   * @default 50
   */
  readonly maxAttempts?: number;
  /**
   * How long to wait after a conflict before reading again.
   * @default backoffPresets.contention (full jitter, 10 ms up to 1 s)
   */
  readonly backoff?: BackoffStrategy;
  /**
   * When this process made the last successful write to the cell, start from the value and ETag it
   * wrote instead of reading (a 412 then means someone else wrote since: the engine reads and goes on).
   * @default true
   */
  readonly skipReadAfterOwnWrite?: boolean;
  /**
   * Let concurrent updates of the same cell within this process share one read-modify-write round:
   * their mutations run in call order on one value and one write stores them all. Each caller still
   * gets its own outcome. The round runs with the options of the call that opened it.
   * @default true
   */
  readonly coalesce?: boolean;
  /** Called before each wait after a conflict, e.g. to log contention. */
  readonly onConflict?: (event: OptimisticConflictEvent) => void;
  /**
   * Client-side time limit on each request the engine makes on its own to settle a write whose
   * outcome was ambiguous (reading the cell back, sending the same write again), the SDK's own
   * retries included. The SDK's `tryTimeoutInMs` is a server-side timeout and does not stop a wait
   * on a dead connection.
   * @default 30_000
   */
  readonly recoveryTimeoutInMs?: number;
  /**
   * Client-side time limit on each request the engine sends through the cell: every read, and
   * every write (the SDK's own retries included). A write cut off by it is a lost answer, settled
   * as one (read back, recognised by its write id, or sent again with the same condition), never
   * counted as a refusal; a read cut off by it fails the update with a transient
   * `StorageRequestError` (code `RequestTimedOut`), nothing written.
   * @default 30_000
   */
  readonly requestTimeoutInMs?: number;
}

/**
 * The outcome of {@link optimisticUpdate} (and {@link writeIfMatch}). Narrow it on `written`: after
 * `if (result.written)`, `value` is the value written (`T`, never `undefined`).
 */
export type OptimisticUpdateResult<T> =
  | {
      /** Your `mutate` returned a value, and it was written. */
      readonly written: true;
      /** The value your `mutate` returned, as written. */
      readonly value: T;
      /**
       * The ETag of the stored version that holds your write. When your update shared a round with
       * later ones (see `coalesced`), or a lost response was recovered after others wrote on top,
       * that version also holds their changes: read again before a further `If-Match` write based
       * on `value`.
       */
      readonly etag: string | undefined;
      /** How many read-modify-write rounds were needed (1 without conflicts). */
      readonly attempts: number;
      /** True when a write's response was lost and the engine found, by reading back, that it was applied. */
      readonly recoveredLostResponse: boolean;
      /** How many updates shared the round's write, yours included (1 without coalescing). */
      readonly coalesced: number;
    }
  | {
      /** Your `mutate` returned {@link SKIP_WRITE}: nothing was written for you. */
      readonly written: false;
      /**
       * The value your `mutate` was given when it skipped (`undefined` if the cell does not exist);
       * from {@link writeIfMatch}, the cell's current value.
       */
      readonly value: T | undefined;
      /** The ETag of the stored version you skipped on (`undefined` if the cell does not exist). */
      readonly etag: string | undefined;
      /** How many read-modify-write rounds were needed (1 without conflicts). */
      readonly attempts: number;
      /** True when the round's write (of updates that shared your round) had its response lost and was found applied. */
      readonly recoveredLostResponse: boolean;
      /** How many updates shared the round's write, yours not among them (0 when none wrote). */
      readonly coalesced: number;
    };
