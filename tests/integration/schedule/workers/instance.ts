/**
 * One instance of an app that runs a schedule, for the kill test: schedules ASC_SCHEDULE every
 * ASC_EVERY_MS in container ASC_CONTAINER (catchUp "all"), and reports on stdout as JSON lines:
 * (each with its pid and the time, `at`) `ready`, `start` (the job was called: tick, attempt, fencing token), `end` (the job returned:
 * `ok` when its signal was not aborted), and the schedule's events `succeeded` (the run's end was
 * recorded), `abandoned`, `missed`, `error`.
 *
 * The job's effect goes through the idempotency store with the tick's id as the key (the recipe of
 * docs/scheduled-jobs.md): it commits one row `effect-<uuid>` (with the tick id and the pid) with
 * the done record, so an effect committed twice would show up as two rows. SIGTERM stops the
 * schedule gracefully.
 *
 * While the file ASC_HOLD_FILE exists, a job that starts prints `holding` and waits for its signal
 * to abort: the test stops that instance in the middle of a run.
 */
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import type { TransactionAction } from "@azure/data-tables";
import { idempotent, schedule, TableIdempotencyStore } from "../../../../src/index.js";
import { blobService, tableClient } from "../../../support/storage.js";

const print = (line: Record<string, unknown>) =>
  process.stdout.write(`${JSON.stringify({ pid: process.pid, at: Date.now(), ...line })}\n`);

const effect = idempotent<string, { pid: number }, TransactionAction>(
  async (tickId, { partitionKey, addEffects, abortSignal }) => {
    await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 20)));
    abortSignal.throwIfAborted();
    addEffects(["create", { partitionKey, rowKey: `effect-${randomUUID()}`, Key: tickId, Pid: process.pid }]);
    return { pid: process.pid };
  },
  {
    store: new TableIdempotencyStore(tableClient(process.env.ASC_INBOX!)),
    key: (tickId) => tickId,
    whenInProgress: "wait",
    claimDurationInMs: 2_000,
    // Several processes and Azurite share two cores: answers can take over a second.
    requestTimeoutInMs: 1_500,
  },
);

const s = schedule(
  blobService().getContainerClient(process.env.ASC_CONTAINER!),
  process.env.ASC_SCHEDULE!,
  { everyInMs: Number(process.env.ASC_EVERY_MS) },
  async ({ tick, attempt, fencingToken, abortSignal }) => {
    print({ event: "start", tick: tick.id, attempt, token: fencingToken });
    if (existsSync(process.env.ASC_HOLD_FILE!)) {
      print({ event: "holding", tick: tick.id });
      await new Promise((resolve) => abortSignal.addEventListener("abort", resolve, { once: true }));
    }
    await effect(tick.id, { abortSignal });
    print({ event: "end", tick: tick.id, attempt, token: fencingToken, ok: !abortSignal.aborted });
  },
  { catchUp: "all", maxCatchUpTicks: 1_000, leaseDurationInSeconds: 15, requestTimeoutInMs: 2_000 },
);
s.on("succeeded", ({ tick, attempt }) => print({ event: "succeeded", tick: tick.id, attempt }));
s.on("abandoned", ({ tick, attempt, reason }) => print({ event: "abandoned", tick: tick.id, attempt, reason }));
s.on("missed", ({ count }) => print({ event: "missed", count }));
s.on("error", ({ operation, error }) => print({ event: "error", operation, error: String(error) }));
process.once("SIGTERM", () => void s.stop({ gracePeriodInMs: 1_000 }).then(() => process.exit(0)));
await s.start();
print({ event: "ready" });
