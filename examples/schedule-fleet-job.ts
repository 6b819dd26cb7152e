/**
 * A scheduled job across a fleet: three instances of an app schedule the same "report" job (every
 * 400 ms here; `{ cron: "0 2 * * *", timeZone: "Europe/Paris" }` for a nightly one), and each tick
 * runs once, on one of them. The job's effect goes through the idempotency store, keyed by the tick's
 * id, so that it is committed exactly once even if a run is taken over. Then one instance is stopped
 * while it runs a tick: it hands the tick over at once, and another instance runs it again (attempt 2)
 * without the effect being committed twice.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { BlobServiceClient } from "@azure/storage-blob";
import { TableClient, type TransactionAction } from "@azure/data-tables";
import { idempotent, TableIdempotencyStore } from "azure-storage-concurrency/idempotency";
import { schedule, type Schedule } from "azure-storage-concurrency/schedule";
import { runIfMain, type ExampleContext } from "./support/run-example.js";

export const title = "Scheduled jobs: one run per tick across a fleet, handed over on stop";

export async function main({ connectionString, log }: ExampleContext): Promise<void> {
  const containerName = `schedule-demo-${Date.now()}`;
  const reports = TableClient.fromConnectionString(connectionString, `reports${Date.now()}`, {
    allowInsecureConnection: true,
  });
  await reports.createTable();
  // The report's effect: one row per tick, committed with the tick's done record (exactly once).
  const writeReport = idempotent<{ tickId: string; by: string }, { by: string }, TransactionAction>(
    async ({ tickId, by }, { partitionKey, addEffects }) => {
      addEffects(["upsert", { partitionKey, rowKey: "report", tickId, by }]);
      return { by };
    },
    { store: new TableIdempotencyStore(reports), key: ({ tickId }) => tickId, whenInProgress: "wait" },
  );

  const runs: string[] = [];
  let slowTick: string | undefined;
  const instances = new Map<string, Schedule>();
  for (const app of ["app-1", "app-2", "app-3"]) {
    // Each instance has its own client, as separate processes would.
    const container = BlobServiceClient.fromConnectionString(connectionString).getContainerClient(containerName);
    const reportJob = schedule(
      container,
      "report",
      { everyInMs: 400 },
      async ({ tick, attempt, abortSignal }) => {
        runs.push(`${tick.id} by ${app}${attempt > 1 ? ` (attempt ${attempt})` : ""}`);
        if (slowTick === undefined && runs.length >= 4) {
          slowTick = tick.id; // this run is slow: its instance will be stopped in the middle of it
          await new Promise((resolve) => abortSignal.addEventListener("abort", resolve, { once: true }));
          abortSignal.throwIfAborted();
        }
        await writeReport({ tickId: tick.id, by: app }, { abortSignal });
      },
      // catchUp "all": the tick handed over runs again even when the next tick is due by the time
      // another instance takes it (with the default, "latest", it would be recorded as missed then).
      { catchUp: "all", holderName: app, leaseDurationInSeconds: 15, takeoverCheckIntervalInMs: 100 },
    );
    reportJob.on("abandoned", ({ tick, reason }) =>
      log(`${app}: stopped during ${tick.id} (${reason}); another instance takes it over`),
    );
    instances.set(app, await reportJob.start());
  }

  while (slowTick === undefined) await sleep(50);
  const [slowApp] = [...instances].find(([, s]) => s.runningTick?.id === slowTick)!;
  log(`stopping ${slowApp} while it runs ${slowTick} (as on a deployment); its grace period is 100 ms`);
  await instances.get(slowApp)!.stop({ gracePeriodInMs: 100 });
  instances.delete(slowApp);
  await sleep(1_000);
  await Promise.all([...instances.values()].map((s) => s.stop()));

  for (const run of runs) log(run);
  const ticks = new Set(runs.map((run) => run.split(" ")[0]));
  let committed = 0;
  for await (const row of reports.listEntities<{ tickId?: string }>()) if (row.tickId) committed += 1;
  log(
    `${runs.length} runs for ${ticks.size} ticks (one run again after the handover); ${committed} reports committed, one per tick`,
  );
  // The status blob says which ticks are settled, for every instance:
  const container = BlobServiceClient.fromConnectionString(connectionString).getContainerClient(containerName);
  const finalStatus = await schedule(container, "report", { everyInMs: 400 }, () => undefined).readStatus();
  log(`status: last tick ${finalStatus?.lastTick} (${finalStatus?.lastOutcome}), next due ${finalStatus?.nextDue}`);
  if (committed !== ticks.size) throw new Error(`expected ${ticks.size} reports, found ${committed}`);
  await reports.deleteTable();
  await container.delete();
}

runIfMain(import.meta.url, { title, main });
