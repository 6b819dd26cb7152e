/**
 * One process of the `queue` benchmark's scale curve (../scenarios/queue-scale.ts): drains a shared
 * queue, run after run, with the raw receive(32) + delete loop or with a QueueConsumer (no-op
 * handler, no idempotency), `concurrency` messages in flight in this process.
 *
 * Args: one, its configuration as JSON (`QueueWorkerConfig`); the connection string in its
 * environment (see ../workers.ts). Once loaded it prints `{"ready":true}`; then, for run 0, 1, …, it
 * waits until the file `run-<n>` appears in `goDir` (written aside and renamed: it is never read
 * half-written), whose text says how to drain (`raw`, `consumer`) or `exit`, drains the queue until
 * a receive finds it empty, and prints one JSON line (`QueueWorkerReport`). The process stays up
 * between runs, so that raw and consumer runs can alternate without paying for start-up.
 */
import { existsSync, readFileSync, watch } from "node:fs";
import { join } from "node:path";
import { QueueClient } from "@azure/storage-queue";
import { QueueConsumer } from "azure-storage-concurrency/queue";
import {
  rawDrain,
  type QueueRequestCounts,
  type QueueWorkerConfig,
  type QueueWorkerReport,
} from "../scenarios/queue-scale.js";
import { workerConnectionString } from "../workers.js";
import { describeError } from "azure-storage-concurrency/errors";

/** Counts this process's receive, delete and update calls on `queue` (the consumer's and the raw loop's alike). */
function countRequests(queue: QueueClient): QueueRequestCounts {
  const counts = { receives: 0, emptyReceives: 0, deletes: 0, updates: 0 };
  const receive = queue.receiveMessages.bind(queue);
  const remove = queue.deleteMessage.bind(queue);
  const update = queue.updateMessage.bind(queue);
  queue.receiveMessages = async (options) => {
    counts.receives++;
    const response = await receive(options);
    if (response.receivedMessageItems.length === 0) counts.emptyReceives++;
    return response;
  };
  queue.deleteMessage = (...args) => (counts.deletes++, remove(...args));
  queue.updateMessage = (...args) => (counts.updates++, update(...args));
  return counts;
}

/** The text of `goDir/run-<run>`, once it exists (watched, not polled: a waiting process takes no CPU from the others). */
function command(goDir: string, run: number): Promise<string> {
  const file = join(goDir, `run-${run}`);
  return new Promise((resolve) => {
    const check = () => {
      if (!existsSync(file)) return;
      watcher.close();
      clearInterval(fallback);
      resolve(readFileSync(file, "utf8"));
    };
    const watcher = watch(goDir, check);
    const fallback = setInterval(check, 250);
    check();
  });
}

async function consume(queue: QueueClient, concurrency: number, handled: string[], stamp: () => void): Promise<void> {
  const consumer = new QueueConsumer(
    queue,
    async (body: string) => {
      handled.push(body);
    },
    { batchSize: Math.min(32, concurrency), concurrency, visibilityTimeoutInSeconds: 30 },
  );
  consumer.on("processed", stamp);
  consumer.on("error", ({ error, operation }) =>
    process.stderr.write(`could not ${operation}: ${describeError(error)}\n`),
  );
  const empty = new Promise<void>((resolve) => consumer.on("empty", () => resolve()));
  await consumer.start();
  await empty;
  await consumer.stop(); // waits for the messages in flight
}

async function drain(
  queue: QueueClient,
  counts: QueueRequestCounts,
  config: QueueWorkerConfig,
  mode: string,
  run: number,
) {
  const before = { ...counts };
  const handled: string[] = [];
  let lastAt = Date.now();
  const stamp = () => void (lastAt = Date.now());
  const cpu = process.cpuUsage();
  if (mode === "raw") {
    await rawDrain(queue, config.concurrency, (body) => {
      handled.push(body);
      stamp();
    });
  } else await consume(queue, config.concurrency, handled, stamp);
  const used = process.cpuUsage(cpu);
  const requests = {
    receives: counts.receives - before.receives,
    emptyReceives: counts.emptyReceives - before.emptyReceives,
    deletes: counts.deletes - before.deletes,
    updates: counts.updates - before.updates,
  };
  const report: QueueWorkerReport = { run, handled, lastAt, cpuMs: (used.user + used.system) / 1000, requests };
  return report;
}

async function main(config: QueueWorkerConfig): Promise<void> {
  const queue = new QueueClient(workerConnectionString(), config.queue);
  const counts = countRequests(queue);
  await queue.getProperties(); // modules loaded and a connection open before the first run
  console.log(JSON.stringify({ ready: true }));
  for (let run = 0; ; run++) {
    const mode = await command(config.goDir, run);
    if (mode === "exit") return;
    console.log(JSON.stringify(await drain(queue, counts, config, mode, run)));
  }
}

main(JSON.parse(process.argv[2]!) as QueueWorkerConfig).then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
