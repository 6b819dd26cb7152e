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
import type { TableClient, TransactionAction } from "@azure/data-tables";
import type { QueueClient } from "@azure/storage-queue";
import {
  ClaimCheck,
  TableOutbox,
  blobJsonCell,
  blobLeasable,
  blobLock,
  blobSemaphore,
  fixedBackoff,
  isLeaseLostError,
  LeaseLock,
  optimisticUpdate,
  parsePoisonMessage,
  QueueConsumer,
  schedule,
  startLeaderElection,
  TableIdempotencyStore,
  textCodec,
  writeBatch,
  type LockHandle,
  type PermitHandle,
  type ScheduleOptions,
} from "../../../src/index.js";
import { SCHEDULE_CLOCK } from "../../../src/schedule/schedule.js";
import { describeError } from "../../../src/internal/describe-error.js";
import { relayPass } from "../../../src/outbox/relay-pass.js";
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
const inboxes: TableClient[] = [];

beforeAll(async () => {
  container = blobService().getContainerClient(uniqueName("telemetryexplorer"));
  await container.create();
  table = tableClient(uniqueName("telemetryexplorer"));
  await table.createTable();
});
afterAll(async () => {
  await Promise.allSettled([
    container.delete(),
    table.deleteTable(),
    ...queues.map((q) => q.deleteIfExists()),
    ...inboxes.map((t) => t.deleteTable()),
  ]);
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
    // The one permit taken, a waiter handed it on release: the semaphore's spans (looks counted),
    // the slots' lock spans nested in them, and the wait histogram.
    name: "semaphore: a permit, a waiter handed it on release",
    async run() {
      const name = uniqueName("sem");
      const semaphore = () =>
        blobSemaphore(container, name, { maxCount: 1, durationInSeconds: 15, pollIntervalInMs: 20 });
      const first = await semaphore().tryAcquire();
      const waiting = semaphore().acquire({ timeoutInMs: 10_000 });
      setTimeout(() => void first?.release(), 30);
      let next: PermitHandle | undefined;
      const waited = await settled(waiting, (p) => ((next = p), `token ${p.fencingToken}`));
      const released = next ? await settled(next.release(), () => next!.status) : "-";
      return `first token ${first?.fencingToken}; waited ${waited}; release ${released}; afterwards held ${(await semaphore().inspect()).held}`;
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
  ...(["any", "tables-only"] as const).map((effects): TelemetryOperation => ({
    // Two messages with one key, one at a time: the first runs and is marked done (with its effect
    // row in the done mark's transaction when "tables-only"), the second is deleted as a duplicate
    // without running. The done marks and the store's requests are the paths telemetry must not
    // decide (issue 27's tables-only path, and the done marks the repros r14-r20 broke).
    name: `queue consumer, exactly once keyed by body (effects "${effects}"): processed, then a duplicate`,
    async run() {
      const queue = queueService().getQueueClient(uniqueName("telemetryonce"));
      queues.push(queue);
      await queue.create();
      const inbox = tableClient(uniqueName("telemetryinbox"));
      await inbox.createTable();
      inboxes.push(inbox);
      await queue.sendMessage("order-1");
      await queue.sendMessage("order-1");
      const seen: string[] = [];
      let runs = 0;
      const consumer = new QueueConsumer<string, TransactionAction>(
        queue,
        async (text, { idempotency, addEffects }) => {
          runs += 1;
          if (effects === "tables-only")
            addEffects(["create", { partitionKey: idempotency!.partitionKey, rowKey: `effect-${runs}` }]);
          return `charged ${text}`;
        },
        {
          codec: textCodec,
          concurrency: 1,
          visibilityTimeoutInSeconds: 5,
          pollingBackoff: exponentialBackoff({ deltaInMs: 20, minInMs: 0, maxInMs: 100 }),
          idempotency: { store: new TableIdempotencyStore(inbox), key: (text) => text, effects },
        },
      );
      consumer.on("processed", ({ result }) => seen.push(`processed -> ${String(result)}`));
      consumer.on("duplicate", ({ key, result }) => seen.push(`duplicate ${key} -> ${String(result)}`));
      consumer.on("poisoned", ({ reason }) => seen.push(`poisoned: ${reason}`));
      consumer.on("error", ({ error, operation }) => seen.push(`error ${operation}: ${describeError(error)}`));
      await consumer.start();
      await until(() => seen.length >= 2, 10_000);
      await consumer.stop();
      const left = (await queue.peekMessages({ numberOfMessages: 32 })).peekedMessageItems.length;
      const rows: string[] = [];
      for await (const row of inbox.listEntities<{ Status?: string }>())
        rows.push(row.rowKey!.startsWith("effect-") ? "effect" : `record ${row.Status ?? "?"}`);
      return `${seen.sort().join(" | ")}; handler runs ${runs}; left in the queue ${left}; inbox rows [${rows.sort().join(", ")}]`;
    },
  })),
  {
    // Two due ticks caught up under one lease (catchUp "all"): the first run succeeds, the second
    // throws and is recorded as failed. The instance's clock is shifted to just after the second.
    name: "schedule: two due ticks, one succeeded, one failed",
    async run() {
      const HOUR = 3_600_000;
      const T = Date.UTC(2031, 0, 1, 10);
      const name = uniqueName("sched");
      const status = {
        version: 1,
        schedule: `every ${HOUR} ms`,
        createdAt: new Date(T - 2 * HOUR - 1_000).toISOString(),
        lastTick: new Date(T - 2 * HOUR).toISOString(),
        lastOutcome: "succeeded",
        lastRun: null,
        running: null,
        nextDue: new Date(T - HOUR).toISOString(),
        missedTicks: 0,
        updatedAt: new Date(T - 2 * HOUR).toISOString(),
      };
      const text = JSON.stringify(status);
      await container.getBlockBlobClient(`${name}/status.json`).upload(text, Buffer.byteLength(text));
      const clock = { offsetInMs: T + 1_000 - Date.now(), now: () => Date.now() + clock.offsetInMs };
      const seen: string[] = [];
      const s = schedule(
        container,
        name,
        { everyInMs: HOUR },
        async ({ tick }) => {
          if (tick.dueAt.getTime() === T) throw new Error("the job failed");
        },
        { catchUp: "all", leaseDurationInSeconds: 15, [SCHEDULE_CLOCK]: clock } as ScheduleOptions,
      );
      const hour = (tick: { dueAt: Date }) => (tick.dueAt.getTime() - T) / HOUR;
      s.on("succeeded", ({ tick, attempt }) => seen.push(`succeeded T${hour(tick)} attempt ${attempt}`));
      s.on("failed", ({ tick, error }) => seen.push(`failed T${hour(tick)}: ${describeError(error)}`));
      s.on("abandoned", ({ tick, reason }) => seen.push(`abandoned T${hour(tick)}: ${reason}`));
      s.on("missed", ({ count }) => seen.push(`missed ${count}`));
      s.on("error", ({ operation }) => seen.push(`error ${operation}`));
      const waiting = new Promise<void>((resolve) =>
        s.on("waiting", ({ tick }) => {
          if (tick.dueAt.getTime() > T) resolve();
        }),
      );
      const started = await settled(s.start(), () => "started");
      let timer: NodeJS.Timeout | undefined;
      const waited = started.startsWith("resolved")
        ? await Promise.race([
            waiting.then(() => "waiting for T1"),
            new Promise<string>((resolve) => (timer = setTimeout(() => resolve("no wait for T1 in 10 s"), 10_000))),
          ])
        : "";
      clearTimeout(timer);
      await s.stop();
      const stored = JSON.parse(
        (await container.getBlockBlobClient(`${name}/status.json`).downloadToBuffer()).toString(),
      ) as {
        lastTick: string;
        lastOutcome: string;
        running: unknown;
        missedTicks: number;
        lastRun: { error?: string };
      };
      const lease = (await container.getBlockBlobClient(`${name}/lock`).getProperties()).leaseState;
      return (
        `${started}, ${waited}; ${seen.join(" | ")}; stored lastTick T${(Date.parse(stored.lastTick) - T) / HOUR} ` +
        `${stored.lastOutcome} (${stored.lastRun?.error}), running ${JSON.stringify(stored.running)}, ` +
        `missed ${stored.missedTicks}; lease ${lease}`
      );
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
  {
    // Spans asc.claim_check.send (stored, then failed: no such queue) and asc.claim_check.sweep.
    name: "claim-check send, receive and delete; a failed send; the sweep of its orphan",
    async run() {
      const queue = queueService().getQueueClient(uniqueName("telemetrycc"));
      queues.push(queue);
      await queue.create();
      const claimCheck = new ClaimCheck(container, { blobPrefix: `${uniqueName("cc")}/`, sweepGraceInMs: 0 });
      const large = "C".repeat(70_000);
      const sent = await settled(
        claimCheck.sendMessage(queue, large, { messageTimeToLive: 60 }),
        (r) => `stored ${r.payloadBlob !== undefined}`,
      );
      const [item] = (await claimCheck.receiveMessages(queue)).receivedMessageItems;
      const read = item ? `read ${item.messageText === large}` : "read nothing";
      const deleted = item ? await settled(claimCheck.deleteMessage(queue, item), (r) => r.payload) : "-";
      const missing = queueService().getQueueClient(uniqueName("telemetrynone"));
      // The error's words name its payload and a time: what matters is its kind.
      const failed = await claimCheck.sendMessage(missing, large, { messageTimeToLive: 60 }).then(
        () => "sent",
        (error: { name?: string; code?: string; mayHaveBeenSent?: boolean }) =>
          `rejected ${error.name} ${error.code} mayHaveBeenSent ${error.mayHaveBeenSent}`,
      );
      const swept = await settled(
        claimCheck.sweep({ now: new Date(Date.now() + 3_600_000) }),
        (r) => `deleted ${r.deleted} pending ${r.pending} failed ${r.failed}`,
      );
      return `send ${sent}; ${read}; delete ${deleted}; send to a missing queue ${failed}; sweep ${swept}`;
    },
  },
  {
    // Span asc.outbox.relay per row (and the claim-check's send span of the large one).
    name: "outbox write, then a relay pass (a small row and a large one)",
    async run() {
      const queue = queueService().getQueueClient(uniqueName("telemetryoutbox"));
      queues.push(queue);
      await queue.create();
      const partitionKey = uniqueName("p");
      const written = await settled(
        new TableOutbox(table, { name: "telemetry" }).write(
          [["upsert", { partitionKey, rowKey: "order" }]],
          [
            { body: "small", id: `${partitionKey}-1` },
            { body: "R".repeat(70_000), id: `${partitionKey}-2` },
          ],
        ),
        (r) => `sequences ${r.sequences.join(",")}`,
      );
      const sent: number[] = [];
      const errors: string[] = [];
      const pass = await settled(
        relayPass(
          {
            table,
            queue,
            claimCheck: new ClaimCheck(container, { blobPrefix: `${uniqueName("outbox")}/` }),
            name: "telemetry",
            range: { from: partitionKey, to: `${partitionKey}\u0000` },
            requestTimeoutInMs: 10_000,
            maxConcurrentPartitions: 1,
            messageTimeToLive: 60,
            onSent: (m) => void sent.push(m.sequence),
            onError: (error, operation) => void errors.push(`${operation}: ${describeError(error)}`),
          },
          new AbortController().signal,
        ),
        (r) => `rows ${r.rows} relayed ${r.relayed}`,
      );
      let left = 0;
      for await (const _ of table.listEntities({ queryOptions: { filter: `PartitionKey eq '${partitionKey}'` } }))
        left++;
      const messages = (await queue.peekMessages({ numberOfMessages: 32 })).peekedMessageItems.length;
      return `write ${written}; pass ${pass}; sent ${sent.join(",")}; errors ${errors.length}; rows left ${left}; messages ${messages}`;
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
