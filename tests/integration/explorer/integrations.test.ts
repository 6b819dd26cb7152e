/**
 * Fault explorer of the integrations (issue 23): the Azure Functions queue wrapper
 * (`idempotentQueueHandler`, on `idempotentDelivery`) and the Express idempotency-key middleware
 * (the HTTP capture-then-store path shared with Fastify and the Functions HTTP wrapper), every fault
 * kind at every request position of the idempotency store, hangs included, and sampled pairs.
 *
 * What must hold, whichever request fails:
 * - Functions queue handler: the handler's effect (a ledger row through `addEffects`) is written
 *   only with the key's done record and at most once; a result returned means a done record that
 *   keeps it; the host's next delivery of the message (fault-free, dequeue count + 1) returns the
 *   stored result without running the handler when the key was done, or runs it once when not; a
 *   delivery of a done key never runs the handler and writes nothing.
 * - Express: a kept response (201) reaches the client only once its done record holds it; a
 *   fault-free retry of the same request gets the same body, and runs the route only when nothing
 *   was kept; the route never runs twice for a key whose response was kept.
 */
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import express from "express";
import { InvocationContext } from "@azure/functions";
import type { TableClient, TableEntityResult, TransactionAction } from "@azure/data-tables";
import { TableIdempotencyStore } from "../../../src/idempotency/index.js";
import { idempotentQueueHandler } from "../../../src/functions/index.js";
import { expressIdempotency } from "../../../src/express/index.js";
import {
  createExplorer,
  describeError,
  violationsOf,
  type ExploredOperation,
  type Verdict,
  type Via,
} from "../../support/explorer.js";
import { tableClient, uniqueName } from "../../support/storage.js";

/** The client-side time limit of every store request in the runs: what a hang costs. */
const REQUEST_TIMEOUT_IN_MS = 200;
/** Pairs sampled per operation and SDK retry mode. */
const PAIRS = 6;
/** The claim's duration in the runs: how long the host's next delivery waits for a claim left behind. */
const CLAIM_DURATION_IN_MS = 1_000;

let explorer: Awaited<ReturnType<typeof createExplorer>>;
let inbox: TableClient;
let serial = 0;

beforeAll(async () => {
  explorer = await createExplorer("Integrations: Functions queue handler, Express middleware", ["table"]);
  inbox = tableClient(uniqueName("exploreintegr"));
  await inbox.createTable();
});
afterAll(async () => {
  await explorer.close("integrations");
  await inbox.deleteTable();
});

type Row = TableEntityResult<Record<string, unknown>>;
const read = (table: TableClient, partitionKey: string, rowKey: string): Promise<Row | undefined> =>
  table.getEntity(partitionKey, rowKey).catch(() => undefined);
const viaTable = (via: Via) => tableClient(inbox.tableName, via.connectionString, via.tableOptions);
const rowOfKey = (key: string) => new TableIdempotencyStore(inbox).rowOf(key);

// ---------------------------------------------------------------------------------------------
// Azure Functions: idempotentQueueHandler
// ---------------------------------------------------------------------------------------------

interface DeliveryState {
  /** The message id: the idempotency key. */
  readonly id: string;
  readonly start: Row | undefined;
  /** How many times the handler ran, in the run and in the host's next delivery. */
  runs: number;
}

type Charged = { readonly charged: number; readonly run: number };

/** The wrapped handler on `table`; through the faults with the runs' short limits, directly with generous ones. */
function queueHandler(table: TableClient, state: DeliveryState, direct = table === inbox) {
  return idempotentQueueHandler<{ amount: number }, Charged, TransactionAction>(
    async (entry, _context, { addEffects, partitionKey }) => {
      state.runs += 1;
      addEffects(["create", { partitionKey, rowKey: "ledger", amount: entry.amount }]);
      return { charged: entry.amount, run: state.runs };
    },
    {
      store: new TableIdempotencyStore(table),
      claimDurationInMs: direct ? 20_000 : CLAIM_DURATION_IN_MS,
      requestTimeoutInMs: direct ? 5_000 : REQUEST_TIMEOUT_IN_MS,
    },
  );
}

const delivery = (id: string, dequeueCount: number) =>
  new InvocationContext({
    functionName: "processOrder",
    triggerMetadata: { id, dequeueCount, queueTrigger: "…", popReceipt: "p" },
  });

async function deliveryState(seed?: (id: string) => Promise<void>): Promise<DeliveryState> {
  const id = `msg-${(serial += 1)}`;
  await seed?.(id);
  const { partitionKey, rowKey } = rowOfKey(id);
  return { id, start: await read(inbox, partitionKey, rowKey), runs: 0 };
}

async function deliveryOutcome(id: string) {
  const { partitionKey, rowKey } = rowOfKey(id);
  const row = await read(inbox, partitionKey, rowKey);
  const ledger = await read(inbox, partitionKey, "ledger");
  return { row, done: row?.Status === "done", effect: ledger !== undefined };
}

