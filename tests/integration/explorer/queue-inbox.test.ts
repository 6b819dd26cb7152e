/**
 * Fault-placement explorer over the inbox's newer write paths (tests/support/explorer.ts): every
 * fault kind (hangs included) at every request, with the SDK's retries on and off, and a seeded
 * sample of pairs. Each run is judged by its contract against storage read directly:
 *
 * - `purge()`: a record claimed or completed again after the purge's scan read it is never deleted
 *   (the run writes two such records between the scan and the first delete); a record that has not
 *   expired, or is not the store's, is never touched; an expired record is deleted, or counted as
 *   failed (left for the next purge); the counts add up;
 * - `completeMany()` then `complete()` of what it did not commit, as the consumer's batch settling
 *   calls them: each claim's effect is written with its done mark or not at all; a claim lost to
 *   another consumer writes nothing and is never told done; a claim told done is done;
 * - `idempotent()`: its effect is written at most once and only with the done record; told a
 *   result, the done record keeps that result; a caller's retry (fault-free) gets the stored result,
 *   or runs the function once if nothing was stored; a duplicate of a done key never runs it and
 *   writes nothing.
 */
import { randomUUID } from "node:crypto";
import type { TableClient, TableEntityResult, TransactionAction } from "@azure/data-tables";
import {
  idempotent,
  isIdempotencyClaimLostError,
  TableIdempotencyStore,
  type IdempotencyClaim,
  type PurgeResult,
} from "../../../src/idempotency/index.js";
import { StoreCalls } from "../../../src/idempotency/store-calls.js";
import {
  createExplorer,
  describeError,
  violationsOf,
  type ExploredOperation,
  type Verdict,
  type Via,
} from "../../support/explorer.js";
import { tableClient, uniqueName } from "../../support/storage.js";

/** The client-side time limit of every request in these runs: what a hang costs. */
const REQUEST_TIMEOUT_IN_MS = 200;
/** Pairs sampled per operation and SDK retry mode (`ASC_EXPLORE_PAIRS=all`: every pair). */
const PAIRS = 8;
/** idempotent()'s claim duration: how long a retry waits for a claim a failed call left behind. */
const CLAIM_DURATION_IN_MS = 1_000;

let explorer: Awaited<ReturnType<typeof createExplorer>>;
let inbox: TableClient;
let purged: TableClient;
let serial = 0;

beforeAll(async () => {
  explorer = await createExplorer("Inbox: purge, shared done marks, idempotent()", ["table"]);
  inbox = tableClient(uniqueName("exploreidem"));
  purged = tableClient(uniqueName("explorepurge"));
  await inbox.createTable();
  await purged.createTable();
});
afterAll(async () => {
  await explorer.close("queue-inbox");
  await inbox.deleteTable();
  await purged.deleteTable();
});

type Row = TableEntityResult<Record<string, unknown>>;

const read = (table: TableClient, partitionKey: string, rowKey: string): Promise<Row | undefined> =>
  table.getEntity(partitionKey, rowKey).catch(() => undefined);
const viaTable = (table: TableClient, via: Via) => tableClient(table.tableName, via.connectionString, via.tableOptions);
const past = () => new Date(Date.now() - 60_000);
const future = () => new Date(Date.now() + 3_600_000);

// ---------------------------------------------------------------------------------------------
// purge(): never deletes a record claimed or completed after the scan read it
// ---------------------------------------------------------------------------------------------

/** The purge table's rows: two expired, two expired then written again after the scan, one live, one foreign. */
const PURGE_KEYS = ["expired-done", "expired-claim", "completed-again", "claimed-again", "live"] as const;
type PurgeKey = (typeof PURGE_KEYS)[number];
const FOREIGN = { partitionKey: "foreign", rowKey: "not-an-inbox-row" };

interface PurgeState {
  readonly etags: Map<string, string>;
  /** Set by the run once it wrote the two records again, between the scan and the first delete. */
  raced: boolean;
}

const purgeRow = (key: PurgeKey) => new TableIdempotencyStore(purged).rowOf(key);
const record = (key: string, status: "claimed" | "done", expired: boolean, owner = "old") => ({
  ...purgeRow(key as PurgeKey),
  Key: key,
  Status: status,
  Owner: owner,
  MessageId: `msg-${owner}`,
  DequeueCount: 1,
  ClaimExpiresOn: status === "claimed" && !expired ? future() : past(),
  ...(status === "done" ? { CompletedOn: past(), ExpiresOn: expired ? past() : future(), Result: '"r"' } : {}),
});

