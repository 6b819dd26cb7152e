/**
 * Fault-placement explorer over the queue consumer's write paths (tests/support/explorer.ts): every
 * fault kind (hangs included: every request of the consumer runs under a client-side time limit)
 * at every request, with the SDK's retries on and off, and a seeded sample of pairs for the
 * idempotency store. Each run is judged by its contract against storage read directly:
 *
 * - idempotency store (Table), called as the consumer calls it (time limit, ambiguous failures
 *   tried again): told "claimed", the row is this claim's and its ETag is the one handed out; a
 *   done key stays done; `complete` writes the done mark and the effect together or not at all;
 *   `release` removes only this claim; `extend` hands out the row's ETag;
 * - the message's hold (heartbeat and settling): with the message certainly still hidden, no fault
 *   may make the consumer believe it lost the message; told "deleted", it is gone, and gone only
 *   when told "deleted" or "unknown"; a lost receipt leaves it in the queue (remembered);
 * - the poison move: a message leaves its queue only with a copy in the poison queue; told
 *   "poisoned", the copy is there and the original gone; copies are identical, and a second copy
 *   appears only when a send whose answer was lost is sent again (queue sends are not idempotent);
 * - one message through the whole consumer: its effect is written at most once and only with its
 *   done mark, the message is deleted only once the work is done, nothing is poisoned or lost;
 * - a message past `maxDequeueCount` whose key is done (its last reception completed it and lost
 *   its delete, issue 21): never poisoned, its handler never runs, its done record is not written;
 *   deleted as a duplicate or left for a later reception (SDK retries off, single faults).
 */
import type { TableClient, TableEntityResult, TransactionAction } from "@azure/data-tables";
import type { QueueClient } from "@azure/storage-queue";
import { exponentialBackoff, fixedBackoff } from "../../../src/retry/index.js";
import { isConsumerResourceError, jsonCodec, parsePoisonMessage, QueueConsumer } from "../../../src/queue/index.js";
import {
  isIdempotencyClaimLostError,
  TableIdempotencyStore,
  type ClaimOutcome,
  type ClaimRequest,
  type IdempotencyClaim,
} from "../../../src/idempotency/index.js";
import { StoreCalls } from "../../../src/idempotency/store-calls.js";
import { AdaptiveRateLimiter } from "../../../src/throttling/index.js";
import { TypedEvents } from "../../../src/queue/events.js";
import { markNow, MessageHold, type HoldOutcome, type TimeMark } from "../../../src/queue/hold.js";
import { MessageSettler } from "../../../src/queue/message-settler.js";
import type { QueueConsumerEvents, ReceivedQueueMessage } from "../../../src/queue/types.js";
import {
  createExplorer,
  describeError,
  violationsOf,
  type ExploredOperation,
  type Verdict,
  type Via,
} from "../../support/explorer.js";
import { startServiceAnswers } from "../../support/service-answers.js";
import { endpoints, queueService, tableClient, uniqueName } from "../../support/storage.js";

/** The consumer's client-side time limit in these runs: what a hang costs. */
const REQUEST_TIMEOUT_IN_MS = 200;
/** Pairs sampled per operation of the idempotency store and SDK retry mode (`ASC_EXPLORE_PAIRS=all`: every pair). */
const PAIRS = 8;
const VISIBILITY_TIMEOUT_IN_SECONDS = 30;
const TTL_IN_MS = VISIBILITY_TIMEOUT_IN_SECONDS * 1000;

let explorer: Awaited<ReturnType<typeof createExplorer>>;
let inbox: TableClient;
const queues: QueueClient[] = [];
let serial = 0;

beforeAll(async () => {
  explorer = await createExplorer("Queue consumer: idempotency store, message hold, poison move, one message", [
    "queue",
    "table",
  ]);
  inbox = tableClient(uniqueName("exploreinbox"));
  await inbox.createTable();
});
afterAll(async () => {
  await explorer.close("queue");
  await inbox.deleteTable();
  await Promise.all(queues.map((q) => q.deleteIfExists()));
});

// ---------------------------------------------------------------------------------------------
// The idempotency store, as the consumer calls it
// ---------------------------------------------------------------------------------------------

type InboxRow = TableEntityResult<Record<string, unknown>>;

