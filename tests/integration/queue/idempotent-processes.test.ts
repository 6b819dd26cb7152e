/**
 * `idempotent()` across processes, with SIGKILLs: several processes call the same idempotent
 * function for the same keys at once; two of them are killed with SIGKILL while their function
 * runs. Afterwards every key's effect was committed exactly once, and every caller of a key got
 * the same result: the one stored with its done record.
 */
import type { TransactionAction } from "@azure/data-tables";
import { idempotent, TableIdempotencyStore } from "../../../src/idempotency/index.js";
import { workerGroup } from "../../support/processes.js";
import { tableClient, uniqueName } from "../../support/storage.js";

const WORKER = "tests/integration/queue/workers/idempotent-worker.ts";
const KEYS = 150;

interface Line {
  pid: number;
  event: string;
  key?: string;
  result?: { pid: number; token: string };
  error?: string;
}

it("commits each key's effect exactly once and gives every caller the stored result, though callers are killed mid-call", async () => {
  const inbox = tableClient(uniqueName("idemprocs"));
  await inbox.createTable();
  const env = { ASC_INBOX: inbox.tableName, ASC_KEYS: String(KEYS) };
  const { workers, start, stopAll } = workerGroup(WORKER, env);
  const [a, b] = [start(), start(), start()];
  try {
    // Each of three workers runs fn for about a third of the keys: the kill points stay well below
    // that, or a victim could finish before it is killed (seen with 50).
    for (const [victim, after] of [
      [a, 15],
      [b, 25],
    ] as const) {
      let running = 0;
      await victim.waitFor<Line>((m) => m.event === "running" && ++running >= after, 60_000);
      await victim.kill("SIGKILL");
      start();
    }
    const survivors = workers.filter((w) => w !== a && w !== b);
    await Promise.all(survivors.map((w) => w.waitFor<Line>((m) => m.event === "finished", 120_000)));
  } finally {
    await stopAll();
  }

  // A last pass in this process: every key is done, or is completed now.
  const charge = idempotent<string, { pid: number; token: string }, TransactionAction>(
    async () => {
      throw new Error("every key was run by a worker, or its claim was taken over by one");
    },
    { store: new TableIdempotencyStore(inbox), key: (key) => key, whenInProgress: "wait", claimDurationInMs: 2_000 },
  );
  const stored = new Map<string, string>();
  for (let i = 0; i < KEYS; i++) stored.set(`key-${i}`, (await charge(`key-${i}`)).token);

  // Exactly one effect per key.
  const effects = new Map<string, number>();
  for await (const row of inbox.listEntities<{ Key?: string }>({
    queryOptions: { filter: "RowKey ge 'effect-' and RowKey lt 'effect.'" },
  })) {
    effects.set(row.Key!, (effects.get(row.Key!) ?? 0) + 1);
  }
  expect([...effects.entries()].filter(([, n]) => n !== 1)).toEqual([]);
  expect(effects.size).toBe(KEYS);

  // Every caller of a key got the stored result.
  const lines = workers.flatMap((w) => w.messages as Line[]);
  const mismatched = lines.filter((m) => m.event === "result" && m.result!.token !== stored.get(m.key!));
  expect(mismatched).toEqual([]);
  expect(lines.filter((m) => m.event === "result").length).toBeGreaterThanOrEqual(KEYS * 3 - 100);

  // The kills happened mid-call: each killed worker had started fn for a key it never returned from.
  for (const killed of [a, b]) {
    const own = killed.messages as Line[];
    const returned = new Set(own.filter((m) => m.event === "result").map((m) => m.key));
    expect(own.filter((m) => m.event === "running" && !returned.has(m.key)).length).toBeGreaterThan(0);
  }
  // No failure besides answers slower than the request time limit on this shared machine.
  expect(lines.filter((m) => m.event === "error" && !/RequestTimedOut|no answer within/.test(m.error!))).toEqual([]);
  await inbox.deleteTable();
}, 180_000);
