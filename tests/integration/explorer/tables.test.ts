/**
 * Fault-placement explorer over the table toolkit's write paths (tests/support/explorer.ts): every
 * single fault at every request, with the SDK's own retries on and off, and a seeded sample of pairs
 * (`ASC_EXPLORE_PAIRS=all` for every pair). Each operation's contract, judged against storage read
 * directly:
 * - resolved (or a transaction `committed`): its effect is stored, exactly once;
 * - a definite failure (`mayHaveBeenApplied: false`, a conflict error): nothing of it is stored;
 * - `mayHaveBeenApplied: true`: either the whole effect or nothing (a transaction is atomic), and the
 *   run is counted as `unknown (…)`, with the failure that left it open, so the table measures how
 *   often no read could decide.
 */
import type { TableClient, TableEntityResult } from "@azure/data-tables";
import { AdaptiveRateLimiter } from "../../../src/throttling/index.js";
import { fixedBackoff } from "../../../src/retry/index.js";
import {
  isMultiIndexConflictError,
  isTableTransactionError,
  multiIndexTable,
  writeAtomic,
  writeBatch,
  type MultiIndexSnapshot,
  type TransactionOutcome,
} from "../../../src/tables/index.js";
import { classifyError } from "../../../src/retry/classify.js";
import {
  createExplorer,
  describeError,
  TIMEOUT_FAULT_KINDS,
  violationsOf,
  type ExploredOperation,
  type Settled,
  type Verdict,
  type Via,
} from "../../support/explorer.js";
import { tableClient, uniqueName } from "../../support/storage.js";

type Entity = TableEntityResult<Record<string, unknown>>;
let explorer: Awaited<ReturnType<typeof createExplorer>>;
let direct: TableClient;
let serial = 0;

beforeAll(async () => {
  explorer = await createExplorer("Table toolkit: transactions and multi-index rows", ["table"]);
  direct = tableClient(uniqueName("explore"));
  await direct.createTable();
});
afterAll(async () => {
  await explorer.close("tables");
  await direct.deleteTable();
});

const nextPartition = () => `p${(serial += 1)}`;
const viaClient = (via: Via) => tableClient(direct.tableName, via.connectionString, via.tableOptions);

async function partitionRows(partitionKey: string): Promise<Map<string, Entity>> {
  const rows = new Map<string, Entity>();
  for await (const row of direct.listEntities<Record<string, unknown>>({
    queryOptions: { filter: `PartitionKey eq '${partitionKey}'` },
  })) {
    rows.set(row.rowKey!, row);
  }
  return rows;
}

/** Why a read-back left the outcome open, from the error's message. */
const OPEN_BECAUSE: readonly [RegExp, string][] = [
  [/reading it back failed too/, "read-back failed"],
  [/still on its way may yet be/, "not found, may still land"],
  [/history no longer reaches back/, "history too short"],
  [/deletes carry no write id/, "deletes only"],
];

/** How a failure is counted: definite, or unknown with what left it open (the last answer; why no read decided). */
function failureLabel(error: unknown): { label: string; unknown: boolean } {
  if (isTableTransactionError(error) && error.mayHaveBeenApplied) {
    const { statusCode, kind } = classifyError(error.cause);
    const why = OPEN_BECAUSE.find(([pattern]) => pattern.test(error.message))?.[1] ?? "not read back";
    return { label: `unknown (${statusCode ?? kind}; ${why})`, unknown: true };
  }
  const status = isTableTransactionError(error) ? ` ${error.statusCode}` : "";
  return { label: `failed: ${describeError(error)}${status}`, unknown: false };
}

const verdict = (outcome: string, problems: string[]): Verdict =>
  problems.length === 0 ? { outcome } : { outcome, violation: problems.join("; ") };

// ---------------------------------------------------------------------------------------------
// writeAtomic: a create, an ETag-checked update and a delete, committed together.

interface AtomicState {
  readonly partitionKey: string;
  readonly balanceEtag: string;
}

/** writeAtomic's transfer; `withRetry`: retried by the library (`retry` option) over a single-attempt client. */
/** The client-side time limit of a transaction in these runs: what a hang costs. */
const HANG_LIMIT_IN_MS = 1_000;