interface StoreState {
  readonly key: string;
  readonly start: InboxRow | undefined;
  readonly claim?: IdempotencyClaim;
}

/** Where the store keeps `key`'s row. */
const rowOf = (key: string) => new TableIdempotencyStore(inbox).rowOf(key);

async function readRow(key: string): Promise<InboxRow | undefined> {
  const { partitionKey, rowKey } = rowOf(key);
  return inbox.getEntity(partitionKey, rowKey).catch(() => undefined);
}

async function effectRows(key: string): Promise<number> {
  let n = 0;
  const { partitionKey } = rowOf(key);
  for await (const row of inbox.listEntities({ queryOptions: { filter: `PartitionKey eq '${partitionKey}'` } })) {
    if (row.rowKey === "effect") n += 1;
  }
  return n;
}

/** A hold that is certainly still this consumer's for the whole run (30 s): the store calls' window. */
function freshHold(): MessageHold {
  return new MessageHold({ name: "unused" } as QueueClient, "m", "r", markNow(), {
    visibilityTimeoutInSeconds: VISIBILITY_TIMEOUT_IN_SECONDS,
    requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS,
  });
}

function storeVia(via: Via): StoreCalls<TransactionAction> {
  return new StoreCalls(
    new TableIdempotencyStore(tableClient(inbox.tableName, via.connectionString, via.tableOptions)),
    REQUEST_TIMEOUT_IN_MS,
  );
}

const request = (key: string): ClaimRequest => ({
  key,
  owner: "me",
  messageId: `msg-${key}`,
  dequeueCount: 2,
  ttlInMs: TTL_IN_MS,
});

const isOurs = (row: InboxRow | undefined, key: string) =>
  row?.Status === "claimed" && row.Owner === "me" && row.MessageId === `msg-${key}` && row.DequeueCount === 2;

async function seed(key: string, status: "claimed" | "done", owner: string, expiresInMs: number): Promise<InboxRow> {
  const { partitionKey, rowKey } = rowOf(key);
  await inbox.createEntity({
    partitionKey,
    rowKey,
    Key: key,
    Status: status,
    Owner: owner,
    MessageId: `msg-${owner}`,
    DequeueCount: 1,
    ClaimExpiresOn: new Date(Date.now() + expiresInMs),
    ...(status === "done" ? { Result: JSON.stringify("earlier"), CompletedOn: new Date() } : {}),
  });
  return (await readRow(key))!;
}

function claimOperation(
  name: string,
  start: (key: string) => Promise<InboxRow | undefined>,
): ExploredOperation<StoreState, ClaimOutcome> {
  return {
    name,
    async setup() {
      const key = `claim-${(serial += 1)}`;
      return { key, start: await start(key) };
    },
    run: (state, via) => storeVia(via).claim(request(state.key), freshHold(), new AbortController().signal),
    async judge(state, result) {
      const row = await readRow(state.key);
      const unchanged = row?.etag === state.start?.etag;
      if (state.start?.Status === "done") {
        if (!unchanged) return { outcome: "changed", violation: "a done key's row was written" };
        if (!result.ok) return { outcome: `failed: ${describeError(result.error)}` };
        return result.value.status === "done" && result.value.result === "earlier"
          ? { outcome: "done" }
          : { outcome: result.value.status, violation: `told ${result.value.status} for a done key` };
      }
      if (!result.ok) {
        // Nothing, or our own claim applied by a try whose answer was lost (the next delivery recognises it).
        return unchanged || isOurs(row, state.key)
          ? { outcome: `failed: ${describeError(result.error)}${unchanged ? "" : " (applied)"}` }
          : { outcome: "failed", violation: `told failed, row is ${JSON.stringify(row)}` };
      }
      if (result.value.status !== "claimed")
        return { outcome: result.value.status, violation: "nobody else holds the key" };
      if (!isOurs(row, state.key))
        return { outcome: "claimed", violation: `told claimed, row is ${JSON.stringify(row)}` };
      if (row!.etag !== result.value.claim.etag)
        return { outcome: "claimed", violation: "the claim's ETag is not the row's: its done mark would be refused" };
      return { outcome: "claimed" };
    },
  };
}

