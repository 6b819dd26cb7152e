/**
 * Exactly once from the application's write to the handler's effect, across processes (issue 25):
 * writers commit orders with their messages through the outbox, relays send them (one leading at a
 * time), consumers handle them with the claim-check and a Table idempotency store; a writer, the
 * leading relay and a consumer are killed with SIGKILL mid-work. At the end every committed order
 * has exactly one effect, no effect exists for an order that was not committed, nothing is left in
 * the outbox or the queue, nothing was poisoned, and the sweep (past its bound) leaves no payload.
 */
import { ClaimCheck } from "../../../src/index.js";
import { workerGroup, type WorkerProcess } from "../../support/processes.js";
import { blobService, queueService, tableClient, uniqueName } from "../../support/storage.js";
import { describeStorage } from "../../support/target.js";

const WORKER = "tests/integration/outbox/workers/outbox-worker.ts";

interface Line {
  pid: number;
  event: string;
  orderId?: string;
  id?: string;
  error?: string;
}

async function until(
  what: string,
  condition: () => Promise<boolean>,
  timeoutInMs: number,
  explain: () => string = () => "",
): Promise<void> {
  const deadline = Date.now() + timeoutInMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}${explain()}`);
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

const count = (worker: WorkerProcess, event: string) =>
  (worker.messages as Line[]).filter((m) => m.event === event).length;

describeStorage("outbox, relay and consumer across processes, with SIGKILLs", () => {
  it("handles every committed order's message exactly once, and none of an order never committed", async () => {
    const table = tableClient(uniqueName("mpoutbox"));
    const inbox = tableClient(uniqueName("mpinbox"));
    const queue = queueService().getQueueClient(uniqueName("mpoutbox"));
    const payloads = blobService().getContainerClient(uniqueName("mppayloads"));
    const locks = blobService().getContainerClient(uniqueName("mplocks"));
    await Promise.all([table.createTable(), inbox.createTable(), queue.create()]);
    const base = {
      ASC_TABLE: table.tableName,
      ASC_INBOX: inbox.tableName,
      ASC_QUEUE: queue.name,
      ASC_PAYLOADS: payloads.containerName,
      ASC_LOCKS: locks.containerName,
      ASC_COUNT: "30",
    };
    const writers = [
      workerGroup(WORKER, { ...base, ASC_ROLE: "writer", ASC_WRITER: "a" }),
      workerGroup(WORKER, { ...base, ASC_ROLE: "writer", ASC_WRITER: "b" }),
    ];
    const relays = workerGroup(WORKER, { ...base, ASC_ROLE: "relay" });
    const consumers = workerGroup(WORKER, { ...base, ASC_ROLE: "consumer" });
    const all = () => [...writers.flatMap((w) => w.workers), ...relays.workers, ...consumers.workers];
    try {
      const [writerA, writerB] = writers.map((w) => w.start()) as [WorkerProcess, WorkerProcess];
      const [relayA, relayB] = [relays.start(), relays.start()] as [WorkerProcess, WorkerProcess];
      const pool = [consumers.start(), consumers.start()];

      // Kill a writer mid-write, the leading relay mid-relay, a consumer mid-handling (the first of
      // each kind to get there), and start a consumer in the killed one's place.
      const first = (workers: WorkerProcess[], event: string, atLeast: number) =>
        Promise.race(
          workers.map((w) =>
            w.waitFor<Line>((m) => m.event === event && count(w, event) >= atLeast, 120_000).then(() => w),
          ),
        );
      await writerA.waitFor<Line>((m) => m.event === "committed" && m.orderId === "a-8", 120_000);
      await writerA.kill("SIGKILL");
      await (await first([relayA, relayB], "sent", 4)).kill("SIGKILL");
      await (await first(pool, "handling", 3)).kill("SIGKILL");
      consumers.start();
      await writerB.exited;

      // Done when the outbox is empty and every committed order has its effect (the follower relay
      // takes over once the killed leader's lease has run out: 15 s at most).
      const committed = new Set<string>();
      let waiting = "";
      await until(
        "the outbox is drained and every committed order has an effect",
        async () => {
          committed.clear();
          let outboxRows = 0;
          for await (const row of table.listEntities()) {
            if (!row.rowKey!.startsWith("~")) committed.add(row.rowKey!);
            else if (row.rowKey!.startsWith("~outbox:default:")) outboxRows += 1;
          }
          waiting = `${outboxRows} outbox rows left`;
          if (outboxRows > 0) return false;
          const keys = new Set<string>();
          for await (const row of inbox.listEntities<{ Key?: string }>({
            queryOptions: { filter: "RowKey ge 'effect-' and RowKey lt 'effect.'" },
          }))
            keys.add(row.Key!);
          waiting = `no effect yet for ${[...committed].filter((id) => !keys.has(id)).join(", ")}`;
          return [...committed].every((id) => keys.has(id));
        },
        90_000,
        () =>
          `: ${waiting}; the workers' errors: ${JSON.stringify(
            all()
              .flatMap((w) => (w.messages as Line[]).filter((m) => m.event === "error" || m.event === "poisoned"))
              .slice(-10),
          )}; stderr: ${all()
            .map((w) => w.stderr())
            .join("")
            .slice(-2_000)}`,
      );
      await until(
        "the queue is empty",
        async () => ((await queue.getProperties()).approximateMessagesCount ?? 0) === 0,
        30_000,
      );

      const effects = new Map<string, number>();
      for await (const row of inbox.listEntities<{ Key?: string }>({
        queryOptions: { filter: "RowKey ge 'effect-' and RowKey lt 'effect.'" },
      }))
        effects.set(row.Key!, (effects.get(row.Key!) ?? 0) + 1);
      expect([...effects].filter(([, n]) => n !== 1)).toEqual([]); // exactly once
      expect([...effects.keys()].sort()).toEqual([...committed].sort()); // none for an order never committed
      expect(committed.size).toBeGreaterThanOrEqual(30 + 9); // writer b's 30, and a's up to its kill
      const lines = all().flatMap((w) => w.messages as Line[]);
      expect(lines.filter((m) => m.event === "poisoned")).toEqual([]);
      // The kills happened mid-work: writer a never finished, the leader had more to send.
      expect(count(writerA, "done")).toBe(0);
      expect(lines.filter((m) => m.event === "leading").length).toBeGreaterThanOrEqual(2);

      // Payloads left by the kills (uploaded, never sent; or not deleted after their message) are
      // all the sweep's, and the sweep past their bound leaves none.
      const sweeper = new ClaimCheck(payloads, { sweepGraceInMs: 60_000 });
      const swept = await sweeper.sweep({ now: new Date(Date.now() + 8 * 24 * 3_600_000) });
      expect(swept).toMatchObject({ poisoned: 0, unreadable: 0, failed: 0 });
      const left: string[] = [];
      for await (const blob of payloads.listBlobsFlat()) left.push(blob.name);
      expect(left).toEqual([]);
    } finally {
      await Promise.all(all().map((w) => w.kill("SIGTERM")));
      await Promise.all([
        table.deleteTable(),
        inbox.deleteTable(),
        queue.deleteIfExists(),
        payloads.deleteIfExists(),
        locks.deleteIfExists(),
      ]);
    }
  }, 180_000);
});
