/**
 * The telemetry explorer (issue 21): telemetry can never change an outcome. Instead of the faults
 * one thinks of, every call the library makes into OpenTelemetry gets its turn to throw:
 *
 * 1. Run each operation with telemetry off, from a fresh start, and write down what an observer
 *    sees: what the call answered, what storage holds afterwards, what became of each lock's signal.
 * 2. Run it again with a real OpenTelemetry SDK registered (tests/support/telemetry-faults.ts) and
 *    count the calls made into each part of it: the tracer (provider, tracer, spans), the span
 *    processor, the exporter, the meter (provider, meter, instruments), the context manager.
 * 3. For each part and each N = 1..count, run it once more with the N-th call into that part
 *    throwing, and once with every call into it throwing. The observer must see exactly what it saw
 *    with telemetry off, and no rejection may go unhandled.
 *
 * The meter's calls (`getMeter` and the instruments' creation) are the same for every operation:
 * the library makes its instruments on its first instrumented call after a provider is registered.
 * They are explored position by position with the first operation, and as "every call throws"
 * with the others; the instruments' own calls (`record`, `add`) with each.
 *
 * It runs in this process against the shared Azurite (a crash would fail the file; the hostile
 * values that once crashed the process are explored in a process of their own:
 * hostile-values.test.ts). Prints its table and writes it to .test-results/explorer/telemetry.md.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import type { ContainerClient } from "@azure/storage-blob";
import type { TableClient } from "@azure/data-tables";
import type { QueueClient } from "@azure/storage-queue";
import { blobJsonCell, optimisticUpdate } from "../../../src/optimistic/index.js";
import {
  blobLeasable,
  blobLock,
  isLeaseLostError,
  LeaseLock,
  startLeaderElection,
  type LockHandle,
} from "../../../src/lease/index.js";
import { fixedBackoff } from "../../../src/retry/index.js";
import { parsePoisonMessage, QueueConsumer, textCodec } from "../../../src/queue/index.js";
import { writeBatch } from "../../../src/tables/index.js";
import { describeError } from "../../../src/internal/describe-error.js";
import { blobService, queueService, tableClient, uniqueName } from "../../support/storage.js";
import {
  installTelemetry,
  TELEMETRY_FAULT_KINDS,
  type TelemetryFaultKind,
  type TelemetryFaultPlan,
} from "../../support/telemetry-faults.js";
import { exponentialBackoff } from "../../../src/retry/index.js";

/** One operation: runs from a fresh start and answers what an observer sees, in words. */
interface TelemetryOperation {
  readonly name: string;
  run(): Promise<string>;
}

let container: ContainerClient;
let table: TableClient;
const queues: QueueClient[] = [];

beforeAll(async () => {
  container = blobService().getContainerClient(uniqueName("telemetryexplorer"));
  await container.create();
  table = tableClient(uniqueName("telemetryexplorer"));
  await table.createTable();
});
afterAll(async () => {
  await Promise.allSettled([container.delete(), table.deleteTable(), ...queues.map((q) => q.deleteIfExists())]);
});

/** What a settled promise answered, in words: the value's words, or the error's name and description. */
async function settled<T>(promise: Promise<T>, words: (value: T) => string | Promise<string>): Promise<string> {
  try {
    return `resolved ${await words(await promise)}`;
  } catch (error) {
    return `rejected ${describeError(error)}`;
  }
}