const purge: ExploredOperation<PurgeState, PurgeResult> = {
  name: "purge (two records written again between the scan and the deletes)",
  async setup() {
    for await (const row of purged.listEntities()) await purged.deleteEntity(row.partitionKey!, row.rowKey!);
    await purged.createEntity(record("expired-done", "done", true));
    await purged.createEntity(record("expired-claim", "claimed", true));
    await purged.createEntity(record("completed-again", "done", true));
    await purged.createEntity(record("claimed-again", "claimed", true));
    await purged.createEntity(record("live", "done", false));
    await purged.createEntity({ ...FOREIGN, Status: "done", ExpiresOn: past() });
    const etags = new Map<string, string>();
    for await (const row of purged.listEntities()) etags.set(row.rowKey!, row.etag);
    return { etags, raced: false };
  },
  async run(state, via) {
    const table = viaTable(purged, via);
    const deleteEntity = table.deleteEntity.bind(table);
    // Between the scan and the first delete, another consumer completes one record again and
    // claims another: directly, not through the faults. Every delete waits for both writes: on a
    // busy machine they can outlast the purge's time limit on its first delete, whose next try
    // must still come after them.
    let race: Promise<void> | undefined;
    table.deleteEntity = async (...args) => {
      race ??= (async () => {
        state.raced = true;
        await purged.updateEntity(record("completed-again", "done", false, "newcomer"), "Replace");
        await purged.updateEntity(record("claimed-again", "claimed", false, "newcomer"), "Replace");
      })();
      await race;
      return deleteEntity(...args);
    };
    return new TableIdempotencyStore(table).purge({ requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS, maxConcurrency: 1 });
  },
  async judge(state, result) {
    const rows = new Map<PurgeKey, Row | undefined>();
    for (const key of PURGE_KEYS) rows.set(key, await read(purged, purgeRow(key).partitionKey, purgeRow(key).rowKey));
    const foreign = await read(purged, FOREIGN.partitionKey, FOREIGN.rowKey);
    const outcome = result.ok
      ? `purged ${result.value.deleted}, changed ${result.value.changed}, failed ${result.value.failed}`
      : `failed: ${describeError(result.error)}`;
    const violation = (why: string): Verdict => ({ outcome, violation: why });
    for (const key of ["completed-again", "claimed-again"] as const) {
      const row = rows.get(key);
      if (!row) return violation(`'${key}' was deleted${state.raced ? ", though written again after the scan" : ""}`);
      if (state.raced && row.Owner !== "newcomer") return violation(`'${key}' is not the newcomer's`);
    }
    if (rows.get("live")?.etag !== state.etags.get(purgeRow("live").rowKey))
      return violation("a record that has not expired was touched");
    if (foreign?.etag !== state.etags.get(FOREIGN.rowKey))
      return violation("a row that is not the store's was touched");
    if (!result.ok) return { outcome };
    const { expired, deleted, changed, failed } = result.value;
    const left = (["expired-done", "expired-claim"] as const).filter((key) => rows.get(key)).length;
    if (deleted + changed + failed !== expired)
      return violation(`counts do not add up: ${JSON.stringify(result.value)}`);
    if (expired !== 4) return violation(`${expired} expired records found, 4 expected`);
    if (left > failed) return violation(`${left} expired records left, ${failed} counted as failed`);
    if (deleted > 2) return violation(`${deleted} deletes counted, 2 records could be deleted`);
    return { outcome };
  },
};

it("purge(): every fault at every request, and pairs", async () => {
  expect(violationsOf(await explorer.exploreWithHangs(purge, PAIRS))).toEqual([]);
});

// ---------------------------------------------------------------------------------------------
// Shared done marks: completeMany(), then complete() of what it did not commit
// ---------------------------------------------------------------------------------------------

interface GroupState {
  readonly partitionKey: string;
  readonly claims: readonly IdempotencyClaim[];
  /** Keys whose claim another consumer took over before the done marks were written. */
  readonly lost: ReadonlySet<string>;
}

/** What the caller was told for each claim. */
type Told = "done" | "lost" | `failed: ${string}`;