const atomic = (withRetry: boolean): ExploredOperation<AtomicState, Awaited<ReturnType<typeof writeAtomic>>> => ({
  name: `writeAtomic (create + update If-Match + delete)${withRetry ? ", library retry" : ""}`,
  async setup() {
    const partitionKey = nextPartition();
    const balance = await direct.createEntity({ partitionKey, rowKey: "balance", n: 5 });
    await direct.createEntity({ partitionKey, rowKey: "old", x: 1 });
    return { partitionKey, balanceEtag: balance.etag! };
  },
  run: ({ partitionKey, balanceEtag }, via) =>
    writeAtomic(
      viaClient(via),
      [
        ["create", { partitionKey, rowKey: "debit", amount: -25 }],
        ["update", { partitionKey, rowKey: "balance", n: 6 }, "Replace", { etag: balanceEtag }],
        ["delete", { partitionKey, rowKey: "old" }],
      ],
      {
        // A hang costs this: every transaction request has a client-side time limit.
        requestTimeoutInMs: HANG_LIMIT_IN_MS,
        ...(withRetry ? { retry: { maxRetries: 3, backoff: fixedBackoff({ delayInMs: 5 }) } } : {}),
      },
    ),
  async judge(state, result) {
    const rows = await partitionRows(state.partitionKey);
    const debit = rows.get("debit");
    const balance = rows.get("balance");
    const applied = debit?.amount === -25 && balance?.n === 6 && !rows.has("old") && rows.size === 2;
    const untouched = !debit && balance?.etag === state.balanceEtag && rows.has("old") && rows.size === 2;
    if (result.ok) {
      const problems = applied ? [] : [`told committed, stored ${describeRows(rows)}`];
      if (applied && (result.value.etags[0] !== debit.etag || result.value.etags[1] !== balance.etag))
        problems.push("the ETags returned are not the stored ones");
      return verdict("committed", problems);
    }
    const { label, unknown } = failureLabel(result.error);
    const ok = unknown ? applied || untouched : untouched;
    return verdict(label, ok ? [] : [`told ${label}, stored ${describeRows(rows)}`]);
  },
});

function describeRows(rows: Map<string, Entity>): string {
  return JSON.stringify(
    [...rows.values()].map(({ rowKey, etag: _e, timestamp: _t, partitionKey: _p, ...rest }) => ({ rowKey, ...rest })),
  );
}

// ---------------------------------------------------------------------------------------------
// writeBatch: two transactions of one partition, one after the other.

const batch = (
  limited = false,
): ExploredOperation<{ partitionKey: string }, Awaited<ReturnType<typeof writeBatch>>> => ({
  name: `writeBatch (2 transactions)${limited ? ", adaptive limiter" : ""}`,
  setup: async () => ({ partitionKey: nextPartition() }),
  run: ({ partitionKey }, via) =>
    writeBatch(
      viaClient(via),
      [
        ["create", { partitionKey, rowKey: "a", v: 1 }],
        ["create", { partitionKey, rowKey: "b", v: 2 }],
        ["upsert", { partitionKey, rowKey: "c", v: 3 }],
        ["create", { partitionKey, rowKey: "d", v: 4 }],
      ],
      // A fresh limiter per run, with a high floor: the waits after an injected 503 stay short.
      { maxOperationsPerTransaction: 2, ...(limited ? { rateLimiter: new AdaptiveRateLimiter({ minRatePerSec: 200 }) } : {}) }, // prettier-ignore
    ),
  async judge({ partitionKey }, result) {
    const rows = await partitionRows(partitionKey);
    if (!result.ok) return verdict(`threw: ${describeError(result.error)}`, ["writeBatch threw"]);
    const problems: string[] = [];
    const labels = result.value.transactions.map((t) => judgeTransaction(t, rows, problems));
    const sent = new Set(result.value.transactions.flatMap((t) => t.actionIndexes.map((i) => "abcd"[i]!)));
    if (rows.size > 0 && [...rows.keys()].some((k) => !sent.has(k))) problems.push("stored an entity never written");
    return verdict(labels.join(" + "), problems);
  },
});