function deliveryOperation(
  name: string,
  dequeueCount: number,
  seed?: (id: string) => Promise<void>,
): ExploredOperation<DeliveryState, Charged> {
  return {
    name,
    setup: () => deliveryState(seed),
    run: (state, via) => queueHandler(viaTable(via), state)({ amount: 30 }, delivery(state.id, dequeueCount)),
    async judge(state, result) {
      const { row, done, effect } = await deliveryOutcome(state.id);
      const outcome = result.ok ? "returned" : `failed: ${describeError(result.error)}${done ? " (applied)" : ""}`;
      const violation = (why: string): Verdict => ({ outcome, violation: why });
      if (done !== effect) return violation(`torn: done record ${done}, ledger row ${effect}`);
      if (state.runs > 1) return violation(`the handler ran ${state.runs} times`);
      if (result.ok && !done) return violation("returned a result, no done record");
      if (result.ok && row!.Result !== JSON.stringify(result.value))
        return violation("the done record keeps another result than the one returned");
      // The host delivers the message again (a failure made it visible, or its delete was lost).
      const runsBefore = state.runs;
      const again = await queueHandler(inbox, state)({ amount: 30 }, delivery(state.id, dequeueCount + 1));
      const after = await deliveryOutcome(state.id);
      if (!after.done || !after.effect) return violation("the next delivery left the key not done");
      if (done && state.runs > runsBefore) return violation("the handler ran again for a done key");
      if (result.ok && JSON.stringify(again) !== JSON.stringify(result.value))
        return violation("the next delivery got another result");
      if (after.row!.Result !== JSON.stringify(again))
        return violation("the next delivery's result is not the stored one");
      return { outcome };
    },
  };
}

const doneDelivery: ExploredOperation<DeliveryState, Charged> = {
  name: "Functions queue handler: a delivery of a message whose key is done",
  async setup() {
    const state = await deliveryState();
    await queueHandler(inbox, state)({ amount: 30 }, delivery(state.id, 1));
    const { partitionKey, rowKey } = rowOfKey(state.id);
    return { ...state, start: await read(inbox, partitionKey, rowKey), runs: 0 };
  },
  run: (state, via) => queueHandler(viaTable(via), state)({ amount: 30 }, delivery(state.id, 2)),
  async judge(state, result) {
    const { row } = await deliveryOutcome(state.id);
    const outcome = result.ok ? "stored result" : `failed: ${describeError(result.error)}`;
    if (state.runs > 0) return { outcome, violation: "the handler ran for a done key" };
    if (row?.etag !== state.start?.etag) return { outcome, violation: "the done record was written" };
    if (result.ok && row!.Result !== JSON.stringify(result.value))
      return { outcome, violation: "returned another result than the stored one" };
    return { outcome };
  },
};

it("Functions queue handler: every fault at every request, and pairs", async () => {
  const runs = [
    ...(await explorer.exploreWithHangs(deliveryOperation("Functions queue handler: first delivery", 1), PAIRS)),
    ...(await explorer.exploreWithHangs(
      deliveryOperation("Functions queue handler: a host died holding the claim", 2, async (id) => {
        await inbox.createEntity({
          ...rowOfKey(id),
          Key: id,
          Status: "claimed",
          Owner: "dead-host",
          MessageId: id,
          DequeueCount: 1,
          ClaimExpiresOn: new Date(Date.now() + 60_000),
        });
      }),
      PAIRS,
    )),
    ...(await explorer.exploreWithHangs(doneDelivery)),
  ];
  expect(violationsOf(runs)).toEqual([]);
}, 300_000);

// ---------------------------------------------------------------------------------------------
// Express: the Idempotency-Key middleware
// ---------------------------------------------------------------------------------------------

interface HttpState {
  readonly key: string;
  /** Route runs, in the run and in the client's retry. */
  runs: number;
}

interface HttpAnswer {
  readonly status: number;
  readonly body: string;
}

/** A server whose middleware's store is on `table`, a route that counts its runs; one request; the server closed. */
async function post(table: TableClient, state: HttpState, direct: boolean): Promise<HttpAnswer> {
  const app = express();
  app.use(express.json());
  app.use(
    expressIdempotency<express.Request>({
      store: new TableIdempotencyStore(table),
      tenant: () => "tenant-a",
      claimDurationInMs: direct ? 20_000 : CLAIM_DURATION_IN_MS,
      requestTimeoutInMs: direct ? 5_000 : REQUEST_TIMEOUT_IN_MS,
    }),
  );
  app.post("/payments", (req, res) => {
    state.runs += 1;
    res.status(201).json({ paymentId: `p-${state.runs}`, amount: (req.body as { amount: number }).amount });
  });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  try {
    const { port } = server.address() as AddressInfo;
    const response = await fetch(`http://127.0.0.1:${port}/payments`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": `"${state.key}"` },
      body: JSON.stringify({ amount: 30 }),
    });
    return { status: response.status, body: await response.text() };
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

const expressPost: ExploredOperation<HttpState, HttpAnswer> = {
  name: "Express middleware: a POST with an Idempotency-Key",
  setup: () => Promise.resolve({ key: `k-${(serial += 1)}`, runs: 0 }),
  run: (state, via) => post(viaTable(via), state, false),
  async judge(state, result) {
    const answered = result.ok ? result.value : undefined;
    const outcome = answered ? `HTTP ${answered.status}` : `failed: ${describeError(result.ok ? "?" : result.error)}`;
    const violation = (why: string): Verdict => ({ outcome, violation: why });
    if (state.runs > 1) return violation(`the route ran ${state.runs} times`);
    const kept = answered?.status === 201;
    // The client tries again without a fault: the kept response, or the route runs once.
    const runsBefore = state.runs;
    const again = await post(inbox, state, true);
    if (again.status !== 201) return violation(`the fault-free retry was answered ${again.status}`);
    if (kept && state.runs > runsBefore) return violation("the route ran again after its response reached the client");
    if (kept && again.body !== answered.body) return violation("the retry got another body than the first answer");
    const third = await post(inbox, state, true);
    if (third.body !== again.body || state.runs > runsBefore + 1)
      return violation("a response kept by the retry was not replayed");
    return { outcome };
  },
};

it("Express middleware: every fault at every request, and pairs", async () => {
  const runs = await explorer.exploreWithHangs(expressPost, PAIRS);
  expect(violationsOf(runs)).toEqual([]);
}, 180_000);
