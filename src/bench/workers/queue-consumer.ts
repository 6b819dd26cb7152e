/**
 * One process of the `queue` benchmark's scale curve (../scenarios/queue-scale.ts): drains a shared
 * queue with the raw receive(32) + delete loop or with a QueueConsumer (no-op handler, no
 * idempotency), `concurrency` messages in flight in this process.
 *
 * Args: one, its configuration as JSON (`QueueWorkerConfig`); the connection string in its
 * environment (see ../workers.ts). Once loaded it prints `{"ready":true}`, waits until the file
 * `goFile` exists, drains the queue until a receive finds it empty, and prints one JSON line
 * (`QueueWorkerReport`): the bodies it handled, when it handled the last, and its CPU time.
 */
import { existsSync } from "node:fs";
import { QueueClient } from "@azure/storage-queue";
import { QueueConsumer } from "../../index.js";
import { rawDrain, type QueueWorkerConfig, type QueueWorkerReport } from "../scenarios/queue-scale.js";
import { workerConnectionString } from "../workers.js";

async function consume(queue: QueueClient, concurrency: number, handled: string[], stamp: () => void): Promise<void> {
  const consumer = new QueueConsumer(
    queue,
    async (body: string) => {
      handled.push(body);
    },
    { batchSize: Math.min(32, concurrency), concurrency, visibilityTimeoutInSeconds: 30 },
  );
  consumer.on("processed", stamp);
  consumer.on("error", ({ error, operation }) => process.stderr.write(`could not ${operation}: ${String(error)}\n`));
  const empty = new Promise<void>((resolve) => consumer.on("empty", () => resolve()));
  await consumer.start();
  await empty;
  await consumer.stop(); // waits for the messages in flight
}

async function main(config: QueueWorkerConfig): Promise<QueueWorkerReport> {
  const queue = new QueueClient(workerConnectionString(), config.queue);
  await queue.getProperties(); // connections and modules warmed up before the start
  console.log(JSON.stringify({ ready: true }));
  while (!existsSync(config.goFile)) await new Promise((resolve) => setTimeout(resolve, 1));
  const handled: string[] = [];
  let lastAt = Date.now();
  const stamp = () => void (lastAt = Date.now());
  const cpu = process.cpuUsage();
  if (config.mode === "raw") {
    await rawDrain(queue, config.concurrency, (body) => {
      handled.push(body);
      stamp();
    });
  } else await consume(queue, config.concurrency, handled, stamp);
  const used = process.cpuUsage(cpu);
  return { handled, lastAt, cpuMs: (used.user + used.system) / 1000 };
}

main(JSON.parse(process.argv[2]!) as QueueWorkerConfig).then(
  (report) => console.log(JSON.stringify(report)),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