function judgeTransaction(t: TransactionOutcome, rows: Map<string, Entity>, problems: string[]): string {
  const keys = t.actionIndexes.map((i) => "abcd"[i]!);
  const stored = keys.filter((k) => rows.get(k)?.v === "abcd".indexOf(k) + 1);
  const all = stored.length === keys.length;
  const none = stored.length === 0;
  if (t.status === "committed") {
    if (!all) problems.push(`transaction ${keys.join("")} told committed, stored ${stored.join("") || "nothing"}`);
    else if (keys.some((k, i) => t.etags[i] !== rows.get(k)!.etag)) problems.push(`${keys.join("")}: ETags differ`);
    return "committed";
  }
  if (t.status === "not-sent") {
    if (!none) problems.push(`transaction ${keys.join("")} told not sent, stored ${stored.join("")}`);
    return "not-sent";
  }
  const { label, unknown } = failureLabel(t.error);
  if (unknown ? !(all || none) : !none)
    problems.push(`transaction ${keys.join("")} told ${label}, stored ${stored.join("")}`);
  return label;
}

// ---------------------------------------------------------------------------------------------
// Multi-index rows: create, modify (with a key move: a tombstone and its purge), delete.

interface Lapper {
  race: string;
  bib: number;
  name: string;
  laps: number;
  [key: string]: unknown;
}
const lapOptions = {
  partitionKey: (r: Lapper) => r.race,
  indexes: { BIB: (r: Lapper) => String(r.bib).padStart(5, "0"), NAME: (r: Lapper) => r.name },
};
const runnersVia = (via: Via) => multiIndexTable<Lapper>(viaClient(via), lapOptions);
const runnersDirect = () => multiIndexTable<Lapper>(direct, lapOptions);

/** The live records of a partition: each as its rows' shared version and record; rows that disagree are a problem. */
async function liveRecords(partitionKey: string, problems: string[]): Promise<{ version: string; laps: number }[]> {
  const rows = [...(await partitionRows(partitionKey)).values()].filter((r) => r._deleted !== true);
  const byVersion = new Map<string, Entity[]>();
  for (const row of rows) byVersion.set(String(row._version), [...(byVersion.get(String(row._version)) ?? []), row]);
  const records = [];
  for (const [version, group] of byVersion) {
    const keys = group.map((r) => r.rowKey).sort();
    const name = String(group[0]!.name);
    if (keys.length !== 2 || keys[0] !== `BIB:${String(group[0]!.bib).padStart(5, "0")}` || keys[1] !== `NAME:${name}`)
      problems.push(`record ${version} has rows ${keys.join(", ")}`);
    if (group.some((r) => r.laps !== group[0]!.laps)) problems.push(`record ${version}: its rows disagree`);
    records.push({ version, laps: Number(group[0]!.laps) });
  }
  return records;
}

/** What a partition holds: one record (its laps, and its version when known), or none. */
type Expected = { readonly laps: number; readonly version?: string | undefined } | "none";

function holds(records: { version: string; laps: number }[], want: Expected): boolean {
  if (want === "none") return records.length === 0;
  return (
    records.length === 1 &&
    records[0]!.laps === want.laps &&
    (want.version === undefined || records[0]!.version === want.version)
  );
}

/** Resolved: `after` is stored; a definite failure: `before`; unknown: either. */
function judgeRecordWrite(
  result: Settled<unknown>,
  records: { version: string; laps: number }[],
  before: Expected,
  after: Expected,
  problems: string[],
): string {
  if (result.ok) {
    if (!holds(records, after)) problems.push(`told done, stored ${JSON.stringify(records)}`);
    return "done";
  }
  const { label, unknown } = isMultiIndexConflictError(result.error)
    ? { label: `failed: conflict ${result.error.reason}`, unknown: false }
    : failureLabel(result.error);
  if (!(holds(records, before) || (unknown && holds(records, after))))
    problems.push(`told ${label}, stored ${JSON.stringify(records)}`);
  return label;
}

