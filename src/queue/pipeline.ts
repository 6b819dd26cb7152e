/**
 * The queue pipeline, in the order a message goes through it:
 * 1. receive: the consumer's loop receives messages and hands each to the pipeline (`consumer.ts`);
 * 2. claim: a received message becomes a {@link Work}: recognised if finished before, poisoned if
 *    received too often or undecodable, kept invisible by its heartbeat, its key claimed
 *    (`claim.ts`);
 * 3. run: its handler runs, alone or in a batch, within `handlerTimeoutInMs` (`run.ts`, which also
 *    drives steps 2 to 4);
 * 4. settle: by its outcome, its claim is completed and the message deleted, or it is retried or
 *    poisoned (`settle.ts`, through the requests of `message-settler.ts`).
 *
 * This file holds what the steps share: the consumer's parts they use ({@link ProcessingContext})
 * and one message being handled ({@link Work}).
 */
import type { QueueClient } from "@azure/storage-queue";
import type { Scope } from "../observability/scope.js";
import type { ClaimGuard } from "../idempotency/internal.js";
import type { StoreCalls } from "../idempotency/internal.js";
import type { ConsumerResourceError, MessageOwnershipLostError } from "./errors.js";
import type { TypedEvents } from "./events.js";
import type { VisibilityHeartbeat } from "./heartbeat.js";
import type { MessageHold } from "./hold.js";
import type { IdempotencyClaim } from "../idempotency/index.js";
import type { ResolvedOptions } from "./options.js";
import type { MessageSettler } from "./message-settler.js";
import type { QueueConsumerEvents, ReceivedQueueMessage } from "./types.js";

/** What processing a message needs of its consumer. */
export interface ProcessingContext<T, TEffect> {
  readonly queue: QueueClient;
  readonly options: ResolvedOptions<T, TEffect>;
  readonly events: TypedEvents<QueueConsumerEvents>;
  readonly settle: MessageSettler;
  readonly store: StoreCalls<TEffect> | undefined;
  /** Aborted when the consumer stops: waits for a busy key end at once. */
  readonly stopping: AbortSignal;
  /** The running handlers' controllers, for `stop()` and a failure of the consumer to abort. */
  readonly controllers: Set<AbortController>;
  /** Ends the consumer: a resource it needs is missing or refuses it. */
  fail(error: ConsumerResourceError): void;
  /**
   * A handler that outlived its time limit: its messages are settled as failed, but the consumer
   * keeps track of the call until it returns (`stop()` waits for it).
   */
  abandoned(call: Promise<unknown>, messages: readonly ReceivedQueueMessage[]): void;
}

/** One message being handled: what its settling needs to know. */
export interface Work<T, TEffect> {
  readonly message: ReceivedQueueMessage;
  readonly body: T;
  readonly hold: MessageHold;
  /** The idempotency key the message carries (through a claim-check: an outbox row's id), if any. */
  readonly carriedKey: string | undefined;
  /** Its claim-check payload is gone (`body` is undefined): only a done key settles it, as a duplicate. */
  readonly payloadGone: boolean;
  /** Aborted when the message or its claim is lost, when `stop()`'s grace period ends, or when the handler times out. */
  readonly controller: AbortController;
  readonly heartbeat: VisibilityHeartbeat;
  claim: IdempotencyClaim | undefined;
  /**
   * The claim's local expiry guard (a claim with a record: not a first delivery's): it gives the
   * claim up, aborting the handler, when no extension landed in time (`claim-guard.ts`).
   */
  claimGuard: ClaimGuard | undefined;
  /** Set once the heartbeat (or the claim's extension) found the message or its claim lost. */
  lostError: MessageOwnershipLostError | undefined;
  /** Effects added by the handler, committed with the done mark. */
  readonly effects: TEffect[];
  /** Set once the attempt is over (settled, or timed out): `addEffects` refuses from then on. */
  closed: boolean;
  /** The message's span, when OpenTelemetry records: its settling runs in it (a batch is settled outside). */
  readonly trace: Scope | undefined;
}
