/**
 * Fault-placement explorer over idempotency claims that must outlive their requests (issue 21,
 * defect 2; tests/support/explorer.ts): `idempotent()` whose `fn` outlasts an extension of its
 * claim, with every fault kind (hangs included) at every request, the extension's among them; and
 * a claim whose every extension hangs, or is refused with 503, past its expiry while a second
 * caller waits to take the key over; and the consumer, one message whose claim extensions all hang
 * past the claim. Claims last 1 s, the shortest allowed (the guard gives one up 750 ms after the
 * send it counts from), so a run takes half a second, or just over a second. The runs whose
 * extensions all fail are the fault under study and are not given placed faults on top (their
 * other requests, the claim, the release, the done mark, are explored above and in queue.test.ts).
 *
 * The contract, judged against storage read directly and against the external effects `fn` made:
 * - `fn`'s external effect happens at most once per key while a claim is held, and never after
 *   its caller's claim was given up (fn honours its signal, as documented);
 * - the done record and its transactional effect are written together, once, or not at all;
 * - a caller told a result finds it in the done record; a caller whose claim was given up is told
 *   so (`IdempotencyClaimLostError`), and no done record is written for it;
 * - after the run, a fault-free retry gets the stored result, or runs `fn` once if none was stored;
 * - the consumer: a handler whose claim could not be kept is told (`ownershipLost`), makes no
 *   effect, and no done mark, effect row or delete follows; the message comes back.
 */
import { randomUUID } from "node:crypto";
import type { TableClient, TableEntityResult, TransactionAction } from "@azure/data-tables";
import type { QueueClient } from "@azure/storage-queue";
import { exponentialBackoff } from "../../../src/retry/index.js";
import { idempotent, isIdempotencyClaimLostError, TableIdempotencyStore } from "../../../src/idempotency/index.js";
import {
  isMessageOwnershipLostError,
  jsonCodec,
  QueueConsumer,
  type QueueConsumerEvents,
} from "../../../src/queue/index.js";
import {
  ALL_FAULT_KINDS,
  createExplorer,
  describeError,
  TIMEOUT_FAULT_KINDS,
  violationsOf,
  type ExploredOperation,
  type Verdict,
  type Via,
} from "../../support/explorer.js";
import { queueService, tableClient, uniqueName } from "../../support/storage.js";

/** The claims' duration: the shortest `idempotent()` allows. */
const CLAIM_DURATION_IN_MS = 1_000;
/** The client-side time limit of every request in these runs: what a hang costs. */
const REQUEST_TIMEOUT_IN_MS = 200;

let explorer: Awaited<ReturnType<typeof createExplorer>>;
let inbox: TableClient;
const queues: QueueClient[] = [];
let serial = 0;

beforeAll(async () => {
  explorer = await createExplorer("Claims that outlive their requests: idempotent() and the consumer", [
    "queue",
    "table",
  ]);
  inbox = tableClient(uniqueName("exploreclaims"));
  await inbox.createTable();
});
afterAll(async () => {
  await explorer.close("claims");
  await inbox.deleteTable();
  await Promise.all(queues.map((q) => q.deleteIfExists()));
});

type Row = TableEntityResult<Record<string, unknown>>;
type Token = { readonly token: string };

/** What one run did, as `fn` saw it: its external effects, and when it was told to stop. */
interface CallState {
  readonly key: string;
  /** External effects (a card charge, say), by caller, in order. */
  readonly effects: string[];
  /** The order of what happened to the callers' `fn`s. */
  readonly timeline: string[];
  /** What the first caller was told (op "extensions hang"). */
  first?: { ok: true; value: Token } | { ok: false; error: unknown };
}

const rowOf = (key: string) => new TableIdempotencyStore(inbox).rowOf(key);

async function stored(key: string) {
  const { partitionKey, rowKey } = rowOf(key);
  const read = (rk: string): Promise<Row | undefined> => inbox.getEntity(partitionKey, rk).catch(() => undefined);
  const row = await read(rowKey);
  const effect = await read("effect");
  return { row, done: row?.Status === "done", effect: effect !== undefined };
}

