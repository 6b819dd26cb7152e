/**
 * Fault-placement explorer over the claim-check and the transactional outbox (issue 25): every
 * fault kind at every request (hangs too where every request has a client-side time limit), judged
 * against storage read directly. The contracts:
 *
 * - no message whose payload is gone: every message left in a queue (and every poison copy) reads
 *   back to its payload;
 * - no blob beyond the sweep bound: every payload blob carries a `deliverableuntil` no later than
 *   its message's time to live and the send window allow, so the sweep removes it in time;
 * - claim-check send: told sent, the message is there (copies only from a resend, all alike); told
 *   refused (`mayHaveBeenSent: false`), no message;
 * - one large message through the consumer: its effect at most once, and only with its done mark;
 *   the message deleted only once its work is done; its payload deleted only after the message;
 * - the poison move of a large message: a poison copy always finds its payload, kept (`poisonedon`);
 *   the message is in one of the two queues;
 * - the sweep: deletes an expired orphan at most, never a payload that may still be delivered, never
 *   one kept for the poison queue;
 * - the outbox write: the entity and its row together or neither; told written, both are there;
 * - the relay's pass (send, then delete, two rows in order, the second one large): a row is deleted
 *   only once a message with its id is in the queue, the second is never sent before the first, and
 *   every message carries its row's id.
 */
import type { TableClient, TableEntityResult } from "@azure/data-tables";
import type { ContainerClient } from "@azure/storage-blob";
import type { QueueClient } from "@azure/storage-queue";
import {
  ClaimCheck,
  exponentialBackoff,
  fixedBackoff,
  isClaimCheckSendError,
  isConsumerResourceError,
  isTableTransactionError,
  MemoryIdempotencyStore,
  parsePoisonMessage,
  QueueConsumer,
  TableOutbox,
  type MemoryEffect,
  type QueueConsumerEvents,
} from "../../../src/index.js";
import { relayPass } from "../../../src/outbox/relay-pass.js";
import { TypedEvents } from "../../../src/queue/events.js";
import { markNow, MessageHold } from "../../../src/queue/hold.js";
import { MessageSettler } from "../../../src/queue/message-settler.js";
import {
  createExplorer,
  describeError,
  violationsOf,
  type ExploredOperation,
  type Verdict,
  type Via,
} from "../../support/explorer.js";
import { blobService, queueService, tableClient, uniqueName } from "../../support/storage.js";

/** The client-side time limit in these runs: what a hang costs. */
const LIMIT_IN_MS = 200;
/** The time limit of the set-ups' own sends (not under test). */
const SETUP_LIMIT_IN_MS = 10_000;
const TTL_IN_SECONDS = 3_600;
const VISIBILITY_IN_SECONDS = 30;
const LARGE = "L".repeat(70_000);

let explorer: Awaited<ReturnType<typeof createExplorer>>;
let table: TableClient;
const queues: QueueClient[] = [];
const containers: ContainerClient[] = [];
/** The payload container most runs share, each under a prefix of its own. */
let shared: ContainerClient;
let serial = 0;

beforeAll(async () => {
  explorer = await createExplorer("Claim-check and transactional outbox", ["blob", "queue", "table"]);
  table = tableClient(uniqueName("exploreoutbox"));
  await table.createTable();
  shared = blobService().getContainerClient(uniqueName("explorepayloads"));
  containers.push(shared);
  await shared.create();
});
afterAll(async () => {
  await explorer.close("messages");
  await table.deleteTable();
  await Promise.all([...queues, ...containers].map((c) => c.deleteIfExists()));
});

interface Place {
  readonly queue: QueueClient;
  readonly container: ContainerClient;
  /** The run's payload prefix in the container. */
  readonly prefix: string;
  /** A payload the set-up sent (under its own time limit), and the bound its `deliverableuntil` must keep. */
  readonly setupPayload?: { readonly name: string; readonly bound: number };
}

