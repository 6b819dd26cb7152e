/**
 * The batch handler: up to `batchSize` decoded messages at once (those of one receive), each with
 * its own context (key, claim, effects, signal), and an outcome per message, in the manner of
 * bbc/sqs-consumer's `handleMessageBatch` (which resolves with the messages it processed) and of
 * the partial batch responses of queue triggers. Everything around the handler is what a single
 * message gets: its heartbeat, its claim, its retries and poisoning, its own settling. With the
 * Table store, the done marks and effects of messages whose keys share a partition commit in
 * shared transactions (`idempotency/table-group.ts`).
 */
import type { MessageContext } from "./types.js";

/** One message of a batch: its decoded body, and the same context a single-message handler gets. */
export interface BatchMessage<T, TEffect = never> extends MessageContext<TEffect> {
  /** The decoded body. */
  readonly body: T;
}

/** What a {@link BatchMessageHandler} is given besides its messages. */
export interface BatchContext {
  /**
   * Aborted when the consumer stops and the grace period has run out ({@link ConsumerStoppedError})
   * or when the batch runs out of time ({@link HandlerTimeoutError}). Each message's own
   * `abortSignal` is aborted then too, and also when that message alone is lost.
   */
  readonly abortSignal: AbortSignal;
}

/**
 * The outcome of one message of a batch. `processed`: settle it (with an idempotency store, its
 * done mark keeps `result` and commits its effects); `failed`: fail this attempt (retry later,
 * poison at `maxDequeueCount`).
 */
export type BatchMessageOutcome =
  | {
      /** The message was processed. */
      readonly status: "processed";
      /** A small, JSON-serialisable result kept with its done mark. */
      readonly result?: unknown;
    }
  | {
      /** The message failed. */
      readonly status: "failed";
      /** Why (reported in the `failed` event and, at the last attempt, in the poison reason). */
      readonly error: unknown;
    };

/**
 * Processes a batch of decoded messages. Resolve with nothing when every message was processed, or
 * with one {@link BatchMessageOutcome} per message, in the batch's order; throw to fail every
 * message of the batch.
 */
export type BatchMessageHandler<T, TEffect = never> = (
  messages: readonly BatchMessage<T, TEffect>[],
  context: BatchContext,
) => Promise<readonly BatchMessageOutcome[] | void>;

/** A handler's outcome for one message, as the consumer settles it. */
export type AttemptOutcome =
  { readonly ok: true; readonly result: unknown } | { readonly ok: false; readonly error: unknown };

/** The batch handler's answer, one outcome per message; a malformed answer fails every message with a TypeError. */
export function outcomesOf(answer: unknown, count: number): AttemptOutcome[] {
  if (answer === undefined) return Array.from({ length: count }, () => ({ ok: true, result: undefined }));
  const malformed = (why: string): AttemptOutcome[] => {
    const error = new TypeError(
      `The batch handler resolved with ${why}: resolve with nothing (every message processed), or with one { status: "processed", result? } ` +
        `or { status: "failed", error } per message, in the batch's order (${count} here).`,
    );
    return Array.from({ length: count }, () => ({ ok: false, error }));
  };
  if (!Array.isArray(answer)) return malformed(typeof answer === "object" ? "an object" : `a ${typeof answer}`);
  if (answer.length !== count) return malformed(`${answer.length} outcomes for ${count} messages`);
  const outcomes: AttemptOutcome[] = [];
  for (const [index, outcome] of (answer as unknown[]).entries()) {
    const status = (outcome as { status?: unknown } | null)?.status;
    if (status === "processed") outcomes.push({ ok: true, result: (outcome as { result?: unknown }).result });
    else if (status === "failed") outcomes.push({ ok: false, error: (outcome as { error?: unknown }).error });
    else return malformed(`an outcome at position ${index} whose status is neither "processed" nor "failed"`);
  }
  return outcomes;
}