/** Sleeps `ms`, or rejects with the signal's reason once it aborts. */
function work(ms: number, abortSignal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    abortSignal.addEventListener("abort", () => (clearTimeout(timer), reject(abortSignal.reason as Error)), {
      once: true,
    });
  });
}

/**
 * `fn` of caller `who`: works `workMs` (honouring its signal), then makes its external effect and
 * adds its transactional effect. `table` is where its store lives (through the faults, or direct).
 */
function caller(who: string, state: CallState, table: TableClient, workMs: number, wait = false) {
  return idempotent<string, Token, TransactionAction>(
    async (_key, { abortSignal, partitionKey, addEffects }) => {
      state.timeline.push(`${who} runs`);
      try {
        await work(workMs, abortSignal);
      } catch (error) {
        state.timeline.push(`${who} aborted`);
        throw error;
      }
      state.effects.push(who);
      addEffects(["create", { partitionKey, rowKey: "effect", By: who }]);
      return { token: randomUUID() };
    },
    {
      store: new TableIdempotencyStore(table),
      key: (key) => key,
      claimDurationInMs: CLAIM_DURATION_IN_MS,
      requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS,
      whenInProgress: wait ? "wait" : "reject",
    },
  );
}

const viaTable = (via: Via) => tableClient(inbox.tableName, via.connectionString, via.tableOptions);

/** The contract's common part: the record, the effects, what the callers were told, and a fault-free retry. */
async function judgeKey(state: CallState, told: readonly (Token | undefined)[], outcome: string): Promise<Verdict> {
  const violation = (why: string): Verdict => ({ outcome, violation: why });
  const { row, done, effect } = await stored(state.key);
  if (done !== effect) return violation(`torn: done record ${done}, transactional effect ${effect}`);
  if (state.effects.length > 1)
    return violation(`external effect ${state.effects.length} times: ${state.effects.join(", ")}`);
  for (const token of told) {
    if (token && (!done || row!.Result !== JSON.stringify(token)))
      return violation("told a result that is not the done record's");
  }
  // The caller tries again, with no fault (direct, generous limits): the stored result, or fn runs once.
  const before = state.effects.length;
  const again = await idempotent<string, Token, TransactionAction>(
    async (_key, { partitionKey, addEffects }) => {
      state.effects.push("retry");
      addEffects(["create", { partitionKey, rowKey: "effect", By: "retry" }]);
      return { token: randomUUID() };
    },
    { store: new TableIdempotencyStore(inbox), key: (key) => key, whenInProgress: "wait", waitTimeoutInMs: 5_000 },
  )(state.key);
  const after = await stored(state.key);
  if (!after.done || !after.effect) return violation("a fault-free retry left the key not done");
  if (done && state.effects.length > before) return violation("fn ran again for a done key");
  if (after.row!.Result !== JSON.stringify(again)) return violation("the retry's result is not the stored one");
  return { outcome };
}

const newState = (prefix: string): CallState => ({ key: `${prefix}-${(serial += 1)}`, effects: [], timeline: [] });

/** One caller whose fn outlasts the first extension of its claim (due a third of the duration after the claim). */
const outlastsAnExtension: ExploredOperation<CallState, Token> = {
  name: "idempotent(): fn outlasts an extension of its claim",
  setup: async () => newState("extend"),
  run: (state, via) => caller("A", state, viaTable(via), 350)(state.key),
  async judge(state, result) {
    const { done } = await stored(state.key);
    const outcome = result.ok
      ? "returned"
      : `failed: ${describeError(result.error)}${state.effects.length > 0 ? " after its effect" : ""}${done ? " (applied)" : ""}`;
    if (!result.ok && isIdempotencyClaimLostError(result.error) && done)
      return { outcome, violation: "told the claim was lost, yet its done record was written" };
    return judgeKey(state, [result.ok ? result.value : undefined], outcome);
  },
};