/**
 * A fresh queue (and poison queue), made directly, and a prefix of its own in the shared payload
 * container (or a container of its own, not created yet, with `newContainer`).
 */
async function place({ newContainer = false, poison = false } = {}): Promise<Place> {
  const queue = queueService().getQueueClient(uniqueName("explore"));
  const poisonQueue = queueService().getQueueClient(`${queue.name}-poison`);
  queues.push(queue, poisonQueue);
  await queue.create();
  if (poison) await poisonQueue.create();
  let container = shared;
  if (newContainer) containers.push((container = blobService().getContainerClient(uniqueName("explore"))));
  return { queue, container, prefix: `run${(serial += 1)}/` };
}

const viaQueue = (via: Via, queue: QueueClient) =>
  queueService(via.connectionString, via.storageOptions).getQueueClient(queue.name);
const viaClaimCheck = (via: Via, { container, prefix }: Place) =>
  new ClaimCheck(blobService(via.connectionString, via.storageOptions).getContainerClient(container.containerName), {
    requestTimeoutInMs: LIMIT_IN_MS,
    blobPrefix: prefix,
  });

/** Messages in a queue, visible or not. */
async function count(queue: QueueClient): Promise<number> {
  return (await queue.exists()) ? ((await queue.getProperties()).approximateMessagesCount ?? 0) : 0;
}

/** The texts of a queue's visible messages. */
async function texts(queue: QueueClient): Promise<string[]> {
  if (!(await queue.exists())) return [];
  return (await queue.peekMessages({ numberOfMessages: 32 })).peekedMessageItems.map((m) => m.messageText);
}

/**
 * The storage-wide rules, for a place: every message (and poison copy) reads back, every payload
 * blob is sweepable in time, and none before its message expires. The problems found, as text.
 */
async function storageRules({ queue, container, prefix, setupPayload }: Place): Promise<string[]> {
  const problems: string[] = [];
  const reader = new ClaimCheck(container);
  const poisonQueue = queueService().getQueueClient(`${queue.name}-poison`);
  for (const text of [
    ...(await texts(queue)),
    ...(await texts(poisonQueue)).map((t) => parsePoisonMessage(t)?.messageText ?? t),
  ]) {
    await reader
      .resolve(text)
      .catch((error: unknown) => problems.push(`a message whose payload does not read: ${describeError(error)}`));
  }
  if (await container.exists()) {
    const bound = Date.now() + TTL_IN_SECONDS * 1000 + 4 * LIMIT_IN_MS + 1_000;
    const deliverableUntil = new Map<string, number>();
    for await (const blob of container.listBlobsFlat({ includeMetadata: true, prefix })) {
      if (blob.metadata?.poisonedon !== undefined) continue; // kept for the poison queue: the operator's to delete
      const until = Number(blob.metadata?.deliverableuntil);
      const itsBound = blob.name === setupPayload?.name ? setupPayload.bound : bound;
      if (!Number.isFinite(until) || until > itsBound) problems.push(`payload ${blob.name} is not sweepable in time`);
      else deliverableUntil.set(blob.name, until);
    }
    // And never swept too early: a payload's bound is no earlier than its message's expiry.
    if (await queue.exists())
      for (const item of (await queue.peekMessages({ numberOfMessages: 32 })).peekedMessageItems) {
        const blob = (await reader.resolve(item.messageText).catch(() => undefined))?.payloadBlob;
        const until = blob === undefined ? undefined : deliverableUntil.get(blob);
        if (until !== undefined && until < item.expiresOn.getTime())
          problems.push(`payload ${blob} may be swept before its message expires`);
      }
  }
  return problems;
}

async function blobsIn({ container, prefix }: Place): Promise<{ name: string; metadata: Record<string, string> }[]> {
  if (!(await container.exists())) return [];
  const blobs: { name: string; metadata: Record<string, string> }[] = [];
  for await (const blob of container.listBlobsFlat({ includeMetadata: true, prefix }))
    blobs.push({ name: blob.name, metadata: blob.metadata ?? {} });
  return blobs;
}

