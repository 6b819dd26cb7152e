/**
 * What the `optimistic` scenario and its writer processes (../workers/optimistic-writer.ts) tell each
 * other: the configuration a writer is started with, the tally it prints when done, and the backoffs
 * that `--backoff` can name.
 */
import {
  decorrelatedJitterBackoff,
  exponentialBackoff,
  fullJitterBackoff,
  type BackoffStrategy,
} from "azure-storage-concurrency/retry";

/** What one or more writers counted. */
export interface Tally {
  successes: number;
  requests: number;
  conflicts: number;
  /** The most rounds one update needed. */
  maxAttempts: number;
  /** Updates that needed more than 10 rounds: how close contention comes to the default `maxAttempts` (50). */
  overTenAttempts: number;
  /** Updates cancelled a while after the end of a timed race (each may or may not have been applied). */
  cancelled: number;
}

/** Configuration of a worker process. */
export interface WorkerConfig {
  readonly container: string;
  readonly blob: string;
  /**
   * `raw`: the raw SDK loop; `library`: optimisticUpdate with its defaults (a process's writers coalesce); `coalesced`: batches of
   * `writers` concurrent optimisticUpdate calls (coalescing on), `updatesPerWriter` batches;
   * `interleaved`: one writer per way (see `interleaved` in the writer), `updatesPerWriter` updates each.
   */
  readonly mode: "raw" | "library" | "coalesced" | "interleaved";
  readonly writers: number;
  readonly updatesPerWriter: number;
  /**
   * With `raw` and `library`: instead of `updatesPerWriter`, each writer keeps updating until this
   * long after the start, and the report counts the updates completed within that window (so that
   * no writer's last backoff stretches the measurement).
   */
  readonly durationInMs?: number | undefined;
  readonly skipReadAfterOwnWrite: boolean;
  readonly goFile: string;
  /** A backoff to try instead of the library's default (see {@link BACKOFFS}). */
  readonly backoff?: string | undefined;
}

/** What a worker process prints when done. */
export interface WorkerReport extends Tally {
  readonly startedAt: number;
  readonly finishedAt: number;
  /** Updates completed within `durationInMs` of the start (when it was given). */
  readonly successesInWindow: number;
  /** `raw` and `library`: the time each update counted in `successesInWindow` took, from its call to its success. */
  readonly latenciesMs?: readonly number[];
  /** The updates counted in `successesInWindow`, by writer of this process. */
  readonly writerSuccesses?: readonly number[];
  /** `interleaved` mode only. */
  readonly interleaved?: InterleavedReport;
}

/** The ways a single writer is measured in `interleaved` mode. */
export const INTERLEAVED_WAYS = ["raw", "rawWithHistoryHeader", "library", "librarySkippingReads"] as const;

/** Per way: total seconds, median milliseconds per update, requests per update. */
export type InterleavedReport = Record<
  (typeof INTERLEAVED_WAYS)[number],
  { seconds: number; medianMs: number; requestsPerUpdate: number }
>;

/** Backoffs the bench can try on the contended race (`--backoff name`). */
export const BACKOFFS: Readonly<Record<string, BackoffStrategy>> = {
  "full-jitter-10": fullJitterBackoff({ baseInMs: 10, maxInMs: 1_000 }),
  "full-jitter-5": fullJitterBackoff({ baseInMs: 5, maxInMs: 1_000 }),
  "full-jitter-20": fullJitterBackoff({ baseInMs: 20, maxInMs: 1_000 }),
  "decorrelated-5": decorrelatedJitterBackoff({ baseInMs: 5, maxInMs: 1_000 }),
  "decorrelated-10": decorrelatedJitterBackoff({ baseInMs: 10, maxInMs: 1_000 }),
  "decorrelated-10-250": decorrelatedJitterBackoff({ baseInMs: 10, maxInMs: 250 }),
  "decorrelated-20": decorrelatedJitterBackoff({ baseInMs: 20, maxInMs: 1_000 }),
  "exponential-5": exponentialBackoff({ deltaInMs: 5, minInMs: 2, maxInMs: 1_000 }),
};