/** `table`, whose claim extensions (a Merge of the claim's expiry alone) hang, or are answered 503. */
function failingExtensions(table: TableClient, mode: "hang" | "busy503"): TableClient {
  const update = table.updateEntity.bind(table);
  table.updateEntity = ((entity: { ClaimExpiresOn?: unknown; Status?: unknown }, updateMode, options) => {
    if (updateMode !== "Merge" || !("ClaimExpiresOn" in entity) || "Status" in entity)
      return update(entity as Parameters<typeof update>[0], updateMode, options);
    if (mode === "busy503")
      return Promise.reject(Object.assign(new Error("Server busy"), { name: "RestError", statusCode: 503 }));
    const signal = options?.abortSignal as AbortSignal | undefined;
    return new Promise((_, reject) => signal?.addEventListener("abort", () => reject(signal.reason as Error)));
  }) as typeof table.updateEntity;
  return table;
}

/**
 * The first caller's claim extensions all fail (`mode`): they hang, or are answered 503 (its store's
 * path to the table breaks once `fn` started), while `fn` works past the claim's expiry; a second
 * caller, fault-free, tries the key once the first claim has expired. Faults placed by the explorer
 * land on the first caller's claim and release (each also explored on its own above and in
 * queue.test.ts); the run itself is the fault under study, so it is explored without them.
 */