const claimFresh = claimOperation("claim (new key)", async () => undefined);
const claimTakeOver = claimOperation("claim (take over an expired claim)", (key) =>
  seed(key, "claimed", "other", -60_000),
);
const claimDone = claimOperation("claim (a done key)", (key) => seed(key, "done", "other", -60_000));

/** A claim of ours, made directly; or none written yet (`firstDelivery`: the done mark creates the row). */
async function claimedState(firstDelivery: boolean): Promise<StoreState> {
  const key = `complete-${(serial += 1)}`;
  const store = new TableIdempotencyStore(inbox);
  const outcome = await store.claim({ ...request(key), firstDelivery });
  if (outcome.status !== "claimed") throw new Error("setup: not claimed");
  return { key, start: await readRow(key), claim: outcome.claim };
}

/** The claim's done mark with one effect row in the key's partition, through `via`. */
async function completeWithEffect(state: StoreState, via: Via): Promise<void> {
  const { partitionKey } = rowOf(state.key);
  await storeVia(via).complete(
    state.claim!,
    { ok: true },
    [["create", { partitionKey, rowKey: "effect" }]],
    freshHold(),
  );
}

function completeOperation(name: string, firstDelivery: boolean): ExploredOperation<StoreState, void> {
  return {
    name,
    setup: () => claimedState(firstDelivery),
    run: completeWithEffect,
    async judge(state, result) {
      const row = await readRow(state.key);
      const effects = await effectRows(state.key);
      const done = row?.Status === "done";
      if (effects > 1) return { outcome: "doubled", violation: `${effects} effect rows` };
      if (done !== (effects === 1)) return { outcome: "torn", violation: `done mark ${done}, ${effects} effect rows` };
      if (result.ok) return done ? { outcome: "done" } : { outcome: "done", violation: "told done, no done mark" };
      return { outcome: `failed: ${describeError(result.error)}${done ? " (applied)" : ""}` };
    },
  };
}

/**
 * A deferred claim (`firstDelivery`, as `effects: "tables-only"` makes for any key) whose key another
 * delivery marked done meanwhile: its done mark's insert fails, its effect is never written, the
 * other's record is never touched, and it is told `key-done` with the other's result (or a failure
 * without an answer: the consumer retries the message later).
 */
const completeKeyDone: ExploredOperation<StoreState, void> = {
  name: "complete with an effect (deferred claim, the key done by another delivery meanwhile)",
  async setup() {
    const { key, claim } = await claimedState(true);
    return { key, claim, start: await seed(key, "done", "other", -60_000) };
  },
  run: completeWithEffect,
  async judge(state, result) {
    const row = await readRow(state.key);
    const effects = await effectRows(state.key);
    const outcome = result.ok
      ? "done"
      : isIdempotencyClaimLostError(result.error)
        ? result.error.reason
        : `failed: ${describeError(result.error)}`;
    if (effects > 0) return { outcome, violation: "the effect was written, though the key was another's" };
    if (row?.etag !== state.start?.etag) return { outcome, violation: "the other delivery's done record was written" };
    if (result.ok) return { outcome, violation: "told done, though another delivery had done the key" };
    if (isIdempotencyClaimLostError(result.error)) {
      if (result.error.reason !== "key-done") return { outcome, violation: "a done key not told key-done" };
      if (result.error.result !== "earlier") return { outcome, violation: "not told the other delivery's result" };
    }
    return { outcome };
  },
};

const release: ExploredOperation<StoreState, void> = {
  name: "release",
  setup: () => claimedState(false),
  run: (state, via) => storeVia(via).release(state.claim!),
  async judge(state, result) {
    const row = await readRow(state.key);
    if (result.ok)
      return row
        ? { outcome: "released", violation: "told released, the claim is still there" }
        : { outcome: "released" };
    return row === undefined || isOurs(row, state.key)
      ? { outcome: `failed: ${describeError(result.error)}${row ? "" : " (applied)"}` }
      : { outcome: "failed", violation: `row is ${JSON.stringify(row)}` };
  },
};