const create: ExploredOperation<{ race: string }, MultiIndexSnapshot<Lapper>> = {
  name: "multiIndexTable.create",
  setup: async () => ({ race: nextPartition() }),
  run: ({ race }, via) => runnersVia(via).create({ race, bib: 2, name: "bob", laps: 0 }),
  async judge({ race }, result) {
    const problems: string[] = [];
    const records = await liveRecords(race, problems);
    const after = { laps: 0, version: result.ok ? result.value.version : undefined };
    const label = judgeRecordWrite(result, records, "none", after, problems);
    if (result.ok && problems.length === 0) {
      const stored = await runnersDirect().get(race, "BIB", "00002");
      if (stored?.etags.BIB !== result.value.etags.BIB) problems.push("the snapshot's ETags are not the stored ones");
    }
    return verdict(label, problems);
  },
};

interface RecordState {
  readonly race: string;
  readonly snapshot: MultiIndexSnapshot<Lapper>;
}
const recordState = async (): Promise<RecordState> => {
  const race = nextPartition();
  const snapshot = await runnersDirect().create({ race, bib: 1, name: "ada-0", laps: 0 });
  return { race, snapshot };
};

const modify: ExploredOperation<RecordState, MultiIndexSnapshot<Lapper> | undefined> = {
  name: "multiIndexTable.modify (moves a key)",
  setup: recordState,
  run: ({ race }, via) =>
    runnersVia(via).modify(race, "BIB", "00001", (r) => ({ ...r, laps: r.laps + 1, name: `ada-${r.laps + 1}` })),
  async judge({ race, snapshot }, result) {
    const problems: string[] = [];
    const records = await liveRecords(race, problems);
    if (result.ok && result.value?.record.laps !== 1) problems.push(`resolved with ${JSON.stringify(result.value)}`);
    const after = { laps: 1, version: result.ok ? result.value?.version : undefined };
    const label = judgeRecordWrite(result, records, { laps: 0, version: snapshot.version }, after, problems);
    return verdict(label, problems);
  },
};

const remove: ExploredOperation<RecordState, void> = {
  name: "multiIndexTable.delete",
  setup: recordState,
  run: ({ snapshot }, via) => runnersVia(via).delete(snapshot),
  async judge({ race, snapshot }, result) {
    const problems: string[] = [];
    const records = await liveRecords(race, problems);
    const label = judgeRecordWrite(result, records, { laps: 0, version: snapshot.version }, "none", problems);
    return verdict(label, problems);
  },
};

/** Every pair (`ASC_EXPLORE_PAIRS=all`) takes minutes; the sample, seconds. */
const timeoutInMs = process.env.ASC_EXPLORE_PAIRS === "all" ? 900_000 : 60_000;

it(
  "writeAtomic: every fault at every request, and pairs",
  async () => {
    const runs = [
      ...(await explorer.explore(atomic(false), { pairs: 12 })),
      // The library's retries over a client that tries once (the SDK's retries off): retry in one place.
      ...(await explorer.explore(atomic(true), { pairs: 12, sdkRetries: ["off"] })),
      // A request whose answer never comes (applied or not): the time limit ends it, the read-back decides.
      ...(await explorer.explore(atomic(false), { kinds: TIMEOUT_FAULT_KINDS, sdkRetries: ["off"] })),
      ...(await explorer.explore(atomic(true), { kinds: TIMEOUT_FAULT_KINDS, sdkRetries: ["off"] })),
    ];
    expect(violationsOf(runs)).toEqual([]);
  },
  timeoutInMs,
);

/** A test that explores `operation` with a sample of 12 pairs per SDK retry mode. */
const exploring =
  <S, T>(operation: ExploredOperation<S, T>) =>
  async () =>
    expect(violationsOf(await explorer.explore(operation, { pairs: 12 }))).toEqual([]);

it("writeBatch: every fault at every request, and pairs", exploring(batch()), timeoutInMs);
it(
  "writeBatch with the adaptive limiter (issue 26): every fault at every request, and pairs",
  async () => expect(violationsOf(await explorer.explore(batch(true), { pairs: 4 }))).toEqual([]),
  timeoutInMs,
);
it("multiIndexTable.create: every fault at every request, and pairs", exploring(create), timeoutInMs);
it("multiIndexTable.modify: every fault at every request, and pairs", exploring(modify), timeoutInMs);
it("multiIndexTable.delete: every fault at every request, and pairs", exploring(remove), timeoutInMs);
