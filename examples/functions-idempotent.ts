/**
 * An Azure Functions app (Node.js v4 programming model) whose queue trigger and HTTP trigger have
 * exactly-once effects: `idempotentQueueHandler` and `idempotentHttp` from
 * `azure-storage-concurrency/functions`.
 *
 * The functions are registered with `app.storageQueue` and `app.http` as in a real app (deploy this
 * file and they run under the Functions host). Run here, outside the host, the example plays the
 * host's part with the @azure/functions package's own `InvocationContext` and `HttpRequest`: it
 * receives from a real queue (Azurite, or AZURE_STORAGE_CONNECTION_STRING), passes the message id
 * and dequeue count as the host's trigger metadata, deletes a message after its handler returned,
 * and moves it to `<queue>-poison` after maxDequeueCount deliveries, as the host does.
 */
// @azure/functions is a CommonJS bundle whose classes Node's ES module loader cannot name: import it whole.
import azureFunctions from "@azure/functions";
import { TableClient, type TransactionAction } from "@azure/data-tables";
import { QueueClient } from "@azure/storage-queue";
import { TableIdempotencyStore } from "azure-storage-concurrency/idempotency";
import { idempotentHttp, idempotentQueueHandler } from "azure-storage-concurrency/functions";
import { runIfMain, type ExampleContext } from "./support/run-example.js";

const { app, HttpRequest, HttpResponse, InvocationContext } = azureFunctions;

export const title = "Azure Functions: exactly-once queue and HTTP triggers";

interface Order {
  orderId: string;
  amount: number;
}

export async function main({ connectionString, log }: ExampleContext): Promise<void> {
  const suffix = Date.now().toString(36);
  const inbox = TableClient.fromConnectionString(connectionString, `orderinbox${suffix}`, {
    allowInsecureConnection: true,
  });
  await inbox.createTable();
  const store = new TableIdempotencyStore(inbox);
  const queue = new QueueClient(connectionString, `orders-${suffix}`);
  await queue.create();
  const poison = new QueueClient(connectionString, `orders-${suffix}-poison`);

  // The queue trigger: keyed by the order id, so the same order enqueued twice is charged once.
  // The ledger row commits with the key's done record (one entity group transaction).
  let charges = 0;
  const processOrder = idempotentQueueHandler<Order, { charged: number }, TransactionAction>(
    async (order, context, { addEffects, partitionKey }) => {
      if (order.amount < 0) throw new Error(`order ${order.orderId}: a negative amount`);
      charges += 1;
      addEffects(["create", { partitionKey, rowKey: "ledger", amount: order.amount }]);
      context.log(`charged ${order.amount} for ${order.orderId}`);
      return { charged: order.amount };
    },
    { store, key: (order) => order.orderId, maxDequeueCount: 2 },
  );
  app.storageQueue("processOrder", { queueName: queue.name, connection: "AzureWebJobsStorage", handler: processOrder });

  // The HTTP trigger: POST /api/refunds with an Idempotency-Key, scoped by the caller's tenant.
  let refunds = 0;
  const createRefund = idempotentHttp(
    async (request) => {
      refunds += 1;
      const { orderId } = (await request.json()) as { orderId: string };
      return { status: 201, jsonBody: { refundId: `r-${refunds}`, orderId } };
    },
    // App Service authentication passes the caller on; a header stands in for it here.
    { store, tenant: (request) => request.headers.get("x-tenant-id") ?? "anonymous" },
  );
  app.http("createRefund", { methods: ["POST"], route: "refunds", handler: createRefund });

  // The host's part: receive, call with the trigger metadata, delete on success, poison at 2.
  const host = async (): Promise<void> => {
    for (;;) {
      const {
        receivedMessageItems: [message],
      } = await queue.receiveMessages({ visibilityTimeout: 1 });
      if (!message) return;
      const context = new InvocationContext({
        functionName: "processOrder",
        triggerMetadata: { id: message.messageId, dequeueCount: message.dequeueCount },
        options: { trigger: { type: "queueTrigger", name: "order", queueName: queue.name } },
        logHandler: (level, ...args) => log(`[${level}] ${args.join(" ")}`),
      });
      try {
        await processOrder(JSON.parse(message.messageText) as Order, context);
        await queue.deleteMessage(message.messageId, message.popReceipt);
      } catch {
        if (message.dequeueCount >= 2) {
          await poison.createIfNotExists();
          await poison.sendMessage(message.messageText);
          await queue.deleteMessage(message.messageId, message.popReceipt);
        } else {
          await queue.updateMessage(message.messageId, message.popReceipt, undefined, 0);
        }
      }
    }
  };

  for (const order of [
    { orderId: "o-1", amount: 25 },
    { orderId: "o-2", amount: 10 },
    { orderId: "o-1", amount: 25 }, // the producer retried: the same order twice
    { orderId: "o-3", amount: -5 }, // fails on every delivery
  ]) {
    await queue.sendMessage(JSON.stringify(order));
  }
  await host();
  const ledger: number[] = [];
  for await (const row of inbox.listEntities<{ amount: number }>({ queryOptions: { filter: "RowKey eq 'ledger'" } }))
    ledger.push(row.amount);
  const poisoned = (await poison.peekMessages()).peekedMessageItems.length;
  log(`queue: ${charges} charges for 4 messages, ledger rows ${JSON.stringify(ledger.sort())}, ${poisoned} poisoned`);
  if (charges !== 2 || ledger.length !== 2 || poisoned !== 1)
    throw new Error("the orders were not charged exactly once");

  const refund = (key: string | undefined, tenant = "contoso") =>
    createRefund(
      new HttpRequest({
        method: "POST",
        url: "https://orders.example/api/refunds",
        headers: {
          "content-type": "application/json",
          "x-tenant-id": tenant,
          ...(key ? { "idempotency-key": key } : {}),
        },
        body: { string: JSON.stringify({ orderId: "o-1" }) },
      }),
      new InvocationContext({ functionName: "createRefund" }),
    );
  for (const [what, call] of [
    ["first", () => refund('"refund-o-1"')],
    ["retry", () => refund('"refund-o-1"')],
    ["another tenant's same key", () => refund('"refund-o-1"', "fabrikam")],
    ["no key", () => refund(undefined)],
  ] as const) {
    const response = new HttpResponse(await call());
    const replayed = response.headers.get("idempotent-replayed") ? " (replayed)" : "";
    log(`http ${what}: ${response.status}${replayed} ${await response.text()}`);
  }
  log(`http: ${refunds} refunds created for 3 keyed requests of 2 tenants`);
  if (refunds !== 2) throw new Error("the refund ran more than once for one key");

  await Promise.all([queue.delete(), poison.deleteIfExists(), inbox.deleteTable()]);
}

runIfMain(import.meta.url, { title, main });