const extend: ExploredOperation<StoreState, IdempotencyClaim> = {
  name: "extend",
  setup: () => claimedState(false),
  run: (state, via) => storeVia(via).extend(state.claim!, TTL_IN_MS * 2, freshHold()),
  async judge(state, result) {
    const row = await readRow(state.key);
    if (!isOurs(row, state.key)) return { outcome: "lost", violation: `the claim is gone: ${JSON.stringify(row)}` };
    if (!result.ok) return { outcome: `failed: ${describeError(result.error)}` };
    return row!.etag === result.value.etag
      ? { outcome: "extended" }
      : { outcome: "extended", violation: "the extended claim's ETag is not the row's" };
  },
};

it("the idempotency store (Table), as the consumer calls it: every fault at every request, and pairs", async () => {
  const runs = [
    ...(await explorer.exploreWithHangs(claimFresh, PAIRS)),
    ...(await explorer.exploreWithHangs(claimTakeOver, PAIRS)),
    ...(await explorer.exploreWithHangs(claimDone)),
    ...(await explorer.exploreWithHangs(completeOperation("complete with an effect", false), PAIRS)),
    ...(await explorer.exploreWithHangs(
      completeOperation("complete with an effect (first delivery: creates the row)", true),
      PAIRS,
    )),
    ...(await explorer.exploreWithHangs(completeKeyDone, PAIRS)),
    ...(await explorer.exploreWithHangs(release, PAIRS)),
    ...(await explorer.exploreWithHangs(extend)),
  ];
  expect(violationsOf(runs)).toEqual([]);
});

// ---------------------------------------------------------------------------------------------
// The message's hold: heartbeat, delete, release; and the poison move
// ---------------------------------------------------------------------------------------------

interface MessageState {
  readonly queue: QueueClient;
  readonly message: ReceivedQueueMessage;
  readonly popReceipt: string;
  readonly receivedAt: TimeMark;
  readonly poisonExisted: boolean;
}

async function receivedMessage(withPoisonQueue: boolean): Promise<MessageState> {
  const queue = queueService().getQueueClient(uniqueName("explore"));
  queues.push(queue, queueService().getQueueClient(`${queue.name}-poison`));
  await queue.create();
  if (withPoisonQueue) await queueService().getQueueClient(`${queue.name}-poison`).create();
  await queue.sendMessage(`job ${(serial += 1)}`);
  const receivedAt = markNow();
  const [item] = (await queue.receiveMessages({ visibilityTimeout: VISIBILITY_TIMEOUT_IN_SECONDS }))
    .receivedMessageItems;
  const message = {
    messageId: item!.messageId,
    messageText: item!.messageText,
    dequeueCount: item!.dequeueCount,
    insertedOn: item!.insertedOn,
    expiresOn: item!.expiresOn,
  };
  return { queue, message, popReceipt: item!.popReceipt, receivedAt, poisonExisted: withPoisonQueue };
}

function holdVia(state: MessageState, via: Via): { hold: MessageHold; queue: QueueClient } {
  const queue = queueService(via.connectionString, via.storageOptions).getQueueClient(state.queue.name);
  const hold = new MessageHold(queue, state.message.messageId, state.popReceipt, state.receivedAt, {
    visibilityTimeoutInSeconds: VISIBILITY_TIMEOUT_IN_SECONDS,
    requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS,
  });
  return { hold, queue };
}

const messagesIn = async (queue: QueueClient) => (await queue.getProperties()).approximateMessagesCount ?? 0;
const visibleIn = async (queue: QueueClient) =>
  (await queue.peekMessages({ numberOfMessages: 32 })).peekedMessageItems.length;

const heartbeatThenDelete: ExploredOperation<MessageState, HoldOutcome["status"][]> = {
  name: "heartbeat, then delete",
  setup: () => receivedMessage(false),
  async run(state, via) {
    const { hold } = holdVia(state, via);
    const beat = await hold.update(VISIBILITY_TIMEOUT_IN_SECONDS, "extend the visibility of");
    const deleted = await hold.delete("delete");
    return [beat.status, deleted.status];
  },
  async judge(state, result) {
    if (!result.ok) return { outcome: "threw", violation: `threw ${describeError(result.error)}` };
    const [beat, deleted] = result.value;
    const left = await messagesIn(state.queue);
    const outcome = `${beat}, ${deleted}`;
    if (beat === "lost" || deleted === "lost")
      return { outcome, violation: "told lost while the message was certainly still hidden" };
    if (deleted === "done" && left !== 0) return { outcome, violation: "told deleted, still in the queue" };
    if (left === 0 && deleted !== "done" && deleted !== "unknown")
      return { outcome, violation: "gone, but not told deleted" };
    if (beat === "receiptLost" && left !== 1) return { outcome, violation: "receipt lost, yet the message is gone" };
    return { outcome };
  },
};

