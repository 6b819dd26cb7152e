/**
 * Azure Functions queue triggers (Node.js v4 programming model, `app.storageQueue`) with
 * exactly-once effects: the Functions host delivers a queue message at least once (it deletes the
 * message after the handler returns, makes it visible again after a throw, and a host that dies
 * mid-handler loses its hold when the visibility timeout ends); this wrapper runs the handler under
 * an idempotency key's claim through the same engine as `idempotent()`, and commits the handler's
 * `addEffects` with the key's done record, so a delivery of a message whose key is done settles
 * without running the handler again.
 *
 * - The key: the message id (`triggerMetadata.id`) by default, or one derived from the body
 *   (`key`), for producers that may enqueue the same work twice. The claim is made for this
 *   delivery (`triggerMetadata.id`, `triggerMetadata.dequeueCount`): a claim left by an earlier
 *   delivery of the same message (a host that died) is taken over at once, as the queue only hands
 *   a message out again after its previous holder's visibility ended.
 * - A key held right now by another message (a body key and two copies of the work): the wrapper
 *   waits for that message (`whenInProgress: "wait"`, up to `waitTimeoutInMs`; the host keeps this
 *   message invisible meanwhile), then returns its stored result or runs if it failed. When the
 *   wait runs out it throws, and the host tries this message again later.
 * - The handler throws: the claim is released and the error passes to the host, which makes the
 *   message visible again, and after `maxDequeueCount` deliveries (host.json
 *   `extensions.queues.maxDequeueCount`, 5 by default) moves it to `<queue>-poison`
 *   (https://learn.microsoft.com/azure/azure-functions/functions-bindings-storage-queue-trigger#poison-messages).
 * - The last delivery (`dequeueCount >= maxDequeueCount`): the same, and the wrapper says so in the
 *   invocation's log (a warning naming the poison queue and the key). The key is released, never
 *   marked done: the work did not happen. A message replayed from the poison queue (the host writes
 *   it there with a new id) runs the handler again; with a body key, it settles without running
 *   when another copy of the work completed meanwhile.
 * - The handler's return value goes to the function's return binding; a duplicate delivery returns
 *   the stored result again, so an output binding fed by it is written at least once (the host
 *   writes it after the handler returns, outside the done record's transaction). Effects that must
 *   happen exactly once go through `addEffects` (Table rows, committed with the done record).
 */
import type { InvocationContext } from "@azure/functions";
import { isStorageConcurrencyError } from "../errors.js";
import { checkOptionalFunction, optionalNumber } from "../internal/validate.js";
import {
  idempotentDelivery,
  type IdempotencyStore,
  type IdempotentContext,
  type JsonRoundTrip,
} from "../idempotency/internal.js";

/** Options of {@link idempotentQueueHandler}. */
export interface IdempotentQueueHandlerOptions<T, TEffect = never> {
  /** Where the records live: a `TableIdempotencyStore` (effects: `TransactionAction`s in the key's partition). */
  readonly store: IdempotencyStore<TEffect>;
  /**
   * The idempotency key: `"messageId"` (redeliveries of one message run once), or a function of the
   * message body for producers that may enqueue one piece of work twice (an order id).
   * @default "messageId"
   */
  readonly key?: "messageId" | ((entry: T, context: InvocationContext) => string);
  /**
   * The record's partition (effects committed with the done record must be in it).
   * @default the key
   */
  readonly partitionKey?: (entry: T, context: InvocationContext) => string;
  /**
   * The host's `maxDequeueCount` (host.json `extensions.queues.maxDequeueCount`): a delivery with
   * this dequeue count is the last before the host moves the message to `<queue>-poison`.
   * @default 5 (the host's default)
   */
  readonly maxDequeueCount?: number;
  /**
   * A key held by another message right now: `"wait"` for it (then return its result, or run if
   * it failed), or `"reject"`: throw at once, and the host retries this message later.
   * @default "wait"
   */
  readonly whenInProgress?: "reject" | "wait";
  /** How long `"wait"` waits. @default 2 * claimDurationInMs */
  readonly waitTimeoutInMs?: number;
  /**
   * How long a claim lasts unless extended (it is extended while the handler runs): how soon
   * another delivery can take over from a host that died.
   * @default 30000
   */
  readonly claimDurationInMs?: number;
  /** How long a done key is recognised, from completion. @default the store's (7 days, a queue message's default time to live) */
  readonly retentionInMs?: number;
  /** The client-side time limit of each store request. @default a quarter of claimDurationInMs, at most 10000 */
  readonly requestTimeoutInMs?: number;
}

/** The handler {@link idempotentQueueHandler} wraps: the message, the invocation, and the key's context. */
export type IdempotentQueueHandler<T, R, TEffect = never> = (
  entry: T,
  context: InvocationContext,
  idempotency: IdempotentContext<TEffect>,
) => Promise<R>;

/** The message's id and dequeue count, as the queue trigger's metadata gives them. */
function deliveryOf(context: InvocationContext): { messageId: string; dequeueCount: number } {
  const metadata = (context as { triggerMetadata?: Record<string, unknown> } | undefined)?.triggerMetadata;
  const id = metadata?.id;
  const count = typeof metadata?.dequeueCount === "string" ? Number(metadata.dequeueCount) : metadata?.dequeueCount;
  if (typeof id !== "string" || id === "" || typeof count !== "number" || !Number.isInteger(count) || count < 1) {
    throw new TypeError(
      "The invocation context has no queue trigger metadata (`triggerMetadata.id`, `triggerMetadata.dequeueCount`): " +
        "register the wrapped handler with app.storageQueue(); a test passes " +
        "new InvocationContext({ triggerMetadata: { id, dequeueCount } }).",
    );
  }
  return { messageId: id, dequeueCount: count };
}

