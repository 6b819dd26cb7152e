/**
 * A queue worker that survives being killed without doing anything twice.
 *
 * Orders arrive on a queue (a few of them sent twice). A first worker process starts charging
 * them and is killed with SIGKILL in the middle of its work. A second worker (this process) takes
 * over: the killed worker's messages come back when their visibility timeout (2 s) runs out, their
 * idempotency claims are taken over, and each order's charge is written in the same entity group
 * transaction as the order's done mark. At the end every order has exactly one charge.
 */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { TableClient, type TransactionAction } from "@azure/data-tables";
import { QueueClient } from "@azure/storage-queue";
import { jsonCodec, QueueConsumer } from "azure-storage-concurrency/queue";
import { TableIdempotencyStore } from "azure-storage-concurrency/idempotency";
import { runIfMain, type ExampleContext } from "./support/run-example.js";

export const title = "Queues: a worker killed mid-work, and no order charged twice";

interface Order {
  orderId: string;
  amount: number;
}

/** The worker: the same code runs in the child process that gets killed and in this one. */
function startWorker(connectionString: string, queueName: string, inboxName: string, onEvent: (line: string) => void) {
  const queue = new QueueClient(connectionString, queueName);
  const inbox = TableClient.fromConnectionString(connectionString, inboxName, { allowInsecureConnection: true });
  const consumer = new QueueConsumer<Order, TransactionAction>(
    queue,
    async (order, { idempotency, addEffects, abortSignal }) => {
      onEvent(`charging ${order.orderId}`);
      await new Promise((resolve) => setTimeout(resolve, 150)); // talk to the payment provider …
      abortSignal.throwIfAborted();
      // … and record the charge atomically with the order's done mark.
      addEffects(["create", { partitionKey: idempotency!.partitionKey, rowKey: "charge", amount: order.amount }]);
      return { charged: order.amount };
    },
    {
      codec: jsonCodec<Order>(),
      visibilityTimeoutInSeconds: 2,
      concurrency: 4,
      idempotency: { store: new TableIdempotencyStore(inbox), key: (order) => order.orderId },
    },
  );
  return consumer.start();
}

export async function main({ connectionString, log }: ExampleContext): Promise<void> {
  const suffix = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;
  const queue = new QueueClient(connectionString, `orders-${suffix}`);
  const inbox = TableClient.fromConnectionString(connectionString, `orderinbox${suffix}`, {
    allowInsecureConnection: true,
  });
  await queue.create();
  await inbox.createTable();
  try {
    const orders = Array.from({ length: 12 }, (_, i) => ({ orderId: `order-${i}`, amount: 10 + i }));
    for (const order of [...orders, orders[0]!, orders[5]!]) await queue.sendMessage(JSON.stringify(order));
    log(`sent ${orders.length} orders, 2 of them twice`);

    // Worker 1, in a child process: killed with SIGKILL once it is in the middle of charging.
    const child = spawn(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url)], {
      env: { ...process.env, QUEUE_EXAMPLE_WORKER: JSON.stringify([connectionString, queue.name, inbox.tableName]) },
      stdio: ["ignore", "pipe", "inherit"],
    });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    let charging = 0;
    try {
      await new Promise<void>((resolve, reject) => {
        void exited.then(() => reject(new Error("the first worker exited before it was killed")));
        createInterface({ input: child.stdout }).on("line", (line) => {
          if (line.startsWith("charging") && ++charging === 6) resolve();
        });
      });
    } finally {
      child.kill("SIGKILL");
      await exited;
    }
    log(`worker 1 (pid ${child.pid}) killed with SIGKILL after it had started ${charging} charges`);

    // Worker 2, here: finishes the queue, taking over what worker 1 left half-done.
    let takenOver = 0;
    let duplicates = 0;
    const consumer = await startWorker(connectionString, queue.name, inbox.tableName, () => undefined);
    consumer.on("duplicate", () => (duplicates += 1));
    const done = new Promise<void>((resolve) => {
      const check = async () => {
        const { approximateMessagesCount } = await queue.getProperties();
        if (approximateMessagesCount === 0) resolve();
        else setTimeout(() => void check(), 250);
      };
      void check();
    });
    consumer.on("processed", ({ message }) => {
      if (message.dequeueCount > 1) takenOver += 1;
    });
    await done;
    await consumer.stop();
    log(
      `worker 2 took over ${takenOver} orders left half-done and settled ${duplicates} duplicates without charging again`,
    );

    const charges = new Map<string, number>();
    for await (const row of inbox.listEntities({ queryOptions: { filter: "RowKey eq 'charge'" } })) {
      charges.set(row.partitionKey!, (charges.get(row.partitionKey!) ?? 0) + 1);
    }
    const twice = [...charges.values()].filter((n) => n > 1).length;
    log(
      `charges: ${charges.size} orders charged, ${twice} charged twice, ${orders.length - charges.size} never charged`,
    );
    if (twice > 0 || charges.size !== orders.length) throw new Error("an order was charged twice or not at all");
  } finally {
    await queue.delete();
    await inbox.deleteTable();
  }
}

const workerArgs = process.env.QUEUE_EXAMPLE_WORKER;
if (workerArgs) {
  const [connectionString, queueName, inboxName] = JSON.parse(workerArgs) as [string, string, string];
  await startWorker(connectionString, queueName, inboxName, (line) => console.log(line));
} else {
  runIfMain(import.meta.url, { title, main });
}