const releaseMessage: ExploredOperation<MessageState, HoldOutcome["status"]> = {
  name: "release (visible again at once)",
  setup: () => receivedMessage(false),
  async run(state, via) {
    return (await holdVia(state, via).hold.update(0, "update")).status;
  },
  async judge(state, result) {
    if (!result.ok) return { outcome: "threw", violation: `threw ${describeError(result.error)}` };
    const visible = await visibleIn(state.queue);
    const left = await messagesIn(state.queue);
    if (result.value === "lost")
      return { outcome: "lost", violation: "told lost while the message was certainly still hidden" };
    if (left !== 1) return { outcome: result.value, violation: `${left} messages in the queue` };
    if ((result.value === "done" || result.value === "receiptLost") && visible !== 1)
      return { outcome: result.value, violation: "told visible again, it is not" };
    return { outcome: result.value };
  },
};

function poisonMove(withPoisonQueue: boolean): ExploredOperation<MessageState, boolean> {
  return {
    name: `poison move (poison queue ${withPoisonQueue ? "exists" : "missing: created on 404"})`,
    setup: () => receivedMessage(withPoisonQueue),
    async run(state, via) {
      const { hold, queue } = holdVia(state, via);
      const events = new TypedEvents<QueueConsumerEvents>();
      let poisoned = false;
      events.on("poisoned", () => (poisoned = true));
      const settler = new MessageSettler(queue, events, {
        poisonQueue: undefined,
        poisonTimeToLiveInSeconds: -1,
        requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS,
      });
      await settler.poison(state.message, hold, "failed every time", new Error("failed"));
      return poisoned;
    },
    async judge(state, result, trace) {
      if (!result.ok) {
        return isConsumerResourceError(result.error)
          ? { outcome: "consumer failed" }
          : { outcome: "threw", violation: `threw ${describeError(result.error)}` };
      }
      // Each send is applied at most once; the consumer sends again only after a send without a
      // clear answer (the injected fault, or its own time limit on a slow answer on a busy machine).
      const sends = trace.requests.filter(
        (r) => r.method === "POST" && r.path.includes(`/${state.queue.name}-poison/messages`),
      ).length;
      const poisonQueue = queueService().getQueueClient(`${state.queue.name}-poison`);
      const copies = (await poisonQueue.exists())
        ? (await poisonQueue.peekMessages({ numberOfMessages: 32 })).peekedMessageItems.map((m) => m.messageText)
        : [];
      const left = await messagesIn(state.queue);
      const outcome = `${result.value ? "poisoned" : "not poisoned"}, ${copies.length} cop${copies.length === 1 ? "y" : "ies"}, ${left} left`;
      if (left === 0 && copies.length === 0) return { outcome, violation: "the message is lost: in neither queue" };
      if (result.value && copies.length === 0) return { outcome, violation: "told poisoned, no copy" };
      if (!result.value && left === 0) return { outcome, violation: "removed from its queue, but not told poisoned" };
      if (copies.length > sends) return { outcome, violation: `${copies.length} copies from ${sends} sends` };
      if (new Set(copies).size > 1) return { outcome, violation: "the copies differ" };
      if (copies.some((c) => parsePoisonMessage(c)?.messageText !== state.message.messageText))
        return { outcome, violation: "a copy is not the message's envelope" };
      return { outcome };
    },
  };
}

it("the message's hold and the poison move: every fault at every request", async () => {
  const runs = [
    ...(await explorer.exploreWithHangs(heartbeatThenDelete)),
    ...(await explorer.exploreWithHangs(releaseMessage)),
    ...(await explorer.exploreWithHangs(poisonMove(true))),
    ...(await explorer.exploreWithHangs(poisonMove(false))),
  ];
  expect(violationsOf(runs)).toEqual([]);
});