// ---------------------------------------------------------------------------------------------
// Claim-check send
// ---------------------------------------------------------------------------------------------

function send(containerExists: boolean): ExploredOperation<Place, unknown> {
  return {
    name: `claim-check send, payload in a blob (container ${containerExists ? "exists" : "missing: created on 404"})`,
    setup: () => place({ newContainer: !containerExists }),
    run: (state, via) =>
      viaClaimCheck(via, state).sendMessage(viaQueue(via, state.queue), LARGE, { messageTimeToLive: TTL_IN_SECONDS }),
    async judge(state, result) {
      const problems = await storageRules(state);
      const messages = await texts(state.queue);
      const blobs = await blobsIn(state);
      const outcome = result.ok
        ? `sent${messages.length > 1 ? ` (${messages.length} copies)` : ""}`
        : `failed: ${describeError(result.error)}, ${messages.length} sent, ${blobs.length} left for the sweep`;
      const violation = (why: string): Verdict => ({ outcome, violation: why });
      if (problems.length > 0) return violation(problems.join("; "));
      if (new Set(messages).size > 1) return violation("the copies differ");
      if (blobs.length > 1) return violation(`${blobs.length} payloads for one send`);
      if (result.ok && messages.length === 0) return violation("told sent, no message");
      if (!result.ok && isClaimCheckSendError(result.error) && !result.error.mayHaveBeenSent && messages.length > 0)
        return violation("told refused, but the message is there");
      return { outcome };
    },
  };
}

// ---------------------------------------------------------------------------------------------
// One large message through the consumer; the poison move of one
// ---------------------------------------------------------------------------------------------

interface ConsumerState extends Place {
  readonly payloadBlob: string;
  readonly store: MemoryIdempotencyStore;
  effects: number;
}

interface ConsumerRun {
  readonly started: boolean;
  readonly events: readonly string[];
}

async function largeMessage(poison: boolean): Promise<ConsumerState> {
  // The set-up's own send is not under test: it gets a time limit a loaded machine can keep, and its
  // payload the bound that limit gives (see `storageRules`).
  const where = await place({ poison });
  const sent = await new ClaimCheck(where.container, {
    requestTimeoutInMs: SETUP_LIMIT_IN_MS,
    blobPrefix: where.prefix,
  }).sendMessage(where.queue, LARGE, { messageTimeToLive: TTL_IN_SECONDS });
  return {
    ...where,
    // The send started before now: its payload's time is no later than now + the time to live + its window.
    setupPayload: { name: sent.payloadBlob!, bound: Date.now() + TTL_IN_SECONDS * 1000 + 4 * SETUP_LIMIT_IN_MS },
    payloadBlob: sent.payloadBlob!,
    store: new MemoryIdempotencyStore(),
    effects: 0,
  };
}

/** Runs a consumer until `settled` is seen or the queue stays empty for a while; then stops it. */
async function runConsumer(state: ConsumerState, via: Via): Promise<ConsumerRun> {
  const consumer = new QueueConsumer<string, MemoryEffect>(
    viaQueue(via, state.queue),
    async (body, { addEffects }) => {
      if (body !== LARGE) throw new Error("not the payload");
      addEffects(() => void (state.effects += 1));
    },
    {
      claimCheck: viaClaimCheck(via, state),
      idempotency: { store: state.store },
      maxDequeueCount: 5, // a read that failed is tried again
      visibilityTimeoutInSeconds: VISIBILITY_IN_SECONDS,
      requestTimeoutInMs: LIMIT_IN_MS,
      batchSize: 1,
      concurrency: 1,
      newBatchThreshold: 0,
      retryBackoff: fixedBackoff({ delayInMs: 0 }),
      pollingBackoff: exponentialBackoff({ deltaInMs: 5, minInMs: 0, maxInMs: 20 }),
    },
  );
  const events: string[] = [];
  let settled!: () => void;
  const settledOnce = new Promise<void>((resolve) => (settled = resolve));
  for (const name of ["processed", "duplicate", "failed", "poisoned", "ownershipLost", "error"] as const) {
    consumer.on(name, (payload) => {
      const retried = name === "failed" && (payload as QueueConsumerEvents["failed"]).willRetry;
      events.push(retried ? "failed (retried)" : name);
      if (name !== "error" && !retried) settled();
    });
  }
  let empties = 0;
  consumer.on("empty", () => ++empties >= 5 && settled());
  try {
    await consumer.start();
  } catch (error) {
    if (!isConsumerResourceError(error)) throw error;
    return { started: false, events };
  }
  await settledOnce;
  const stopped = await consumer.stop({ gracePeriodInMs: 5_000, timeoutInMs: 15_000 });
  if (stopped.timedOut) throw new Error("stop() timed out");
  return { started: true, events };
}

