/**
 * Interleaving explorer over coalescing (tests/support/interleavings.ts): two or three callers update
 * one cell at once, each in turn writing (a partial value, in Merge mode), skipping, throwing or being
 * cancelled, synchronously or after an await, while another writer may write at any point; a
 * scheduler decides the order in which callers arrive, cancel, and reach the engine's await points
 * (the cell's read and write, their own mutation). Against Azurite, on a table entity in Merge mode
 * and on a blob JSON cell.
 *
 * The contract, judged on what the cell holds afterwards:
 * - each caller told "written" has its change stored, once (a counter every change increments
 *   equals the number of changes stored); one that skipped, threw or was cancelled before the
 *   write that would have carried its change was handed to the cell has nothing stored;
 * - every `mutate` is handed the whole value (in Merge mode too), and the other writer's change
 *   and the property nobody writes are kept;
 * - every caller settles: writers and skippers resolve, a throwing caller rejects with its own
 *   error, a cancelled one with its signal's reason (or resolves, when the round finished first).
 *
 * `npm test` runs a seeded random sample (the seed is printed; `ASC_EXPLORE_SEED=n` replays it);
 * `ASC_EXPLORE_PAIRS=all` runs every order of every pair of behaviours, and a larger sample of three.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import type { ContainerClient } from "@azure/storage-blob";
import type { TableClient } from "@azure/data-tables";
import {
  blobJsonCell,
  optimisticUpdate,
  readCell,
  SKIP_WRITE,
  tableEntityCell,
  writeLastWriterWins,
  type OptimisticUpdateResult,
  type VersionedCell,
} from "../../../src/optimistic/index.js";
import { noBackoff } from "../../../src/retry/index.js";
import { seededRandom } from "../../../src/testing/index.js";
import { everyChoice, interleaving, seededChoices, type Chooser, type Event } from "../../support/interleavings.js";
import { blobService, tableClient, uniqueName } from "../../support/storage.js";

const EXHAUSTIVE = process.env.ASC_EXPLORE_PAIRS === "all";
/** Random runs per cell kind in `npm test`. */
const SAMPLE = 60;
/** Orders tried per pair of behaviours in the exhaustive run (they are far fewer in practice). */
const ORDERS_PER_PAIR = 5_000;

const BEHAVIOURS = ["write", "write async", "skip", "throw", "throw async", "cancel", "cancel async"] as const;
type Behaviour = (typeof BEHAVIOURS)[number];

type Value = { n?: number; keep?: string; ext?: number } & Record<string, unknown>;

interface CellKind {
  readonly name: string;
  /** A fresh cell holding `{ n: 0, keep: "kept" }`. */
  place(): Promise<string>;
  cell(place: string): VersionedCell<Value>;
  /** What `mutate` returns to make caller `i`'s change on `current`. */
  change(current: Value | undefined, i: number): Value;
  /** Another writer, outside the library, sets `ext: 1`. */
  external(place: string): Promise<void>;
}

let table: TableClient;
let container: ContainerClient;
let serial = 0;
const lines: string[] = [];

beforeAll(async () => {
  table = tableClient(uniqueName("coalesce"));
  await table.createTable();
  container = blobService().getContainerClient(uniqueName("coalesce"));
  await container.create();
});
afterAll(async () => {
  const text = [
    "### Optimistic engine, coalescing: interleavings of concurrent callers",
    "",
    "| cell | callers | runs | orders | caller outcomes | violations |",
    "| --- | --- | --- | --- | --- | --- |",
    ...lines,
  ].join("\n");
  mkdirSync(".test-results/explorer", { recursive: true });
  writeFileSync(".test-results/explorer/optimistic-coalescing.md", `${text}\n`);
  process.stdout.write(`\n${text}\n\n`);
  await table.deleteTable();
  await container.delete();
});

const mergeEntity: CellKind = {
  name: "table Merge",
  async place() {
    const place = `r${(serial += 1)}`;
    await writeLastWriterWins(tableEntityCell(table, "coalesce", place), { n: 0, keep: "kept" });
    return place;
  },
  cell: (place) => tableEntityCell<Value>(table, "coalesce", place, { mode: "Merge" }),
  // Merge mode: return only what changes.
  change: (current, i) => ({ n: (current?.n ?? 0) + 1, [`c${i}`]: 1 }),
  external: async (place) =>
    void (await table.updateEntity({ partitionKey: "coalesce", rowKey: place, ext: 1 }, "Merge")),
};

