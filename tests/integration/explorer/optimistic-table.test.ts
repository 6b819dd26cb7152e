/**
 * Fault-placement explorer over the table entity cell's write paths, in Replace and in Merge mode
 * (tests/support/explorer.ts): every single fault at every request, and a seeded sample of pairs
 * (`ASC_EXPLORE_PAIRS=all`: every pair), for each of optimisticUpdate (create, update, skip-read),
 * writeIfMatch and writeLastWriterWins, and the stale-cache dimension (another writer since this
 * process's last write; single faults, SDK retries off). A Merge update returns the counter alone;
 * the contract (./optimistic-contract.ts) also checks that the property it does not send is kept.
 */
import type { TableClient } from "@azure/data-tables";
import { tableEntityCell, writeLastWriterWins } from "../../../src/optimistic/index.js";
import { createExplorer, TIMEOUT_FAULT_KINDS, violationsOf } from "../../support/explorer.js";
import { tableClient, uniqueName } from "../../support/storage.js";
import {
  counterOperations,
  EXPLORE_TIMEOUT_IN_MS,
  limitedUpdates,
  STALE_CACHE_EXPLORE,
  staleCacheOperations,
  type CounterCell,
} from "./optimistic-contract.js";

/** Pairs sampled per operation and SDK retry setting in `npm test`. */
const PAIRS = 12;

type Counter = { n?: number; keep?: string };
let explorer: Awaited<ReturnType<typeof createExplorer>>;
let table: TableClient;
let serial = 0;

beforeAll(async () => {
  explorer = await createExplorer("Optimistic engine, table entity cells", ["table"]);
  table = tableClient(uniqueName("explore"));
  await table.createTable();
});
afterAll(async () => {
  await explorer.close("optimistic-table");
  await table.deleteTable();
});

function entityCounter(mode: "Replace" | "Merge"): CounterCell<Counter> {
  const direct = (place: string) => tableEntityCell<Counter>(table, "explore", place, { mode });
  return {
    kind: `table ${mode}`,
    async place(start) {
      const place = `e-${(serial += 1)}`;
      if (start !== undefined) await writeLastWriterWins(direct(place), { n: start, keep: "kept" });
      return place;
    },
    via: (via, place) =>
      tableEntityCell<Counter>(tableClient(table.tableName, via.connectionString, via.tableOptions), "explore", place, {
        mode,
      }),
    direct,
    count: (value) => value?.n,
    // Merge: send the counter alone (what Merge is for); Replace: the whole entity.
    increment: (current) =>
      mode === "Merge" ? { n: (current?.n ?? 0) + 1 } : { ...current, n: (current?.n ?? 0) + 1 },
    whole: (n) => ({ n, keep: "kept" }),
    checkRest: (stored, start) =>
      start !== undefined && stored !== undefined && stored.keep !== "kept"
        ? `the property not written was lost: ${JSON.stringify(stored)}`
        : undefined,
  };
}

const counters = (["Replace", "Merge"] as const).map(entityCounter);

describe.each(counters.map((cell) => [cell.kind, counterOperations(cell)] as const))("%s", (_kind, operations) => {
  it.each(operations.map((operation) => [operation.name, operation] as const))(
    "%s: every fault at every request, and pairs",
    async (_name, operation) => {
      expect(violationsOf(await explorer.explore(operation, { pairs: PAIRS }))).toEqual([]);
    },
    EXPLORE_TIMEOUT_IN_MS,
  );
});

// Requests whose answer never comes (not applied, or applied and held back): every read and write of
// the engine has a client-side time limit; a cut-off write is settled as a lost answer.
describe.each(counters.map((cell) => [cell.kind, counterOperations(cell)] as const))(
  "%s, hangs",
  (_kind, operations) => {
    it.each(operations.map((operation) => [operation.name, operation] as const))(
      "%s: a hang at every request",
      async (_name, operation) => {
        const runs = await explorer.explore(operation, { kinds: TIMEOUT_FAULT_KINDS, sdkRetries: ["off"] });
        expect(violationsOf(runs)).toEqual([]);
      },
      EXPLORE_TIMEOUT_IN_MS,
    );
  },
);

// The updates again with the adaptive limiter on (issue 26): it waits, records and cuts around every
// request, the read-backs of a lost answer included, and must not change what is stored or told.
// Merge only, and a smaller sample of pairs: the limiter wraps the cell, whatever the mode.
describe("table Merge, adaptive limiter", () => {
  it.each(limitedUpdates(counters[1]!).map((operation) => [operation.name, operation] as const))(
    "%s: every fault at every request, and pairs",
    async (_name, operation) => {
      expect(violationsOf(await explorer.explore(operation, { pairs: 4 }))).toEqual([]);
    },
    EXPLORE_TIMEOUT_IN_MS,
  );
});

describe.each(counters.map((cell) => [cell.kind, staleCacheOperations(cell)] as const))(
  "%s, stale cache",
  (_kind, operations) => {
    it.each(operations.map((operation) => [operation.name, operation] as const))(
      "%s: every fault at every request",
      async (_name, operation) => {
        expect(violationsOf(await explorer.explore(operation, STALE_CACHE_EXPLORE))).toEqual([]);
      },
      EXPLORE_TIMEOUT_IN_MS,
    );
  },
);
