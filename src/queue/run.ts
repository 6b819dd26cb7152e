/**
 * The pipeline's run step (`pipeline.ts` lists the steps), and what drives a received message
 * through the steps after receive: each message is claimed and made ready for its handler
 * (`claim.ts`), the handler runs (one message, or a batch of the messages of one receive)
 * under the optional `handlerTimeoutInMs`, and each message is settled by its outcome
 * (`settle.ts`). A missing resource or a refused credential ends the consumer instead
 * ({@link ConsumerResourceError}) and never counts against a message.
 *
 * The time limit: when it runs out, every message's signal is aborted with a
 * {@link HandlerTimeoutError}, the consumer stops waiting for the handler and settles each message
 * as failed (retried, or poisoned at `maxDequeueCount`). Its effects are never committed
 * (`addEffects` refuses from then on). The call goes on in the background until it returns, kept
 * track of by the consumer (`stop()` waits for it); a handler that ignores its signal may still be
 * running when the message's next attempt starts, so pass the signal to everything it awaits.
 */
import type { DequeuedMessageItem } from "@azure/storage-queue";
import { traceMessage } from "./telemetry.js";
import { AttemptSettler } from "./settle.js";
import { outcomesOf, type AttemptOutcome, type BatchMessage, type BatchMessageHandler } from "./batch.js";
import { HandlerTimeoutError, isConsumerResourceError } from "./errors.js";
import type { TimeMark } from "./hold.js";
import { MessageReception } from "./claim.js";
import type { MessageHandler } from "./types.js";
import type { ProcessingContext, Work } from "./pipeline.js";

/** The handler the consumer runs: one message at a time, or batches. */
export type ConsumerHandler<T, TEffect> =
  | { readonly kind: "message"; readonly handler: MessageHandler<T, TEffect> }
  | { readonly kind: "batch"; readonly handler: BatchMessageHandler<T, TEffect> };

export class MessageProcessor<T, TEffect> {
  readonly #c: ProcessingContext<T, TEffect>;
  readonly #handler: ConsumerHandler<T, TEffect>;
  readonly #attempt: AttemptSettler<T, TEffect>;
  readonly #reception: MessageReception<T, TEffect>;
  /** {@link #guarded}, made once (the message span's wrapper takes it with its step: nothing built per message). */
  readonly #guard = (step: () => Promise<void>) => this.#guarded(step);

  constructor(context: ProcessingContext<T, TEffect>, handler: ConsumerHandler<T, TEffect>) {
    this.#c = context;
    this.#handler = handler;
    this.#attempt = new AttemptSettler(context);
    this.#reception = new MessageReception(context, this.#attempt);
  }

