/**
 * The transactional outbox: an order and its "order placed" message commit in one entity group
 * transaction, or neither does; a relay sends the message and deletes its row; the consumer's
 * idempotency store keys each message by its outbox id, so a message sent twice (a relay that
 * crashed between its send and its delete) has one effect.
 */
import { TableClient, type TransactionAction } from "@azure/data-tables";
import { BlobServiceClient } from "@azure/storage-blob";
import { QueueClient } from "@azure/storage-queue";
import { ClaimCheck } from "azure-storage-concurrency/claim-check";
import { isTableTransactionError } from "azure-storage-concurrency/tables";
import { jsonCodec, QueueConsumer } from "azure-storage-concurrency/queue";
import { OutboxRelay, TableOutbox } from "azure-storage-concurrency/outbox";
import { TableIdempotencyStore } from "azure-storage-concurrency/idempotency";
import { runIfMain, type ExampleContext } from "./support/run-example.js";

export const title = "Tables + queues: a transactional outbox, each order's message handled once";

interface OrderPlaced {
  readonly orderId: string;
  readonly total: number;
  readonly notes?: string;
}

export async function main({ connectionString, log }: ExampleContext): Promise<void> {
  const suffix = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;
  const tableOptions = { allowInsecureConnection: connectionString.includes("http://") };
  const orders = TableClient.fromConnectionString(connectionString, `orders${suffix}`, tableOptions);
  const inbox = TableClient.fromConnectionString(connectionString, `inbox${suffix}`, tableOptions);
  const queue = new QueueClient(connectionString, `order-events-${suffix}`);
  const blobs = BlobServiceClient.fromConnectionString(connectionString);
  const payloads = blobs.getContainerClient(`payloads-${suffix}`);
  const locks = blobs.getContainerClient(`locks-${suffix}`);
  await Promise.all([orders.createTable(), inbox.createTable(), queue.create()]);
  const claimCheck = new ClaimCheck(payloads);
  const relay = new OutboxRelay(orders, queue, { claimCheck, lockContainer: locks, pollIntervalInMs: 100 });
  try {
    // The order and its message, in one transaction (both in the customer's partition).
    const outbox = new TableOutbox(orders);
    const place = (customer: string, event: OrderPlaced) =>
      outbox.write(
        [["create", { partitionKey: customer, rowKey: event.orderId, total: event.total }]],
        [{ body: JSON.stringify(event), id: `${event.orderId}-placed` }],
      );
    await place("customer-1", { orderId: "order-1", total: 30 });
    await place("customer-1", { orderId: "order-2", total: 12 });
    await place("customer-2", { orderId: "order-3", total: 99, notes: "gift wrap. ".repeat(10_000) }); // 110 KB: sent through the claim-check
    log("3 orders written, each with its message in the same transaction");
    const refused = await place("customer-1", { orderId: "order-1", total: 30 }).catch((error: unknown) => error);
    if (isTableTransactionError(refused))
      log(`order-1 again: refused (${refused.statusCode} ${refused.serviceCode}), and its message with it`);

    let handled = 0;
    let duplicates = 0;
    let settle!: () => void;
    const settled = new Promise<void>((resolve) => (settle = resolve));
    const consumer = new QueueConsumer<OrderPlaced, TransactionAction>(
      queue,
      async (event, { idempotency, addEffects }) => {
        // The confirmation e-mail's record commits with the message's done mark: once per outbox id.
        addEffects(["create", { partitionKey: idempotency!.partitionKey, rowKey: "email", orderId: event.orderId }]);
        log(`handled ${event.orderId} (key '${idempotency!.key}', ${JSON.stringify(event).length} characters)`);
      },
      { codec: jsonCodec<OrderPlaced>(), claimCheck, idempotency: { store: new TableIdempotencyStore(inbox) } },
    );
    consumer.on("processed", () => ++handled + duplicates === 4 && settle());
    consumer.on("duplicate", ({ key }) => {
      log(`a second send of '${key}' was recognised: no second e-mail`);
      if (handled + ++duplicates === 4) settle();
    });
    relay.on("sent", ({ id, partitionKey, sequence }) =>
      log(`relay sent '${id}' (${partitionKey} #${sequence}) and deleted its row`),
    );
    await consumer.start();
    await relay.start();
    while (handled < 3) await new Promise((resolve) => setTimeout(resolve, 50));
    // A relay that crashed after its send and before its delete sends the row again: same id.
    await claimCheck.sendMessage(queue, JSON.stringify({ orderId: "order-2", total: 12 }), {
      idempotencyKey: "order-2-placed",
    });
    await settled;
    await consumer.stop();
    let emails = 0;
    for await (const row of inbox.listEntities({ queryOptions: { filter: "RowKey eq 'email'" } })) if (row) emails += 1;
    log(`e-mails recorded: ${emails} for 3 orders`);
  } finally {
    await relay.stop();
    await Promise.all([
      orders.deleteTable(),
      inbox.deleteTable(),
      queue.deleteIfExists(),
      payloads.deleteIfExists(),
      locks.deleteIfExists(),
    ]);
  }
}

runIfMain(import.meta.url, { title, main });