it("the message's hold, with the service's answer to a stale receipt (404 MessageNotFound, not Azurite's 400): every fault at every request", async () => {
  // "Delete Message": no message with a matching pop receipt is 404 (docs/service-conformance.md).
  const serviceAnswers = await startServiceAnswers(endpoints().queue);
  const asService = await createExplorer(
    "Queue consumer: message hold, stale receipts answered 404 as the service does",
    ["queue"],
    { queueEndpoint: serviceAnswers.endpoint },
  );
  try {
    const runs = [
      ...(await asService.exploreWithHangs(heartbeatThenDelete)),
      ...(await asService.exploreWithHangs(releaseMessage)),
    ];
    expect(violationsOf(runs)).toEqual([]);
    expect(serviceAnswers.rewritten).toBeGreaterThan(0); // some fault did leave a stale receipt behind
  } finally {
    await asService.close("queue-service-answers");
    await serviceAnswers.close();
  }
});

// ---------------------------------------------------------------------------------------------
// One message through the whole consumer
// ---------------------------------------------------------------------------------------------

interface ConsumerState {
  readonly queue: QueueClient;
  readonly key: string;
}

interface ConsumerRun {
  readonly started: boolean;
  readonly events: readonly string[];
  readonly deletedTold: boolean;
}

/**
 * One message through the consumer; `limited`: its receives, visibility updates and deletes sent
 * through a fresh adaptive limiter each run (issue 26), whose waits, records and cuts (an injected
 * 503 is a throttle to it) must change nothing of the contract. A high floor keeps its waits short.
 */
/**
 * `tablesOnly` (issue 27): `effects: "tables-only"`, so the message's key is not claimed before its
 * handler; `doneBefore`: another delivery (a producer's duplicate) has done the key already, so the
 * handler may run but its effect must never be written, the other's record never touched, and the
 * message is deleted as a duplicate or left for a later reception.
 */