  /**
   * Processes the messages of one receive; one promise per message, settled when that message is
   * (none rejects). A single-message handler gets each message by itself; a batch handler gets those
   * ready at once together, and a message that had to wait for a busy key later, by itself.
   * `handlerReturned[i]` is called when the handler call of message `i` has returned, before it is
   * settled (it frees the message's handler slot).
   */
  process(
    items: readonly DequeuedMessageItem[],
    receivedAt: TimeMark,
    handlerReturned: readonly (() => void)[],
  ): Promise<void>[] {
    if (this.#handler.kind === "message") {
      return items.map((item, index) =>
        this.#traced(item, async () => {
          const work = await this.#reception.receive(item, receivedAt);
          if (work) await this.#run([work], [handlerReturned[index]!]);
        }),
      );
    }
    const ready: Work<T, TEffect>[] = [];
    const readyReturned: (() => void)[] = [];
    let waiting = items.length;
    let gathered!: () => void;
    const batch = new Promise<void>((resolve) => (gathered = resolve)).then(() =>
      ready.length > 0 ? this.#guarded(() => this.#run(ready, readyReturned)) : undefined,
    );
    const arrive = () => {
      waiting -= 1;
      if (waiting === 0) gathered();
    };
    return items.map((item, index) =>
      this.#traced(item, async () => {
        let deferred = false;
        let work: Work<T, TEffect> | undefined;
        try {
          work = await this.#reception.receive(item, receivedAt, () => {
            if (deferred) return;
            deferred = true;
            arrive();
          });
        } finally {
          if (!deferred) {
            if (work) {
              ready.push(work);
              readyReturned.push(handlerReturned[index]!);
            }
            arrive();
          }
        }
        if (work && deferred)
          await this.#run([work], [handlerReturned[index]!]); // its key was busy: it runs in a batch of its own
        else await batch;
      }),
    );
  }

  /** Runs the handler on `works`, calls `returned` (one per Work) and settles each of them. */
  async #run(works: readonly Work<T, TEffect>[], returned: readonly (() => void)[]): Promise<void> {
    try {
      const started = performance.now();
      const outcomes = await this.#invoke(works);
      const durationInMs = performance.now() - started;
      for (const handlerReturned of returned) handlerReturned();
      await this.#attempt.settle(works, outcomes, durationInMs);
    } finally {
      await Promise.all(works.map((work) => this.#attempt.finish(work)));
    }
  }

  /** Calls the handler under the time limit; one outcome per Work. */
  async #invoke(works: readonly Work<T, TEffect>[]): Promise<readonly AttemptOutcome[]> {
    // Only a batch handler is given a signal of its own (a message's handler has the message's).
    const batchController = this.#handler.kind === "batch" ? new AbortController() : undefined;
    if (batchController) this.#c.controllers.add(batchController);
    const call = this.#call(works, batchController?.signal);
    const timeoutInMs = this.#c.options.handlerTimeoutInMs;
    let timer: NodeJS.Timeout | undefined;
    try {
      if (timeoutInMs === undefined) return await call;
      const timedOut = new Promise<"timedOut">((resolve) => {
        timer = setTimeout(() => resolve("timedOut"), timeoutInMs);
        timer.unref();
      });
      const first = await Promise.race([call, timedOut]);
      if (first !== "timedOut") return first;
      const error = new HandlerTimeoutError(
        timeoutInMs,
        works.map((work) => work.message.messageId),
      );
      for (const work of works) {
        work.closed = true;
        if (!work.controller.signal.aborted) work.controller.abort(error);
      }
      batchController?.abort(error);
      this.#c.abandoned(
        call,
        works.map((work) => work.message),
      );
      return works.map(() => ({ ok: false, error }));
    } finally {
      clearTimeout(timer);
      if (batchController) this.#c.controllers.delete(batchController);
    }
  }

  /** The handler's call; never rejects (a throw is every message's failure). */
  async #call(works: readonly Work<T, TEffect>[], batchSignal: AbortSignal | undefined): Promise<AttemptOutcome[]> {
    const messages = works.map((work) => this.#messageOf(work));
    try {
      if (this.#handler.kind === "message") {
        return [{ ok: true, result: await this.#handler.handler(messages[0]!.body, messages[0]!) }];
      }
      return outcomesOf(await this.#handler.handler(messages, { abortSignal: batchSignal! }), works.length);
    } catch (error) {
      return works.map(() => ({ ok: false, error }));
    }
  }

  /** What a handler is given of one message: its body and context. */
  #messageOf(work: Work<T, TEffect>): BatchMessage<T, TEffect> {
    const { message, hold, claim, controller } = work;
    return {
      body: work.body,
      message,
      abortSignal: controller.signal,
      get popReceipt() {
        return hold.popReceipt;
      },
      idempotency: claim && { key: claim.key, partitionKey: claim.partitionKey, takenOverFrom: claim.takenOverFrom },
      addEffects(...added: TEffect[]) {
        if (!claim)
          throw new TypeError("addEffects() needs an idempotency store: set the consumer's `idempotency` option.");
        if (work.closed)
          throw new Error(
            `addEffects() after message '${message.messageId}''s attempt ended (it timed out or was settled): these effects are not committed.`,
          );
        work.effects.push(...added);
      },
    };
  }

  /**
   * Processes one message in its span (`process <queue>`, when OpenTelemetry records): the SDK calls
   * made for it nest under the span, and its outcome is the event that settled it. A batch
   * handler's call, and the transactions shared by its messages, are outside the messages' spans.
   */
  #traced(item: DequeuedMessageItem, step: () => Promise<void>): Promise<void> {
    return traceMessage(this.#c.queue.name, item, this.#c.options.handlerTimeoutInMs, this.#guard, step);
  }

  /** Runs `step`; a missing resource ends the consumer, any other failure is reported. Never rejects. */
  async #guarded(step: () => Promise<void>): Promise<void> {
    try {
      await step();
    } catch (error) {
      if (isConsumerResourceError(error)) this.#c.fail(error);
      else this.#c.settle.reportError(error, "process message", undefined);
    }
  }
}