const throughConsumer: ExploredOperation<ConsumerState, ConsumerRun> = {
  name: "one large message through the consumer (memory store, one effect)",
  setup: () => largeMessage(false),
  run: (state, via) => runConsumer(state, via),
  async judge(state, result) {
    if (!result.ok) return { outcome: "threw", violation: `threw ${describeError(result.error)}` };
    const { started, events } = result.value;
    const problems = await storageRules(state);
    const left = await count(state.queue);
    const poisoned = await count(queueService().getQueueClient(`${state.queue.name}-poison`));
    const done = state.store.inspect(state.payloadBlob)?.status === "done";
    const payloadLeft = await state.container.getBlobClient(state.payloadBlob).exists();
    const outcome = `${!started ? "start rejected" : events.join("+") || "nothing settled"}${
      left === 0 && payloadLeft ? ", payload left for the sweep" : ""
    }`;
    const violation = (why: string): Verdict => ({ outcome, violation: why });
    if (problems.length > 0) return violation(problems.join("; "));
    if (state.effects > 1) return violation(`${state.effects} effects`);
    if (done !== (state.effects === 1)) return violation(`done mark ${done}, ${state.effects} effects`);
    if (left === 0 && !done) return violation("the message was deleted, its work never done");
    if (left > 0 && !payloadLeft) return violation("the message is there, its payload is gone");
    if (poisoned > 0) return violation("poisoned, though nothing failed");
    if (events.includes("processed") && !done) return violation("told processed, no done mark");
    return { outcome };
  },
};

/** A large message received directly (its receive is not under test), and its settler on the proxied clients. */
interface ReceivedState extends ConsumerState {
  readonly message: {
    messageId: string;
    messageText: string;
    dequeueCount: number;
    insertedOn: Date | undefined;
    expiresOn: Date | undefined;
  };
  readonly popReceipt: string;
  readonly receivedAt: ReturnType<typeof markNow>;
}

async function receivedLargeMessage(): Promise<ReceivedState> {
  const state = await largeMessage(false);
  const receivedAt = markNow();
  const [item] = (await state.queue.receiveMessages({ visibilityTimeout: VISIBILITY_IN_SECONDS })).receivedMessageItems;
  const message = {
    messageId: item!.messageId,
    messageText: item!.messageText,
    dequeueCount: item!.dequeueCount,
    insertedOn: item!.insertedOn,
    expiresOn: item!.expiresOn,
  };
  return { ...state, message, popReceipt: item!.popReceipt, receivedAt };
}

function settlerVia(state: ReceivedState, via: Via): { settler: MessageSettler; hold: MessageHold; events: string[] } {
  const queue = viaQueue(via, state.queue);
  const hold = new MessageHold(queue, state.message.messageId, state.popReceipt, state.receivedAt, {
    visibilityTimeoutInSeconds: VISIBILITY_IN_SECONDS,
    requestTimeoutInMs: LIMIT_IN_MS,
  });
  const typed = new TypedEvents<QueueConsumerEvents>();
  const events: string[] = [];
  for (const name of ["poisoned", "error", "ownershipLost"] as const) typed.on(name, () => events.push(name));
  const settler = new MessageSettler(queue, typed, {
    poisonQueue: undefined,
    poisonTimeToLiveInSeconds: -1,
    requestTimeoutInMs: LIMIT_IN_MS,
    claimCheck: viaClaimCheck(via, state),
  });
  return { settler, hold, events };
}