function extensionsFailPastTheClaim(mode: "hang" | "busy503"): ExploredOperation<CallState, Token | undefined> {
  return {
    name: `idempotent(): every extension ${mode === "hang" ? "hangs" : "is answered 503"} past the claim; a second caller takes the key over`,
    setup: async () => newState("failing"),
    async run(state, via) {
      const table = failingExtensions(viaTable(via), mode);
      const first = caller(
        "A",
        state,
        table,
        3 * CLAIM_DURATION_IN_MS,
      )(state.key).then(
        (value) => (state.first = { ok: true, value }),
        (error: unknown) => (state.first = { ok: false, error }),
      );
      // The first claim expires a second after it was written; then the second caller comes.
      await new Promise((resolve) => setTimeout(resolve, CLAIM_DURATION_IN_MS + 50));
      try {
        return await caller("B", state, inbox, 0, true)(state.key);
      } finally {
        await first;
      }
    },
    async judge(state, result) {
      const first = state.first;
      const told = [first?.ok ? first.value : undefined, result.ok ? result.value : undefined];
      const outcome = `A ${first?.ok ? "returned" : `failed: ${describeError(first?.error)}`}, B ${result.ok ? "returned" : `failed: ${describeError(result.error)}`}`;
      const violation = (why: string): Verdict => ({ outcome, violation: why });
      if (state.timeline.includes("A runs")) {
        // A's claim could not be extended: it must have been given up, before B could run.
        if (first?.ok) return violation("A was told a result, though its claim could not be extended");
        if (!isIdempotencyClaimLostError(first?.error)) return violation("A was not told its claim was given up");
        const aborted = state.timeline.indexOf("A aborted");
        if (aborted < 0) return violation("A's fn was never aborted");
        const bRuns = state.timeline.indexOf("B runs");
        if (bRuns >= 0 && bRuns < aborted)
          return violation(`B ran while A still held the key: ${state.timeline.join(", ")}`);
      }
      if (state.effects.includes("A")) return violation("A made its external effect after its claim was given up");
      return judgeKey(state, told, outcome);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The consumer: a claim whose extensions hang past it writes no done mark
// ---------------------------------------------------------------------------------------------

interface ConsumerState {
  readonly queue: QueueClient;
  readonly key: string;
  /** The handler's external effects. */
  readonly effects: string[];
}

interface ConsumerRun {
  readonly events: readonly string[];
  readonly lost: readonly unknown[];
}

/**
 * One message, its key from the body; its handler works past the claim (the visibility timeout,
 * 1 s) while every claim extension hangs. The handler must be aborted (the claim given up, or the
 * message itself if its heartbeat fell behind on a busy machine: either is a loss told in time),
 * and no done mark, effect or delete may follow. The consumer is stopped at the first loss.
 */
const consumerExtensionsHang: ExploredOperation<ConsumerState, ConsumerRun> = {
  name: "consumer: every claim extension hangs past the claim (key from the body)",
  async setup() {
    const queue = queueService().getQueueClient(uniqueName("exploreclaim"));
    queues.push(queue, queueService().getQueueClient(`${queue.name}-poison`));
    await queue.create();
    const key = `order-${(serial += 1)}`;
    await queue.sendMessage(JSON.stringify({ key }));
    return { queue, key, effects: [] };
  },
  async run(state, via) {
    const queue = queueService(via.connectionString, via.storageOptions).getQueueClient(state.queue.name);
    const table = failingExtensions(viaTable(via), "hang");
    const consumer = new QueueConsumer<{ key: string }, TransactionAction>(
      queue,
      async (_body, { abortSignal, idempotency, addEffects }) => {
        await work(5_000, abortSignal);
        state.effects.push("charged");
        addEffects(["create", { partitionKey: idempotency!.partitionKey, rowKey: "effect" }]);
      },
      {
        codec: jsonCodec<{ key: string }>(),
        idempotency: { store: new TableIdempotencyStore(table), key: (body) => body.key },
        visibilityTimeoutInSeconds: 1,
        requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS,
        batchSize: 1,
        concurrency: 1,
        newBatchThreshold: 0,
        pollingBackoff: exponentialBackoff({ deltaInMs: 5, minInMs: 0, maxInMs: 20 }),
      },
    );
    const events: string[] = [];
    const lost: unknown[] = [];
    for (const name of ["processed", "duplicate", "failed", "poisoned", "error"] as const)
      consumer.on(name, () => events.push(name));
    const firstLoss = new Promise<void>((resolve) =>
      consumer.on("ownershipLost", ({ error }: QueueConsumerEvents["ownershipLost"]) => {
        events.push("ownershipLost");
        lost.push(error);
        resolve();
      }),
    );
    await consumer.start();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([firstLoss, new Promise((resolve) => (timer = setTimeout(resolve, 8_000)))]);
    clearTimeout(timer);
    await consumer.stop({ gracePeriodInMs: 0, timeoutInMs: 5_000 });
    return { events, lost };
  },
  async judge(state, result) {
    if (!result.ok) return { outcome: "threw", violation: `threw ${describeError(result.error)}` };
    const { events, lost } = result.value;
    const { done, effect } = await stored(state.key);
    const left = (await state.queue.getProperties()).approximateMessagesCount ?? 0;
    const outcome = `${events.join("+") || "nothing"}${lost.map((e) => ` (lost the ${isMessageOwnershipLostError(e) ? e.lost : "?"})`).join("")}`;
    const violation = (why: string): Verdict => ({ outcome, violation: why });
    if (!events.includes("ownershipLost")) return violation("the handler was never told its claim could not be kept");
    if (state.effects.length > 0) return violation("the handler made its external effect after its claim was given up");
    if (done || effect) return violation(`a done mark (${done}) or effect (${effect}) for a claim given up`);
    if (events.includes("processed")) return violation("told processed");
    if (left !== 1) return violation(`${left} messages left: it must come back for another try`);
    return { outcome };
  },
};

it("idempotent() with claim extensions: every fault at every request, extensions that hang past the claim", async () => {
  const runs = [
    ...(await explorer.explore(outlastsAnExtension, {
      sdkRetries: ["off"],
      kinds: [...ALL_FAULT_KINDS, ...TIMEOUT_FAULT_KINDS],
    })),
    ...(await explorer.explore(extensionsFailPastTheClaim("hang"), { sdkRetries: ["off"], kinds: [] })),
    ...(await explorer.explore(extensionsFailPastTheClaim("busy503"), { sdkRetries: ["off"], kinds: [] })),
  ];
  expect(violationsOf(runs)).toEqual([]);
});

it("the consumer with claim extensions that hang past the claim: no done mark", async () => {
  expect(violationsOf(await explorer.explore(consumerExtensionsHang, { sdkRetries: ["off"], kinds: [] }))).toEqual([]);
});
