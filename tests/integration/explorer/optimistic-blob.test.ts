/**
 * Fault-placement explorer over the blob cells' write paths (tests/support/explorer.ts): every single
 * fault at every request, and a seeded sample of pairs. The contract of a counter increment: told
 * "written", it is stored exactly once; told a definite failure, nothing is stored; told "unknown"
 * (OptimisticOutcomeUnknownError), either is allowed and the run is counted as unknown.
 */
import type { ContainerClient } from "@azure/storage-blob";
import {
  blobJsonCell,
  isOptimisticOutcomeUnknownError,
  optimisticUpdate,
  readCell,
  writeIfMatch,
  writeLastWriterWins,
} from "../../../src/index.js";
import {
  createExplorer,
  describeError,
  violationsOf,
  type ExploredOperation,
  type Settled,
  type Verdict,
  type Via,
} from "../../support/explorer.js";
import { blobService, uniqueName } from "../../support/storage.js";

type Counter = { n: number };
let explorer: Awaited<ReturnType<typeof createExplorer>>;
let container: ContainerClient;
let serial = 0;

beforeAll(async () => {
  explorer = await createExplorer("Optimistic engine, blob cells", ["blob"]);
  container = blobService().getContainerClient(uniqueName("explore"));
  await container.create();
});
afterAll(async () => {
  await explorer.close("optimistic-blob");
  await container.delete();
});

interface CounterState {
  readonly name: string;
  readonly start: number | undefined;
}

const cellVia = (via: Via, name: string) =>
  blobJsonCell<Counter>(
    blobService(via.connectionString, via.storageOptions)
      .getContainerClient(container.containerName)
      .getBlockBlobClient(name),
  );

async function stored(name: string): Promise<number | undefined> {
  const read = await readCell(blobJsonCell<Counter>(container.getBlockBlobClient(name)));
  return read.exists ? read.value.n : undefined;
}

function counterState(start: number | undefined) {
  return async (): Promise<CounterState> => {
    const name = `c-${(serial += 1)}.json`;
    if (start !== undefined)
      await writeLastWriterWins(blobJsonCell<Counter>(container.getBlockBlobClient(name)), { n: start });
    return { name, start };
  };
}

/**
 * Judges increments: `told` is how many the caller was told were written; an unknown outcome allows
 * one more. Anything else stored is a lost or doubled update.
 */
async function judgeIncrements(state: CounterState, told: number, unknown: boolean, label: string): Promise<Verdict> {
  const base = state.start ?? 0;
  const now = (await stored(state.name)) ?? 0;
  const allowed = unknown ? [base + told, base + told + 1] : [base + told];
  return allowed.includes(now)
    ? { outcome: label }
    : { outcome: label, violation: `told ${told} written${unknown ? " + 1 unknown" : ""}, stored ${base} -> ${now}` };
}

function incrementsJudge(total: number) {
  return async (state: CounterState, result: Settled<number>): Promise<Verdict> => {
    if (result.ok) return judgeIncrements(state, result.value, false, result.value === total ? "written" : "partial");
    const unknown = isOptimisticOutcomeUnknownError(result.error);
    const done = (result.error as { completed?: number }).completed ?? 0;
    return judgeIncrements(state, done, unknown, unknown ? "unknown" : `failed: ${describeError(result.error)}`);
  };
}

/** `times` increments in a row (the second and later skip their read: this process wrote last). */
function increments(name: string, start: number | undefined, times: number): ExploredOperation<CounterState, number> {
  return {
    name,
    setup: counterState(start),
    async run(state, via) {
      const cell = cellVia(via, state.name);
      for (let i = 0; i < times; i++) {
        try {
          await optimisticUpdate(cell, (current) => ({ n: (current?.n ?? 0) + 1 }));
        } catch (error) {
          throw Object.assign(error as object, { completed: i });
        }
      }
      return times;
    },
    judge: incrementsJudge(times),
  };
}

it("optimisticUpdate on a blob JSON cell: every fault at every request, and pairs", async () => {
  const runs = [
    ...(await explorer.explore(increments("optimisticUpdate (create)", undefined, 1), { pairs: 24 })),
    ...(await explorer.explore(increments("optimisticUpdate (update)", 5, 1), { pairs: 24 })),
    ...(await explorer.explore(increments("optimisticUpdate x2 (skip-read)", 5, 2), { pairs: 24 })),
  ];
  expect(violationsOf(runs)).toEqual([]);
});

it("writeIfMatch on a blob JSON cell", async () => {
  const ifMatch: ExploredOperation<CounterState & { etag: string }, boolean> = {
    name: "writeIfMatch",
    async setup() {
      const state = await counterState(5)();
      const read = await readCell(blobJsonCell<Counter>(container.getBlockBlobClient(state.name)));
      return { ...state, etag: read.exists ? read.etag : "" };
    },
    async run(state, via) {
      return (await writeIfMatch(cellVia(via, state.name), state.etag, { n: 6 })).written;
    },
    async judge(state, result) {
      if (result.ok && !result.value) return { outcome: "refused", violation: "told someone else saved, nobody did" };
      return incrementsJudge(1)(state, result.ok ? { ok: true, value: 1 } : result);
    },
  };
  expect(violationsOf(await explorer.explore(ifMatch, { pairs: 16 }))).toEqual([]);
});
