/**
 * The pipeline's settle step (`pipeline.ts` lists the steps): settling the attempts of a handler
 * call (one message, or a batch): a message processed has its claim completed (done mark and
 * effects; the claims of a batch that share a partition in shared transactions) and is deleted; a message that failed has its claim released and is retried after
 * `retryBackoff`, or poisoned at `maxDequeueCount` (a {@link HandlerTimeoutError} counts as a
 * failure); a message whose handler was aborted by `stop()` is put back at once, without counting;
 * a message or claim lost is reported as `ownershipLost`. Missing resources and refused credentials
 * are thrown ({@link ConsumerResourceError}): they end the consumer, never a message.
 */
import { logger } from "../internal/logger.js";
import { runInScope } from "../observability/scope.js";
import type { AttemptOutcome } from "./batch.js";
import { claimLost } from "./requests.js";
import {
  ConsumerStoppedError,
  isConsumerResourceError,
  isConsumerStoppedError,
  isHandlerTimeoutError,
  isMessageOwnershipLostError,
} from "./errors.js";
import { isIdempotencyClaimLostError } from "../idempotency/index.js";
import { serializeResult, type IdempotencyClaim } from "../idempotency/internal.js";
import { MAX_VISIBILITY_TIMEOUT_IN_SECONDS } from "./options.js";
import { describe } from "./message-settler.js";
import type { ReceivedQueueMessage } from "./types.js";
import type { ProcessingContext, Work } from "./pipeline.js";

export class AttemptSettler<T, TEffect> {
  readonly #c: ProcessingContext<T, TEffect>;

  constructor(context: ProcessingContext<T, TEffect>) {
    this.#c = context;
  }