const settleDelete: ExploredOperation<ReceivedState, string> = {
  name: "settle a processed large message: delete it, then its payload (as the consumer does)",
  setup: receivedLargeMessage,
  async run(state, via) {
    const { settler, hold } = settlerVia(state, via);
    return settler.delete(state.message, hold);
  },
  async judge(state, result) {
    if (!result.ok) return { outcome: "threw", violation: `threw ${describeError(result.error)}` };
    const problems = await storageRules(state);
    const left = await count(state.queue);
    const payloadLeft = await state.container.getBlobClient(state.payloadBlob).exists();
    const outcome = `delete ${result.value}, ${left} left, payload ${payloadLeft ? "left for the sweep" : "deleted"}`;
    if (problems.length > 0) return { outcome, violation: problems.join("; ") };
    if (left > 0 && !payloadLeft) return { outcome, violation: "the message is there, its payload is gone" };
    if (result.value === "done" && left > 0) return { outcome, violation: "told deleted, still there" };
    return { outcome };
  },
};

const poisonMove: ExploredOperation<ReceivedState, readonly string[]> = {
  name: "the poison move of a large message: keep its payload, send the poison copy, delete it",
  setup: receivedLargeMessage,
  async run(state, via) {
    const { settler, hold, events } = settlerVia(state, via);
    await settler.poison(state.message, hold, "failed every time", new Error("failed"));
    return events;
  },
  async judge(state, result) {
    if (!result.ok) {
      return isConsumerResourceError(result.error)
        ? { outcome: "consumer failed" }
        : { outcome: "threw", violation: `threw ${describeError(result.error)}` };
    }
    const problems = await storageRules(state);
    const left = await count(state.queue);
    const copies = (await texts(queueService().getQueueClient(`${state.queue.name}-poison`))).map((t) =>
      parsePoisonMessage(t)!,
    );
    const payload = await state.container
      .getBlobClient(state.payloadBlob)
      .getProperties()
      .catch(() => undefined);
    const outcome = `${result.value.join("+") || "nothing"}, ${copies.length} poison cop${copies.length === 1 ? "y" : "ies"}, ${left} left`;
    const violation = (why: string): Verdict => ({ outcome, violation: why });
    if (problems.length > 0) return violation(problems.join("; "));
    if (!payload) return violation("the payload is gone");
    if (left === 0 && copies.length === 0) return violation("the message is in neither queue");
    if (copies.some((c) => c.payloadBlob !== state.payloadBlob))
      return violation("a poison copy does not name its payload");
    if (copies.length > 0 && payload.metadata?.poisonedon === undefined)
      return violation("poisoned, but the payload is not kept for it");
    if (result.value.includes("poisoned") && copies.length === 0) return violation("told poisoned, no copy");
    return { outcome };
  },
};

// ---------------------------------------------------------------------------------------------
// The sweep
// ---------------------------------------------------------------------------------------------

interface SweepState extends Place {
  readonly expired: string;
  readonly pending: string;
  readonly poisoned: string;
}

const GRACE_IN_MS = 60_000;