const oneMessage = (
  limited: boolean,
  { tablesOnly = false, doneBefore = false } = {},
): ExploredOperation<ConsumerState & { readonly start?: InboxRow | undefined }, ConsumerRun> => ({
  name:
    `one message through the consumer (Table store, key from the body, one effect)${limited ? ", adaptive limiter" : ""}` +
    `${tablesOnly ? ', effects "tables-only" (no claim before the handler)' : ""}` +
    `${doneBefore ? ", its key done by another delivery" : ""}`,
  runTimeoutInMs: 20_000,
  async setup() {
    const queue = queueService().getQueueClient(uniqueName("exploreconsumer"));
    queues.push(queue, queueService().getQueueClient(`${queue.name}-poison`));
    await queue.create();
    await queueService().getQueueClient(`${queue.name}-poison`).create();
    const key = `order-${(serial += 1)}`;
    const start = doneBefore ? await seed(key, "done", "other", -60_000) : undefined;
    await queue.sendMessage(JSON.stringify({ key }));
    return { queue, key, start };
  },
  async run(state, via) {
    const queue = queueService(via.connectionString, via.storageOptions).getQueueClient(state.queue.name);
    const table = tableClient(inbox.tableName, via.connectionString, via.tableOptions);
    let entered!: () => void;
    const handlerEntered = new Promise<void>((resolve) => (entered = resolve));
    const consumer = new QueueConsumer<{ key: string }, TransactionAction>(
      queue,
      async (_body, { idempotency, addEffects }) => {
        entered();
        addEffects(["create", { partitionKey: idempotency!.partitionKey, rowKey: "effect" }]);
        return "charged";
      },
      {
        codec: jsonCodec<{ key: string }>(),
        idempotency: {
          store: new TableIdempotencyStore(table),
          key: (body) => body.key,
          ...(tablesOnly ? { effects: "tables-only" as const } : {}),
        },
        visibilityTimeoutInSeconds: VISIBILITY_TIMEOUT_IN_SECONDS,
        requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS,
        batchSize: 1,
        concurrency: 1,
        newBatchThreshold: 0,
        retryBackoff: fixedBackoff({ delayInMs: 0 }),
        pollingBackoff: exponentialBackoff({ deltaInMs: 5, minInMs: 0, maxInMs: 20 }),
        ...(limited ? { rateLimiter: new AdaptiveRateLimiter({ minRatePerSec: 200 }) } : {}),
      },
    );
    const events: string[] = [];
    let deletedTold = false;
    let empties = 0;
    let sawEnough!: () => void;
    const enoughEmpties = new Promise<void>((resolve) => (sawEnough = resolve));
    for (const name of ["processed", "duplicate", "failed", "poisoned", "ownershipLost", "error"] as const) {
      consumer.on(name, (payload) => {
        events.push(name);
        if (name === "processed") deletedTold = (payload as QueueConsumerEvents["processed"]).messageDeleted;
      });
    }
    consumer.on("empty", () => ++empties >= 5 && sawEnough());
    try {
      await consumer.start();
    } catch (error) {
      if (!isConsumerResourceError(error)) throw error;
      return { started: false, events, deletedTold };
    }
    // Until the handler ran, or the message stays out of sight (its receive's answer was lost).
    await Promise.race([handlerEntered, enoughEmpties]);
    const stopped = await consumer.stop({ gracePeriodInMs: 5_000, timeoutInMs: 15_000 });
    if (stopped.timedOut) throw new Error("stop() timed out");
    return { started: true, events, deletedTold };
  },
  async judge(state, result) {
    if (!result.ok) return { outcome: "threw", violation: `threw ${describeError(result.error)}` };
    const { started, events, deletedTold } = result.value;
    const row = await readRow(state.key);
    const effects = await effectRows(state.key);
    const done = row?.Status === "done";
    const left = await messagesIn(state.queue);
    const poisoned = await messagesIn(queueService().getQueueClient(`${state.queue.name}-poison`));
    const outcome = !started ? "start rejected" : events.length === 0 ? "nothing settled" : events.join("+");
    const violation = (why: string): Verdict => ({ outcome, violation: why });
    if (doneBefore) {
      if (effects > 0) return violation("the effect was written, though another delivery had done the key");
      if (row?.etag !== state.start?.etag) return violation("the other delivery's done record was written");
      if (poisoned > 0) return violation("poisoned, though its key is done");
      if (events.includes("processed")) return violation("told processed, though another delivery had done the key");
      if (events.includes("ownershipLost")) return violation("lost ownership, with nobody else around");
      if (events.includes("duplicate") && left !== 0) return violation("told duplicate (deleted), still in the queue");
      return { outcome };
    }
    if (effects > 1) return violation(`${effects} effects`);
    if (done !== (effects === 1)) return violation(`done mark ${done}, ${effects} effects`);
    if (left === 0 && !done) return violation("the message was deleted, its work never done");
    if (poisoned > 0) return violation("poisoned, though nothing failed");
    if (events.includes("ownershipLost")) return violation("lost ownership, with nobody else around");
    if (events.includes("processed") && !done) return violation("told processed, no done mark");
    if (deletedTold && left !== 0) return violation("told deleted, still in the queue");
    if (!started && (effects !== 0 || left !== 1)) return violation("start rejected, yet something happened");
    return { outcome };
  },
});

it("one message through the consumer: every fault at every request", async () => {
  expect(violationsOf(await explorer.exploreWithHangs(oneMessage(false)))).toEqual([]);
});

it("one message through the consumer, adaptive limiter on: every fault at every request", async () => {
  expect(violationsOf(await explorer.exploreWithHangs(oneMessage(true)))).toEqual([]);
});

it('one message through the consumer, effects "tables-only" (issue 27): every fault at every request', async () => {
  expect(violationsOf(await explorer.exploreWithHangs(oneMessage(false, { tablesOnly: true })))).toEqual([]);
});

it('one message through the consumer, effects "tables-only", its key done by another delivery: every fault at every request', async () => {
  expect(
    violationsOf(await explorer.exploreWithHangs(oneMessage(false, { tablesOnly: true, doneBefore: true }))),
  ).toEqual([]);
});

// ---------------------------------------------------------------------------------------------
// A message past maxDequeueCount whose key is done
// ---------------------------------------------------------------------------------------------

interface DoneKeyState extends ConsumerState {
  readonly row: InboxRow;
}