const jsonBlob: CellKind = {
  name: "blob JSON",
  async place() {
    const place = `b${(serial += 1)}.json`;
    await writeLastWriterWins(blobJsonCell(container.getBlockBlobClient(place)), { n: 0, keep: "kept" });
    return place;
  },
  cell: (place) => blobJsonCell<Value>(container.getBlockBlobClient(place)),
  change: (current, i) => ({ ...current, n: (current?.n ?? 0) + 1, [`c${i}`]: 1 }),
  async external(place) {
    const blob = container.getBlockBlobClient(place);
    const body = JSON.stringify({ ...(JSON.parse((await blob.downloadToBuffer()).toString()) as Value), ext: 1 });
    await blob.upload(body, body.length); // a raw writer: the write history is not kept
  },
};

interface Caller {
  readonly behaviour: Behaviour;
  readonly controller: AbortController;
  arrived?: number;
  cancelledAt?: number;
  outcome?: { ok: true; result: OptimisticUpdateResult<Value> } | { ok: false; error: unknown };
}

interface RunReport {
  readonly order: readonly string[];
  readonly outcomes: readonly string[];
  readonly violations: readonly string[];
}

/** One run: fresh cell, callers with the given behaviours, and the chooser's order. */
async function runOnce(kind: CellKind, behaviours: readonly Behaviour[], external: boolean, chooser: Chooser) {
  const place = await kind.place();
  const schedule = interleaving(chooser);
  const log: string[] = []; // what happened, in order: calls, cancels, writes handed to the cell
  const violations: string[] = [];
  const inner = kind.cell(place);
  const cell: VersionedCell<Value> = {
    ...inner,
    async read(options) {
      await schedule.gate("read");
      return schedule.track(inner.read(options));
    },
    async write(content, options) {
      log.push("write");
      await schedule.gate("write");
      return schedule.track(inner.write(content, options));
    },
  };
  const failures = behaviours.map((_, i) => new Error(`caller ${i} refuses`));
  const callers: Caller[] = behaviours.map((behaviour) => ({ behaviour, controller: new AbortController() }));
  let externalDone = false;

  const mutate = (i: number) => {
    const caller = callers[i]!;
    const change = (current: Value | undefined) => {
      if (current?.keep !== "kept")
        violations.push(`caller ${i} was handed ${JSON.stringify(current)}, not the whole value`);
      if (caller.behaviour.startsWith("throw")) throw failures[i]!;
      return caller.behaviour === "skip" ? SKIP_WRITE : kind.change(current, i);
    };
    if (!caller.behaviour.endsWith("async")) return change;
    return async (current: Value | undefined) => {
      await schedule.gate(`mutate ${i}`);
      return change(current);
    };
  };

  const events = (): Event[] => {
    const enabled: Event[] = [];
    callers.forEach((caller, i) => {
      if (caller.arrived === undefined) {
        enabled.push({
          label: `call ${i}`,
          run: () => {
            caller.arrived = log.push(`call ${i}`);
            void optimisticUpdate(cell, mutate(i), {
              abortSignal: caller.controller.signal,
              backoff: noBackoff(),
              maxAttempts: 10,
            }).then(
              (result) => (caller.outcome = { ok: true, result }),
              (error: unknown) => (caller.outcome = { ok: false, error }),
            );
          },
        });
      } else if (caller.behaviour.startsWith("cancel") && caller.cancelledAt === undefined && !caller.outcome) {
        enabled.push({
          label: `cancel ${i}`,
          run: () => {
            caller.cancelledAt = log.push(`cancel ${i}`);
            caller.controller.abort(new Error(`caller ${i} cancelled`));
          },
        });
      }
    });
    if (external && !externalDone) {
      enabled.push({
        label: "other writer",
        run: async () => {
          externalDone = true;
          log.push("other writer");
          await schedule.track(kind.external(place));
        },
      });
    }
    return enabled;
  };

  const order = await schedule.run(
    events,
    () => callers.every((c) => c.outcome !== undefined) && (!external || externalDone),
  );
  const read = await readCell(kind.cell(place));
  const stored = read.exists ? read.value : undefined;
  const judged = judge(callers, failures, stored, log, external);
  return { order, outcomes: judged.outcomes, violations: [...violations, ...judged.violations] } satisfies RunReport;
}