const sweep: ExploredOperation<SweepState, unknown> = {
  name: "sweep (an expired orphan, a payload still deliverable, an expired one kept for the poison queue)",
  async setup() {
    const where = await place();
    const { prefix } = where;
    const upload = async (name: string, metadata: Record<string, string>) => {
      await where.container.getBlockBlobClient(name).upload("x", 1, { metadata });
      return name;
    };
    const key = (ms: number) =>
      new Date(ms)
        .toISOString()
        .replace(/[-:]/g, "")
        .replace(/\.\d+Z$/, "Z");
    const past = Date.now() - GRACE_IN_MS - 60_000;
    const future = Date.now() + 3_600_000;
    return {
      ...where,
      expired: await upload(`${prefix}${key(past)}/a`, { deliverableuntil: String(past) }),
      poisoned: await upload(`${prefix}${key(past)}/b`, { deliverableuntil: String(past), poisonedon: "x" }),
      pending: await upload(`${prefix}${key(future)}/c`, { deliverableuntil: String(future) }),
    };
  },
  run: ({ container, prefix }, via) =>
    new ClaimCheck(blobService(via.connectionString, via.storageOptions).getContainerClient(container.containerName), {
      requestTimeoutInMs: LIMIT_IN_MS,
      sweepGraceInMs: GRACE_IN_MS,
      blobPrefix: prefix,
    }).sweep(),
  async judge(state, result) {
    const names = new Set((await blobsIn(state)).map((b) => b.name));
    const outcome = result.ok
      ? `swept, expired ${names.has(state.expired) ? "kept" : "deleted"}`
      : `failed: ${describeError(result.error)}`;
    if (!names.has(state.pending)) return { outcome, violation: "deleted a payload whose message may be delivered" };
    if (!names.has(state.poisoned)) return { outcome, violation: "deleted a payload kept for the poison queue" };
    if (result.ok && (result.value as { deleted: number }).deleted > 0 && names.has(state.expired))
      return { outcome, violation: "told deleted, still there" };
    return { outcome };
  },
};

// ---------------------------------------------------------------------------------------------
// The outbox: a write, and a relay's pass
// ---------------------------------------------------------------------------------------------

type Row = TableEntityResult<Record<string, unknown>>;

async function partitionRows(partitionKey: string): Promise<Map<string, Row>> {
  const rows = new Map<string, Row>();
  for await (const row of table.listEntities<Record<string, unknown>>({
    queryOptions: { filter: `PartitionKey eq '${partitionKey}'` },
  }))
    rows.set(row.rowKey!, row);
  return rows;
}

function outboxWrite(withHead: boolean): ExploredOperation<{ partitionKey: string; head: number }, unknown> {
  return {
    name: `outbox write: an entity and its message (${withHead ? "the partition's head exists" : "a new partition"})`,
    async setup() {
      const partitionKey = `w${(serial += 1)}`;
      if (withHead) await new TableOutbox(table).write([], [{ body: "earlier" }], { partitionKey });
      return { partitionKey, head: withHead ? 2 : 1 };
    },
    run: ({ partitionKey }, via) =>
      new TableOutbox(tableClient(table.tableName, via.connectionString, via.tableOptions), {
        requestTimeoutInMs: LIMIT_IN_MS,
      }).write([["create", { partitionKey, rowKey: "order" }]], [{ body: "placed", id: `${partitionKey}-placed` }]),
    async judge({ partitionKey, head }, result) {
      const rows = await partitionRows(partitionKey);
      const entity = rows.has("order");
      const row = [...rows.values()].find((r) => r.OutboxId === `${partitionKey}-placed`);
      const next = rows.get("~outbox:default")?.NextSequence;
      const outcome = result.ok
        ? "written"
        : `failed: ${describeError(result.error)}${isTableTransactionError(result.error) && result.error.mayHaveBeenApplied ? " (unknown)" : ""}`;
      const violation = (why: string): Verdict => ({ outcome, violation: why });
      if (entity !== (row !== undefined)) return violation(`entity ${entity}, outbox row ${row !== undefined}: torn`);
      if (row && (row.Sequence !== head || next !== head + 1))
        return violation(`sequence ${String(row.Sequence)}, head ${String(next)}: expected ${head} and ${head + 1}`);
      if (result.ok && !entity) return violation("told written, nothing there");
      if (!result.ok && entity && !(isTableTransactionError(result.error) && result.error.mayHaveBeenApplied))
        return violation("told failed, but written");
      return { outcome };
    },
  };
}