const doneKeyPastLimit: ExploredOperation<DoneKeyState, ConsumerRun & { readonly ran: boolean }> = {
  name: "a message past maxDequeueCount whose key is done, through the consumer",
  runTimeoutInMs: 20_000,
  async setup() {
    const queue = queueService().getQueueClient(uniqueName("exploredone"));
    queues.push(queue, queueService().getQueueClient(`${queue.name}-poison`));
    await queue.create();
    await queueService().getQueueClient(`${queue.name}-poison`).create();
    const key = `done-${(serial += 1)}`;
    const row = await seed(key, "done", "other", -60_000);
    await queue.sendMessage(JSON.stringify({ key }));
    // Its one allowed reception (maxDequeueCount 1) completed the key, and its delete was lost.
    const [item] = (await queue.receiveMessages({ visibilityTimeout: VISIBILITY_TIMEOUT_IN_SECONDS }))
      .receivedMessageItems;
    await queue.updateMessage(item!.messageId, item!.popReceipt, undefined, 0);
    return { queue, key, row };
  },
  async run(state, via) {
    const queue = queueService(via.connectionString, via.storageOptions).getQueueClient(state.queue.name);
    const table = tableClient(inbox.tableName, via.connectionString, via.tableOptions);
    let ran = false;
    const consumer = new QueueConsumer<{ key: string }>(queue, async () => void (ran = true), {
      codec: jsonCodec<{ key: string }>(),
      idempotency: { store: new TableIdempotencyStore(table), key: (body) => body.key },
      maxDequeueCount: 1,
      visibilityTimeoutInSeconds: VISIBILITY_TIMEOUT_IN_SECONDS,
      requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS,
      batchSize: 1,
      concurrency: 1,
      newBatchThreshold: 0,
      retryBackoff: fixedBackoff({ delayInMs: 0 }),
      pollingBackoff: exponentialBackoff({ deltaInMs: 5, minInMs: 0, maxInMs: 20 }),
    });
    const events: string[] = [];
    let settled!: () => void;
    const settledOnce = new Promise<void>((resolve) => (settled = resolve));
    for (const name of ["processed", "duplicate", "failed", "poisoned", "ownershipLost", "error"] as const) {
      consumer.on(name, (payload) => {
        const retried = name === "failed" && (payload as QueueConsumerEvents["failed"]).willRetry;
        events.push(retried ? "failed (retried)" : name);
        if (name !== "error") settled();
      });
    }
    let empties = 0;
    consumer.on("empty", () => ++empties >= 5 && settled());
    try {
      await consumer.start();
    } catch (error) {
      if (!isConsumerResourceError(error)) throw error;
      return { started: false, events, deletedTold: false, ran };
    }
    await settledOnce;
    const stopped = await consumer.stop({ gracePeriodInMs: 5_000, timeoutInMs: 15_000 });
    if (stopped.timedOut) throw new Error("stop() timed out");
    return { started: true, events, deletedTold: events.includes("duplicate"), ran };
  },
  async judge(state, result) {
    if (!result.ok) return { outcome: "threw", violation: `threw ${describeError(result.error)}` };
    const { started, events, deletedTold, ran } = result.value;
    const row = await readRow(state.key);
    const left = await messagesIn(state.queue);
    const poisoned = await messagesIn(queueService().getQueueClient(`${state.queue.name}-poison`));
    const outcome = !started ? "start rejected" : events.length === 0 ? "nothing settled" : events.join("+");
    const violation = (why: string): Verdict => ({ outcome, violation: why });
    if (poisoned > 0 || events.includes("poisoned")) return violation("a message whose key is done was poisoned");
    if (ran) return violation("the handler ran for a done key");
    if (row?.etag !== state.row.etag) return violation("the done record was written");
    if (events.some((e) => e === "processed" || e === "failed" || e === "ownershipLost"))
      return violation(`told ${events.join("+")} for a done key`);
    if (deletedTold && left !== 0) return violation("told deleted as a duplicate, still in the queue");
    return { outcome: `${outcome}, ${left} left` };
  },
};

it("a message past maxDequeueCount whose key is done: every fault at every request", async () => {
  expect(violationsOf(await explorer.explore(doneKeyPastLimit, { sdkRetries: ["off"] }))).toEqual([]);
});