function groupOperation(name: string, lose: boolean): ExploredOperation<GroupState, Told[]> {
  return {
    name,
    async setup() {
      const partitionKey = `group-${(serial += 1)}`;
      const store = new TableIdempotencyStore(inbox);
      const claims: IdempotencyClaim[] = [];
      // Two claims whose rows exist (a redelivery), one first delivery (its done mark creates the row).
      for (const [i, firstDelivery] of [false, true, false].entries()) {
        const key = `${partitionKey}-${i}`;
        const request = { key, partitionKey, owner: "me", messageId: `m-${key}`, dequeueCount: 2, ttlInMs: 60_000 };
        const outcome = await store.claim({ ...request, firstDelivery });
        if (outcome.status !== "claimed") throw new Error("setup: not claimed");
        claims.push(outcome.claim);
      }
      const lost = new Set<string>();
      if (lose) {
        // Another consumer took the last claim over (its holder stalled): its ETag is stale now.
        const claim = claims[2]!;
        await inbox.updateEntity(
          {
            partitionKey,
            rowKey: claim.rowKey,
            Key: claim.key,
            Status: "claimed",
            Owner: "other",
            ClaimExpiresOn: future(),
          },
          "Replace",
        );
        lost.add(claim.key);
      }
      return { partitionKey, claims, lost };
    },
    async run(state, via) {
      const calls = new StoreCalls(new TableIdempotencyStore(viaTable(inbox, via)), REQUEST_TIMEOUT_IN_MS);
      const hold = { remainingInMs: () => 60_000 };
      const entries = state.claims.map((claim) => ({
        claim,
        result: claim.key,
        effects: [
          ["create", { partitionKey: state.partitionKey, rowKey: `effect-${claim.key}`, Key: claim.key }],
        ] as TransactionAction[],
      }));
      const committed = await calls.completeMany(entries);
      const told: Told[] = [];
      // One by one (the consumer completes them concurrently; in order here, so that positions are stable).
      for (const [i, entry] of entries.entries()) {
        if (committed[i]) {
          told.push("done");
          continue;
        }
        try {
          await calls.complete(entry.claim, entry.result, entry.effects, hold);
          told.push("done");
        } catch (error) {
          told.push(isIdempotencyClaimLostError(error) ? "lost" : `failed: ${describeError(error)}`);
        }
      }
      return told;
    },
    async judge(state, result) {
      if (!result.ok) return { outcome: "threw", violation: `threw ${describeError(result.error)}` };
      const outcome = result.value.join(", ");
      for (const [i, claim] of state.claims.entries()) {
        const told = result.value[i]!;
        const row = await read(inbox, state.partitionKey, claim.rowKey);
        const effect = await read(inbox, state.partitionKey, `effect-${claim.key}`);
        const violation = (why: string): Verdict => ({ outcome, violation: `${claim.key}: ${why}` });
        if (state.lost.has(claim.key)) {
          if (told === "done") return violation("a lost claim was told done");
          if (effect) return violation("a lost claim's effect was written");
          if (row?.Owner !== "other" || row.Status !== "claimed")
            return violation("the other consumer's claim was overwritten");
          continue;
        }
        const done = row?.Status === "done";
        if (done !== (effect !== undefined))
          return violation(`torn: done mark ${done}, effect ${effect !== undefined}`);
        if (told === "lost") return violation("told lost, though nobody else touched the claim");
        if (told === "done" && (!done || row.Result !== JSON.stringify(claim.key)))
          return violation("told done, no done mark with its result");
      }
      return { outcome };
    },
  };
}

it("shared done marks (completeMany, then complete): every fault at every request, and pairs", async () => {
  const runs = [
    ...(await explorer.exploreWithHangs(groupOperation("three claims of one partition", false), PAIRS)),
    ...(await explorer.exploreWithHangs(
      groupOperation("three claims of one partition, one taken over by another consumer", true),
      PAIRS,
    )),
  ];
  expect(violationsOf(runs)).toEqual([]);
});

// ---------------------------------------------------------------------------------------------
// idempotent()
// ---------------------------------------------------------------------------------------------

interface CallState {
  readonly key: string;
  readonly start: Row | undefined;
  /** How many times fn ran, in the run and in the judge's retry. */
  runs: number;
}

type Token = { readonly token: string };

const rowOfKey = (key: string) => new TableIdempotencyStore(inbox).rowOf(key);

/**
 * The idempotent function under test, on `table`: fn writes one effect with the done record and
 * returns a fresh token. Through the faults with the runs' short time limit; directly (setup, the
 * judge's retry) with a generous one, so that a busy machine does not fail a setup.
 */