interface RelayState extends Place {
  readonly partitionKey: string;
  readonly ids: readonly string[];
}

const relayTwoRows: ExploredOperation<RelayState, { relayed: number }> = {
  name: "relay pass: two rows of a partition, the second one large (send through the claim-check, delete)",
  async setup() {
    const where = await place();
    const partitionKey = `r${(serial += 1)}`;
    const ids = [`${partitionKey}-1`, `${partitionKey}-2`];
    await new TableOutbox(table, { name: "explore" }).write(
      [],
      [
        { body: "small", id: ids[0] },
        { body: LARGE, id: ids[1] },
      ],
      { partitionKey },
    );
    return { ...where, partitionKey, ids };
  },
  run: (state, via) =>
    relayPass(
      {
        table: tableClient(table.tableName, via.connectionString, via.tableOptions),
        queue: viaQueue(via, state.queue),
        claimCheck: viaClaimCheck(via, state),
        name: "explore",
        range: { from: state.partitionKey, to: `${state.partitionKey}\u0000` },
        requestTimeoutInMs: LIMIT_IN_MS,
        maxConcurrentPartitions: 1,
        messageTimeToLive: TTL_IN_SECONDS,
        onSent: () => undefined,
        onError: () => undefined,
      },
      new AbortController().signal,
    ),
  async judge(state, result) {
    const problems = await storageRules(state);
    const rows = await partitionRows(state.partitionKey);
    const reader = new ClaimCheck(state.container);
    const keys: string[] = [];
    for (const text of await texts(state.queue))
      keys.push((await reader.resolve(text).catch(() => ({ idempotencyKey: "unreadable" }))).idempotencyKey ?? "none");
    const rowLeft = state.ids.map((id) => [...rows.values()].some((r) => r.OutboxId === id));
    const sent = state.ids.map((id) => keys.includes(id));
    const outcome = result.ok
      ? `relayed ${result.value.relayed}, ${keys.length} message${keys.length === 1 ? "" : "s"}`
      : `failed: ${describeError(result.error)}`;
    const violation = (why: string): Verdict => ({ outcome, violation: why });
    if (problems.length > 0) return violation(problems.join("; "));
    if (keys.some((k) => !state.ids.includes(k)))
      return violation(`a message without its row's id: ${keys.join(", ")}`);
    for (let i = 0; i < 2; i++)
      if (!rowLeft[i] && !sent[i]) return violation(`row ${i + 1} deleted, its message never sent`);
    if (sent[1] && !sent[0]) return violation("the second row was sent before the first");
    if (result.ok && rowLeft.slice(0, result.value.relayed).some(Boolean))
      return violation(`told ${result.value.relayed} relayed, a row of them is still there`);
    return { outcome };
  },
};

// ---------------------------------------------------------------------------------------------

it("the claim-check: send, the consumer's read and settle, the poison move and the sweep, under every fault at every request", async () => {
  const runs = [
    ...(await explorer.exploreWithHangs(send(true))),
    ...(await explorer.explore(send(false), { sdkRetries: ["off"] })),
    ...(await explorer.explore(throughConsumer, { sdkRetries: ["off"] })),
    ...(await explorer.exploreWithHangs(settleDelete)),
    ...(await explorer.explore(poisonMove)), // its poison send's hangs: queue.test.ts
    ...(await explorer.explore(sweep)),
  ];
  expect(violationsOf(runs)).toEqual([]);
}, 240_000);

it("the outbox: a write, and the relay's send and delete, under every fault at every request", async () => {
  const runs = [
    ...(await explorer.exploreWithHangs(outboxWrite(true))),
    ...(await explorer.exploreWithHangs(outboxWrite(false))),
    ...(await explorer.exploreWithHangs(relayTwoRows)),
  ];
  expect(violationsOf(runs)).toEqual([]);
}, 240_000);