function judge(
  callers: readonly Caller[],
  failures: readonly Error[],
  stored: Value | undefined,
  log: readonly string[],
  external: boolean,
): { outcomes: string[]; violations: string[] } {
  const violations: string[] = [];
  const outcomes: string[] = [];
  const changes = callers.filter((_, i) => stored?.[`c${i}`] === 1).length;
  if (stored?.n !== changes) violations.push(`${changes} changes stored, counted ${stored?.n} times`);
  if (stored?.keep !== "kept") violations.push(`the property nobody writes was lost: ${JSON.stringify(stored)}`);
  if (external && stored?.ext !== 1) violations.push("the other writer's change was lost");
  callers.forEach((caller, i) => {
    const mine = stored?.[`c${i}`] === 1;
    const outcome = caller.outcome!;
    const { behaviour } = caller;
    if (outcome.ok) {
      const { written } = outcome.result;
      outcomes.push(written ? "written" : "skipped");
      if (behaviour.startsWith("throw")) violations.push(`caller ${i} (${behaviour}) resolved`);
      if (behaviour === "skip" && written) violations.push(`caller ${i} skipped, told written`);
      if (written !== mine)
        violations.push(`caller ${i} told written: ${written}, its change ${mine ? "" : "not "}stored`);
      return;
    }
    const { error } = outcome;
    if (behaviour.startsWith("throw")) {
      outcomes.push("threw");
      if (error !== failures[i]) violations.push(`caller ${i} rejected with ${String(error)}, not its own error`);
    } else if (behaviour.startsWith("cancel") && caller.cancelledAt !== undefined) {
      outcomes.push("cancelled");
      if (!(error instanceof Error) || error.message !== `caller ${i} cancelled`) {
        violations.push(`caller ${i} rejected with ${String(error)}, not its signal's reason`);
      }
      // Its change may be stored only if a write was handed to the cell between its call and its cancel.
      const handed = log.slice(caller.arrived, caller.cancelledAt - 1).includes("write");
      if (mine && !handed)
        violations.push(`caller ${i} was cancelled before any write was sent, yet its change is stored`);
    } else {
      outcomes.push("failed");
      violations.push(`caller ${i} (${behaviour}) rejected: ${String(error)}`);
    }
    if (mine && !behaviour.startsWith("cancel")) violations.push(`caller ${i} rejected, yet its change is stored`);
  });
  return { outcomes, violations };
}

/** Runs `count` random runs, or every order of every pair of behaviours; one line of the table. */
async function explore(kind: CellKind, callersCount: number, plan: "sample" | "every", count: number, seed: number) {
  const random = seededRandom(seed);
  const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;
  const outcomes = new Map<string, number>();
  const orders = new Set<string>();
  const violations: string[] = [];
  let runs = 0;
  const record = (report: RunReport, setup: string) => {
    runs++;
    orders.add(`${setup}: ${report.order.join(",")}`);
    for (const o of report.outcomes) outcomes.set(o, (outcomes.get(o) ?? 0) + 1);
    for (const v of report.violations)
      violations.push(`${kind.name} [${setup}; order ${report.order.join(", ")}]: ${v}`);
  };
  if (plan === "sample") {
    for (let run = 0; run < count; run++) {
      const behaviours = Array.from({ length: callersCount }, () => pick(BEHAVIOURS));
      const external = random() < 0.5;
      const runSeed = Math.floor(random() * 2 ** 31);
      const setup = `${behaviours.join(" + ")}${external ? " + other writer" : ""}, order seed ${runSeed}`;
      record(await runOnce(kind, behaviours, external, seededChoices(runSeed)), setup);
    }
  } else {
    for (const a of BEHAVIOURS) {
      for (const b of BEHAVIOURS) {
        for (const external of [false, true]) {
          const every = everyChoice(ORDERS_PER_PAIR);
          while (every.next()) {
            const setup = `${a} + ${b}${external ? " + other writer" : ""}, order ${every.runs}`;
            record(await runOnce(kind, [a, b], external, every), setup);
          }
        }
      }
    }
  }
  const summary = [...outcomes].map(([o, c]) => `${o} ${c}`).join(", ");
  const label = plan === "every" ? "every order of every pair" : `${runs} random (seed ${seed})`;
  lines.push(
    `| ${kind.name} | ${callersCount}: ${label} | ${runs} | ${orders.size} | ${summary} | ${violations.length} |`,
  );
  return violations;
}

const seed = Number(process.env.ASC_EXPLORE_SEED ?? Math.floor(Math.random() * 2 ** 31));

it.each([mergeEntity, jsonBlob].map((kind) => [kind.name, kind] as const))(
  "%s: concurrent callers that write, skip, throw or cancel, in every order tried",
  async (_name, kind) => {
    const violations = EXHAUSTIVE
      ? [...(await explore(kind, 2, "every", 0, seed)), ...(await explore(kind, 3, "sample", 1_000, seed))]
      : [...(await explore(kind, 2, "sample", SAMPLE, seed)), ...(await explore(kind, 3, "sample", SAMPLE, seed + 1))];
    expect(violations).toEqual([]);
  },
  3_600_000,
);
