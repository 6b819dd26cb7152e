/**
 * The consumer's background purge of its idempotency store: every `intervalInMs` (the first run at
 * a random time within the first interval, so that consumers started together spread out), one
 * `store.purge()` with the consumer's request time limit on each of its requests. Owned by the
 * consumer: started by `start()`, stopped by `stop()` (which aborts a run in flight and waits for
 * it); its timers never keep the process alive. Every run is reported: its result as `purged`, a
 * failure (or deletes that failed) as `error`; nothing is swallowed.
 */
import { logger } from "../internal/logger.js";
import type { IdempotencyStore, PurgeResult } from "../idempotency/index.js";

/** Deletes in flight at once in a background run: the consumer's own requests come first. */
const BACKGROUND_CONCURRENCY = 4;

interface BackgroundPurgeOptions {
  readonly intervalInMs: number;
  readonly requestTimeoutInMs: number;
  readonly onPurged: (result: PurgeResult) => void;
  readonly onError: (error: unknown) => void;
}

export class BackgroundPurge {
  readonly #purge: NonNullable<IdempotencyStore<unknown>["purge"]>;
  readonly #options: BackgroundPurgeOptions;
  readonly #abort = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #run: Promise<void> | undefined;

  constructor(store: IdempotencyStore<unknown>, options: BackgroundPurgeOptions) {
    this.#purge = store.purge!.bind(store);
    this.#options = options;
  }

  start(): void {
    this.#schedule(Math.random() * this.#options.intervalInMs);
  }

  /** Stops: no further run; a run in flight is aborted and waited for. */
  async stop(): Promise<void> {
    this.#abort.abort();
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#run;
  }

  #schedule(delayInMs: number): void {
    if (this.#abort.signal.aborted) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#run = this.#once().finally(() => {
        this.#run = undefined;
        this.#schedule(this.#options.intervalInMs);
      });
    }, delayInMs);
    this.#timer.unref();
  }

  async #once(): Promise<void> {
    let result: PurgeResult;
    try {
      result = await this.#purge({
        requestTimeoutInMs: this.#options.requestTimeoutInMs,
        maxConcurrency: BACKGROUND_CONCURRENCY,
        abortSignal: this.#abort.signal,
      });
    } catch (error) {
      if (!this.#abort.signal.aborted) this.#options.onError(error);
      return;
    }
    logger.info(
      `idempotency purge: ${result.deleted} of ${result.expired} expired records deleted, ${result.changed} in use again, ${result.failed} failed`,
    );
    this.#options.onPurged(result);
    if (result.failed > 0) {
      this.#options.onError(
        new Error(
          `${result.failed} of ${result.expired} expired idempotency records could not be deleted; the next purge tries again.`,
          { cause: result.errors[0] },
        ),
      );
    }
  }
}