function charge(table: TableClient, state: CallState, direct = table === inbox) {
  return idempotent<string, Token, TransactionAction>(
    async (key, { partitionKey, addEffects }) => {
      state.runs += 1;
      addEffects(["create", { partitionKey, rowKey: "effect", Key: key }]);
      return { token: randomUUID() };
    },
    {
      store: new TableIdempotencyStore(table),
      key: (key) => key,
      whenInProgress: "wait",
      claimDurationInMs: direct ? 20_000 : CLAIM_DURATION_IN_MS,
      requestTimeoutInMs: direct ? 5_000 : REQUEST_TIMEOUT_IN_MS,
    },
  );
}

async function callOperationState(prefix: string, seed?: (key: string) => Promise<void>): Promise<CallState> {
  const key = `${prefix}-${(serial += 1)}`;
  await seed?.(key);
  const { partitionKey, rowKey } = rowOfKey(key);
  return { key, start: await read(inbox, partitionKey, rowKey), runs: 0 };
}

/** The key's record and its effects, read directly. */
async function callOutcome(key: string) {
  const { partitionKey, rowKey } = rowOfKey(key);
  const row = await read(inbox, partitionKey, rowKey);
  const effect = await read(inbox, partitionKey, "effect");
  return { row, done: row?.Status === "done", effect: effect !== undefined };
}

function callOperation(name: string, seed?: (key: string) => Promise<void>): ExploredOperation<CallState, Token> {
  return {
    name,
    setup: () => callOperationState("call", seed),
    run: (state, via) => charge(viaTable(inbox, via), state)(state.key),
    async judge(state, result) {
      const { row, done, effect } = await callOutcome(state.key);
      const outcome = result.ok ? "returned" : `failed: ${describeError(result.error)}${done ? " (applied)" : ""}`;
      const violation = (why: string): Verdict => ({ outcome, violation: why });
      if (done !== effect) return violation(`torn: done record ${done}, effect ${effect}`);
      if (state.runs > 1) return violation(`fn ran ${state.runs} times`);
      if (result.ok && !done) return violation("told a result, no done record");
      if (result.ok && row!.Result !== JSON.stringify(result.value))
        return violation("the done record keeps another result than the one returned");
      // The caller tries again, with no fault: the stored result, or fn runs once if nothing was stored.
      const runsBefore = state.runs;
      const again = await charge(inbox, state)(state.key);
      const after = await callOutcome(state.key);
      if (!after.done || !after.effect) return violation("a fault-free retry left the key not done");
      if (done && state.runs > runsBefore) return violation("fn ran again for a done key");
      if (result.ok && again.token !== result.value.token) return violation("the retry got another result");
      if (after.row!.Result !== JSON.stringify(again)) return violation("the retry's result is not the stored one");
      return { outcome };
    },
  };
}

const duplicateOfDone: ExploredOperation<CallState, Token> = {
  name: "idempotent(): a duplicate of a done key",
  async setup() {
    const state = await callOperationState("dup");
    await charge(inbox, state)(state.key);
    const { partitionKey, rowKey } = rowOfKey(state.key);
    return { ...state, start: await read(inbox, partitionKey, rowKey), runs: 0 };
  },
  run: (state, via) => charge(viaTable(inbox, via), state)(state.key),
  async judge(state, result) {
    const { row } = await callOutcome(state.key);
    const outcome = result.ok ? "stored result" : `failed: ${describeError(result.error)}`;
    if (state.runs > 0) return { outcome, violation: "fn ran for a done key" };
    if (row?.etag !== state.start?.etag) return { outcome, violation: "the done record was written" };
    if (result.ok && row!.Result !== JSON.stringify(result.value))
      return { outcome, violation: "returned another result than the stored one" };
    return { outcome };
  },
};

it("idempotent(): every fault at every request, and pairs", async () => {
  const runs = [
    ...(await explorer.exploreWithHangs(callOperation("idempotent(): first call of a key"), PAIRS)),
    ...(await explorer.exploreWithHangs(
      callOperation("idempotent(): take over a claim whose caller died", async (key) => {
        await inbox.createEntity({
          ...rowOfKey(key),
          Key: key,
          Status: "claimed",
          Owner: "dead",
          MessageId: "call-dead",
          DequeueCount: 1,
          ClaimExpiresOn: past(),
        });
      }),
      PAIRS,
    )),
    ...(await explorer.exploreWithHangs(duplicateOfDone)),
  ];
  expect(violationsOf(runs)).toEqual([]);
});