/**
 * Wraps an `app.storageQueue` handler so that its effects happen exactly once per key, however
 * often the host delivers the message: see the module's header for each case (duplicates, a key
 * busy, a failure, the last delivery before the host's poison queue).
 *
 * @example
 * ```ts
 * import { app } from "@azure/functions";
 * import { TableClient, type TransactionAction } from "@azure/data-tables";
 * import { TableIdempotencyStore } from "azure-storage-concurrency/idempotency";
 * import { idempotentQueueHandler } from "azure-storage-concurrency/functions";
 *
 * interface Order { orderId: string; amount: number }
 * const inbox = TableClient.fromConnectionString(process.env.AzureWebJobsStorage!, "orderinbox");
 *
 * app.storageQueue("processOrder", {
 *   queueName: "orders",
 *   connection: "AzureWebJobsStorage",
 *   handler: idempotentQueueHandler<Order, { charged: number }, TransactionAction>(
 *     async (order, context, { addEffects, partitionKey }) => {
 *       // The ledger row commits with the key's done record: exactly once per order.
 *       addEffects(["create", { partitionKey, rowKey: "ledger", amount: order.amount }]);
 *       context.log(`charged ${order.amount} for ${order.orderId}`);
 *       return { charged: order.amount };
 *     },
 *     { store: new TableIdempotencyStore(inbox), key: (order) => order.orderId },
 *   ),
 * });
 * ```
 */
export function idempotentQueueHandler<T, R, TEffect = never>(
  handler: IdempotentQueueHandler<T, R, TEffect>,
  options: IdempotentQueueHandlerOptions<T, TEffect>,
): (entry: T, context: InvocationContext) => Promise<JsonRoundTrip<R>> {
  if (typeof handler !== "function")
    throw new TypeError("`handler` must be an async function (entry, context, idempotency) => result.");
  if (typeof options !== "object" || options === null)
    throw new TypeError("`options` must be an object with a `store`.");
  const key = options.key ?? "messageId";
  if (key !== "messageId" && typeof key !== "function")
    throw new TypeError('`key` must be "messageId" or a function (entry, context) => string.');
  checkOptionalFunction("partitionKey", options.partitionKey);
  const maxDequeueCount = optionalNumber("maxDequeueCount", options.maxDequeueCount, 5, { min: 1 });
  const partitionKey = options.partitionKey;

  interface Input {
    readonly entry: T;
    readonly context: InvocationContext;
    readonly delivery: { messageId: string; dequeueCount: number };
    ran: boolean;
  }
  const call = idempotentDelivery<Input, R, TEffect>(
    async (input, idempotency) => {
      input.ran = true;
      return handler(input.entry, input.context, idempotency);
    },
    {
      store: options.store,
      key: (input) => (key === "messageId" ? input.delivery.messageId : key(input.entry, input.context)),
      ...(partitionKey ? { partitionKey: (input: Input) => partitionKey(input.entry, input.context) } : {}),
      // A message's body is the work: a body key reused for other work is refused, not run.
      payload: (input) => (key === "messageId" ? undefined : input.entry),
      whenInProgress: options.whenInProgress ?? "wait",
      waitTimeoutInMs: options.waitTimeoutInMs,
      claimDurationInMs: options.claimDurationInMs,
      retentionInMs: options.retentionInMs,
      requestTimeoutInMs: options.requestTimeoutInMs,
    },
    (input) => input.delivery,
  );

  return async (entry, context) => {
    const input: Input = { entry, context, delivery: deliveryOf(context), ran: false };
    const { messageId, dequeueCount } = input.delivery;
    try {
      const result = await call(input);
      if (!input.ran)
        log(
          context,
          "info",
          `queue message ${messageId}: its idempotency key is done already; the handler did not run again.`,
        );
      return result;
    } catch (error) {
      if (dequeueCount >= maxDequeueCount) {
        const queue = queueNameOf(context);
        const keyState = isStorageConcurrencyError(error, "IdempotencyInProgress")
          ? "another message holds its idempotency key: a copy replayed from the poison queue settles without running once that one is done"
          : input.ran
            ? "its idempotency key was released, not marked done: a copy replayed from the poison queue runs the handler again"
            : "its idempotency key was not marked done: a copy replayed from the poison queue is judged afresh";
        log(
          context,
          "warn",
          `queue message ${messageId} failed on its last delivery (dequeueCount ${dequeueCount}, maxDequeueCount ` +
            `${maxDequeueCount}): the Functions host moves it to '${queue}-poison' now; ${keyState}.`,
        );
      }
      throw error;
    }
  };
}

function queueNameOf(context: InvocationContext): string {
  const name = (context.options?.trigger as { queueName?: unknown } | undefined)?.queueName;
  return typeof name === "string" && name !== "" ? name : "<queue>";
}

/** Writes to the invocation's log; a log line never decides anything, so a failure to write one is ignored. */
function log(context: InvocationContext, level: "info" | "warn", line: string): void {
  try {
    context[level](line);
  } catch {
    // the outcome is the handler's, not the log's
  }
}