async function until(condition: () => boolean, timeoutInMs: number): Promise<void> {
  const deadline = Date.now() + timeoutInMs;
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** The signal's end in words: not aborted, or the reason's kind. */
function signalWords(handle: LockHandle): string {
  if (!handle.abortSignal.aborted) return "signal live";
  const reason: unknown = handle.abortSignal.reason;
  if (isLeaseLostError(reason)) return `signal aborted (lost: ${reason.reason})`;
  return `signal aborted (${(reason as { name?: string }).name})`;
}

const OPERATIONS: TelemetryOperation[] = [
  {
    // Two rounds: a rival write in between makes the first a conflict (an event on the span).
    name: "optimisticUpdate (a conflict, then the write)",
    async run() {
      const blob = container.getBlockBlobClient(`${uniqueName("doc")}.json`);
      await blob.upload(JSON.stringify({ n: 5 }), 8);
      const outcome = await settled(
        optimisticUpdate(
          blobJsonCell<{ n: number }>(blob),
          async (current, { attempt }) => {
            if (attempt === 1) await blob.upload(JSON.stringify({ n: 100 }), 10);
            return { n: (current?.n ?? 0) + 1 };
          },
          { backoff: fixedBackoff({ delayInMs: 1 }) },
        ),
        (r) => `written ${r.written} value ${JSON.stringify(r.value)} attempts ${r.attempts}`,
      );
      return `${outcome}; stored ${(await blob.downloadToBuffer()).toString()}`;
    },
  },
  {
    name: "lock acquire, release",
    async run() {
      const name = uniqueName("lock");
      const lock = blobLock(container, name, { durationInSeconds: 15 });
      let handle: LockHandle | undefined;
      const acquired = await settled(lock.acquire({ timeoutInMs: 5_000 }), async (h) => {
        handle = h;
        return `token ${h.fencingToken}, held at the service ${(await lock.inspect()).held}`;
      });
      const released = handle ? await settled(handle.release(), () => signalWords(handle!)) : "-";
      return `${acquired}; release ${released}; afterwards held ${(await lock.inspect()).held}`;
    },
  },
  {
    // Another holder (a lock of its own waiting room, as if in another process) gives the lock up
    // while this one waits: busy looks (span events), then the hand-off.
    name: "lock acquire, waiting for another holder",
    async run() {
      const name = uniqueName("lock");
      const elsewhere = new LeaseLock({ ...blobLeasable(container, name), key: undefined }, { durationInSeconds: 15 });
      const other = await elsewhere.acquire();
      const lock = blobLock(container, name, { durationInSeconds: 15, pollIntervalInMs: 20 });
      const waiting = lock.acquire({ timeoutInMs: 10_000 });
      setTimeout(() => void other.release(), 60);
      let handle: LockHandle | undefined;
      const acquired = await settled(waiting, (h) => ((handle = h), `token ${h.fencingToken}`));
      const released = handle ? await settled(handle.release(), () => signalWords(handle!)) : "-";
      return `${acquired}; release ${released}; afterwards held ${(await lock.inspect()).held}`;
    },
  },
  {
    // The lease is broken and taken by another client: the next renewal (100 ms after the acquire)
    // is refused, and the signal must abort (r18), whatever the lost-lock span does.
    name: "lock renewal refused: loss, release",
    async run() {
      const name = uniqueName("lock");
      const lock = blobLock(container, name, { durationInSeconds: 15, renewIntervalInMs: 100 });
      const handle = await lock.acquire({ timeoutInMs: 5_000 });
      const renewed = signalWords(handle);
      await lock.break({ breakPeriodInSeconds: 0 });
      const other = await blobLock(container, name, { durationInSeconds: 15, pollIntervalInMs: 20 }).acquire({
        timeoutInMs: 5_000,
      });
      await until(() => handle.abortSignal.aborted, 5_000);
      const lost = `${handle.status}, ${signalWords(handle)}`;
      const released = await settled(handle.release(), () => handle.status);
      const otherHolds = other.status;
      await other.release();
      return `held: ${renewed}; after the break ${lost}; release ${released}; the other ${otherHolds}`;
    },
  },
  {
    name: "leader election: elected, stopped",
    async run() {
      const name = uniqueName("leader");
      let started = 0;
      let stopped = 0;
      let leading: AbortSignal | undefined;
      const election = startLeaderElection(blobLeasable(container, name), {
        identity: "candidate-1",
        retryPeriodInMs: 100,
        onStartedLeading: (signal) => void ((leading = signal), started++),
        onStoppedLeading: () => void stopped++,
      });
      await until(() => started > 0, 5_000);
      const leader = `leader ${election.isLeader}, seen ${election.leader}`;
      await election.stop();
      const held = (await blobLock(container, name).inspect()).held;
      return `${leader}; started ${started}, stopped ${stopped}, signal aborted ${leading?.aborted}, leader after stop ${election.isLeader}, lease held ${held}`;
    },
  },
  {
    // One message processed, one failing on its last allowed reception: poisoned with a reason.
    name: "queue consumer: processed, failed and poisoned",
    async run() {
      const queue = queueService().getQueueClient(uniqueName("telemetry"));
      const poison = queueService().getQueueClient(`${queue.name}-poison`);
      queues.push(queue, poison);
      await queue.create();
      await queue.sendMessage("ok");
      await queue.sendMessage("fail");
      const seen: string[] = [];
      const consumer = new QueueConsumer(
        queue,
        async (text: string) => {
          if (text === "fail") throw new Error("the handler failed");
          return text.length;
        },
        {
          codec: textCodec,
          maxDequeueCount: 1,
          visibilityTimeoutInSeconds: 5,
          pollingBackoff: exponentialBackoff({ deltaInMs: 20, minInMs: 0, maxInMs: 100 }),
        },
      );
      consumer.on("processed", ({ message, result }) =>
        seen.push(`processed ${message.messageText} -> ${String(result)}`),
      );
      consumer.on("poisoned", ({ message, reason }) => seen.push(`poisoned ${message.messageText}: ${reason}`));
      consumer.on("error", ({ error, operation }) => seen.push(`error ${operation}: ${describeError(error)}`));
      await consumer.start();
      await until(() => seen.length >= 2, 10_000);
      await consumer.stop();
      const left = (await queue.peekMessages({ numberOfMessages: 32 })).peekedMessageItems.length;
      const poisoned = (await poison.receiveMessages({ numberOfMessages: 32 })).receivedMessageItems.map(
        (m) => parsePoisonMessage(m.messageText)?.reason,
      );
      return `${seen.sort().join(" | ")}; left in the queue ${left}; poison queue ${JSON.stringify(poisoned)}`;
    },
  },
  {
    name: "batch writer: two transactions",
    async run() {
      const run = uniqueName("b");
      const actions = Array.from(
        { length: 4 },
        (_, i) => ["upsert", { partitionKey: `${run}-${i % 2}`, rowKey: `r${i}`, i }] as const,
      );
      const outcome = await settled(
        writeBatch(table, actions),
        (r) => `ok ${r.ok}: ${r.transactions.map((t) => `${t.status} [${t.actionIndexes.join(",")}]`).join(", ")}`,
      );
      let stored = 0;
      for (const partition of [`${run}-0`, `${run}-1`])
        for await (const _ of table.listEntities({ queryOptions: { filter: `PartitionKey eq '${partition}'` } }))
          stored++;
      return `${outcome}; stored ${stored}`;
    },
  },
];

interface Row {
  operation: string;
  kind: TelemetryFaultKind | "none";
  positions: number;
  runs: number;
  fired: number;
  violations: number;
}

const rows: Row[] = [];
const violations: string[] = [];
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => void unhandled.push(reason);

beforeAll(() => void process.on("unhandledRejection", onUnhandled));
afterAll(() => {
  process.off("unhandledRejection", onUnhandled);
  const lines = [
    "### Telemetry explorer: the N-th call into each part of OpenTelemetry throws",
    "",
    "| operation | part that throws | positions | runs | faults fired | violations |",
    "| --- | --- | --- | --- | --- | --- |",
    ...rows.map(
      (r) =>
        `| ${r.operation} | ${r.kind} | ${r.kind === "none" ? "-" : r.positions === 0 ? "every" : `1..${r.positions}, every`} | ${r.runs} | ${r.fired} | ${r.violations} |`,
    ),
    "",
    `runs ${rows.reduce((n, r) => n + r.runs, 0)}, violations ${rows.reduce((n, r) => n + r.violations, 0)}`,
  ];
  const text = lines.join("\n");
  mkdirSync(".test-results/explorer", { recursive: true });
  writeFileSync(".test-results/explorer/telemetry.md", `${text}\n`);
  process.stdout.write(`\n${text}\n\n`);
});

/** Runs `op` with the set-up of `plan` registered (or, without a plan, none at all). */
async function runWith(op: TelemetryOperation, plan: TelemetryFaultPlan | "off" | "counting") {
  const installed = plan === "off" ? undefined : installTelemetry(plan === "counting" ? undefined : plan);
  const before = unhandled.length;
  try {
    const seen = await op.run();
    await new Promise((resolve) => setImmediate(resolve)); // let a stray rejection surface
    const stray = unhandled.slice(before).map((reason) => describeError(reason));
    return { seen, stray, calls: installed ? { ...installed.calls } : undefined, fired: installed?.thrown() ?? 0 };
  } finally {
    await installed?.uninstall();
  }
}

it.each(OPERATIONS.map((op) => [op.name, op] as const))(
  "%s: the same outcome whichever call into OpenTelemetry throws",
  async (name, op) => {
    const off = await runWith(op, "off");
    const counting = await runWith(op, "counting");
    const judge = (kind: Row["kind"], label: string, run: { seen: string; stray: string[] }) => {
      const problems = [
        ...(run.seen === off.seen ? [] : [`saw "${run.seen}", with telemetry off "${off.seen}"`]),
        ...run.stray.map((s) => `unhandled rejection: ${s}`),
      ];
      for (const problem of problems) violations.push(`${name} [${kind} ${label}]: ${problem}`);
      return problems.length > 0 ? 1 : 0;
    };
    rows.push({
      operation: name,
      kind: "none",
      positions: 0,
      runs: 1,
      fired: 0,
      violations: judge("none", "-", counting),
    });
    for (const kind of TELEMETRY_FAULT_KINDS) {
      const count = counting.calls![kind];
      const positions = kind === "meter" && op !== OPERATIONS[0] ? 0 : count; // see the header
      const row: Row = { operation: name, kind, positions, runs: 0, fired: 0, violations: 0 };
      const plans: TelemetryFaultPlan[] = [
        ...Array.from({ length: positions }, (_, i) => ({ kind, at: i + 1 })),
        ...(count > 0 ? [{ kind, at: "every" as const }] : []),
      ];
      for (const plan of plans) {
        const run = await runWith(op, plan);
        row.runs += 1;
        row.fired += run.fired > 0 ? 1 : 0;
        row.violations += judge(kind, `at ${plan.at}`, run);
      }
      rows.push(row);
    }
    expect(violations.filter((v) => v.startsWith(name))).toEqual([]);
    expect(counting.calls!.tracer).toBeGreaterThan(0); // the operation is instrumented: the explorer bites
  },
  120_000,
);