  /** Settles each Work of a handler call by its outcome; `durationInMs`: how long the handler took. */
  async settle(works: readonly Work<T, TEffect>[], outcomes: readonly AttemptOutcome[], durationInMs: number) {
    await Promise.all(works.map((work) => work.heartbeat.stop()));
    const processed: { work: Work<T, TEffect>; result: unknown }[] = [];
    const failed: Promise<void>[] = [];
    works.forEach((work, index) => {
      const outcome = outcomes[index]!;
      const reason: unknown = work.controller.signal.aborted ? work.controller.signal.reason : undefined;
      if (!outcome.ok) {
        // Aborted by stop(), by a lost message or claim, or by a failing consumer; a time-out is a failure.
        const aborted = reason !== undefined && !isHandlerTimeoutError(reason);
        failed.push(
          runInScope(work.trace, () => (aborted ? this.afterAbort(work, reason) : this.fail(work, outcome.error))),
        );
      } else if (work.lostError?.lost === "claim") {
        // The handler finished although it was told the claim was lost: its done mark cannot be written.
        this.#c.settle.lost(work.message, work.lostError);
      } else {
        processed.push({ work, result: outcome.ok ? outcome.result : undefined });
      }
    });
    await Promise.all([...failed, this.#complete(processed, durationInMs)]);
  }

  /**
   * Completes the claims of processed messages (grouped where the store can), then deletes the
   * messages. A result the done mark cannot keep (too large, or not JSON) does not undo the work:
   * the key is marked done without it, as `idempotent()` does, so the handler never runs again for
   * it, and `resultNotKept` says so.
   */
  async #complete(processed: readonly { work: Work<T, TEffect>; result: unknown }[], durationInMs: number) {
    const store = this.#c.store;
    const marks = processed.map(({ work, result }) => ({ work, result, ...doneMarkResult(work, result) }));
    // A claim whose guard has passed gets no done mark (its work is reported lost, below).
    const withClaims = store ? marks.filter(({ work }) => work.claim && !work.claimGuard?.check()) : [];
    const committed = store
      ? await store.completeMany(
          withClaims.map(({ work, kept }) => ({ claim: work.claim!, result: kept, effects: work.effects })),
        )
      : [];
    const completeOne = async ({ work, result, kept, refused }: (typeof marks)[number]) => {
      const { message, hold, claim } = work;
      const index = withClaims.findIndex((p) => p.work === work);
      if (store && claim && !committed[index]) {
        if (work.claimGuard?.check()) return this.#c.settle.lost(message, work.lostError!); // given up: see claim-guard.ts
        try {
          await store.complete(claim, kept, work.effects, hold);
        } catch (error) {
          if (isIdempotencyClaimLostError(error) && error.reason === "key-done")
            return this.#duplicate(work, claim, error.result);
          if (isIdempotencyClaimLostError(error))
            this.#c.settle.lost(message, claimLost(message.messageId, "complete-claim", error));
          else if (isConsumerResourceError(error)) throw error;
          else await this.fail(work, error);
          return;
        }
      }
      if (claim && refused !== undefined) {
        logger.warning(
          `message ${message.messageId}: its key '${claim.key}' was marked done without its result (${describe(refused)})`,
        );
        this.#c.events.emit("resultNotKept", { message, key: claim.key, error: refused });
      }
      if (work.lostError) {
        // Done (and its done mark written, while the claim was still ours), but the message may be someone else's now.
        this.#c.settle.remember(message.messageId, {
          kind: "done",
          key: claim?.key ?? message.messageId,
          result: kept,
        });
        return this.#c.settle.lost(message, work.lostError);
      }
      await this.#deleteDone(work, result, kept, durationInMs);
    };
    // Each message's own requests nest under its span (a batch's shared transactions do not).
    await Promise.all(marks.map((done) => runInScope(done.work.trace, () => completeOne(done))));
  }

  /**
   * Deletes a message whose work is done; remembers it (with `kept`, what its done mark holds) when
   * it cannot be deleted (see `message-settler.ts`).
   */
  async #deleteDone(work: Work<T, TEffect>, result: unknown, kept: unknown, durationInMs: number): Promise<void> {
    const { message, hold } = work;
    const status = await this.#c.settle.delete(message, hold);
    if (status === "lost") return;
    if (status !== "done") {
      this.#c.settle.remember(message.messageId, {
        kind: "done",
        key: work.claim?.key ?? message.messageId,
        result: kept,
      });
    }
    if (status === "unknown") return;
    this.#c.events.emit("processed", { message, result, durationInMs, messageDeleted: status === "done" });
  }

  /**
   * A delivery whose done mark found its key done by another delivery (a claim that wrote no record,
   * `effects: "tables-only"`): its effects were discarded with the failed insert, and its message is
   * deleted as a duplicate, as if the claim had answered "done" before the handler ran.
   */
  async #duplicate(work: Work<T, TEffect>, claim: IdempotencyClaim, result: unknown): Promise<void> {
    const { message, hold } = work;
    logger.verbose(
      `message ${message.messageId}: its key '${claim.key}' was done by another delivery; effects discarded`,
    );
    if ((await this.#c.settle.delete(message, hold)) === "done")
      this.#c.events.emit("duplicate", { message, key: claim.key, result });
  }

  /** The handler (or claim) failed because its signal was aborted: by `stop()`, a lost message or claim, or a failure of the consumer. */
  async afterAbort(work: Work<T, TEffect>, reason: unknown): Promise<void> {
    const { message, hold, claim } = work;
    // The consumer is failing: its resources are gone or refused; the message comes back by itself.
    if (isConsumerResourceError(reason)) return;
    if (isMessageOwnershipLostError(reason)) {
      if (claim && reason.lost === "message") await this.#releaseClaim(message, claim);
      this.#c.settle.lost(message, reason);
      return;
    }
    // Stopped: give the message back at once, without counting it as a failure of the message.
    if (claim) await this.#releaseClaim(message, claim);
    if (await this.#c.settle.release(message, hold)) {
      const error = isConsumerStoppedError(reason) ? reason : new ConsumerStoppedError();
      this.#c.events.emit("failed", { message, error, willRetry: true, retryInSeconds: 0 });
    }
  }

  /**
   * A failed attempt: release the claim, then retry after `retryBackoff` or poison at
   * `maxDequeueCount`; never poison without `mayPoison` (a claim that got no answer: the key may be
   * done, see `claim.ts`).
   */
  async fail(work: Work<T, TEffect>, error: unknown, { mayPoison = true } = {}): Promise<void> {
    const { message, hold, claim } = work;
    const { options, settle, events } = this.#c;
    if (isConsumerResourceError(error)) throw error;
    if (claim) await this.#releaseClaim(message, claim);
    if (hold.state === "receiptLost") {
      // It cannot be updated any more: it comes back when the visibility timeout of the update that landed ends.
      const retryInSeconds = Math.max(0, Math.ceil(hold.remainingInMs() / 1000));
      events.emit("failed", { message, error, willRetry: true, retryInSeconds });
      return;
    }
    if (mayPoison && message.dequeueCount >= options.maxDequeueCount) {
      events.emit("failed", { message, error, willRetry: false, retryInSeconds: undefined });
      const reason = `Failed on each of ${message.dequeueCount} receptions (maxDequeueCount ${options.maxDequeueCount}); last error: ${describe(error)}`;
      await settle.poison(message, hold, reason, error);
      return;
    }
    const delayInMs = options.retryBackoff.delayInMs(message.dequeueCount, 0);
    const retryInSeconds = Math.min(MAX_VISIBILITY_TIMEOUT_IN_SECONDS, Math.max(0, Math.ceil(delayInMs / 1000)));
    const status = await settle.setVisibility(message, hold, retryInSeconds);
    if (status === "done" || status === "receiptLost") {
      logger.verbose(
        `message ${message.messageId} failed on reception ${message.dequeueCount} (${describe(error)}); visible again in ${retryInSeconds} s`,
      );
      events.emit("failed", { message, error, willRetry: true, retryInSeconds });
    }
  }

  /** Poisons a message whose key the store has just claimed for it (so not done): releases the claim first. */
  async poisonClaimed(work: Work<T, TEffect>, reason: string): Promise<void> {
    const { message, hold, claim } = work;
    if (claim) await this.#releaseClaim(message, claim);
    await this.#c.settle.poison(message, hold, reason, undefined);
  }

  /** Ends a Work: its heartbeat stopped, its controller forgotten, its `addEffects` closed. */
  async finish(work: Work<T, TEffect>): Promise<void> {
    work.closed = true;
    work.claimGuard?.stop();
    this.#c.controllers.delete(work.controller);
    await work.heartbeat.stop();
  }

  async #releaseClaim(message: ReceivedQueueMessage, claim: IdempotencyClaim): Promise<void> {
    try {
      await this.#c.store!.release(claim);
    } catch (error) {
      if (isConsumerResourceError(error)) throw error;
      // It expires with the visibility timeout anyway.
      this.#c.settle.reportError(error, "release the idempotency claim", message);
    }
  }
}

/**
 * What the done mark of `work` keeps of the handler's result: the result itself, or (with a claim)
 * nothing when the store would refuse it (`refused`: why), so that the key is still marked done.
 */
function doneMarkResult(work: { readonly claim: IdempotencyClaim | undefined }, result: unknown) {
  if (!work.claim) return { kept: result, refused: undefined };
  try {
    serializeResult(work.claim.key, result);
    return { kept: result, refused: undefined };
  } catch (error) {
    return { kept: undefined, refused: error };
  }
}
