/**
 * The documented least-privilege consumer (issue 21): process and update (pu) on its queue, add (a)
 * on the poison queue, query, add, update and delete (raud) on the inbox table, each a SAS scoped to
 * its one resource. Its handler adds effects, so done marks go as entity group transactions.
 *
 * The service accepts a table SAS on `$batch`; Azurite 3.37 refuses it (403). The tests run the
 * table client through `table-sas-bridge.ts`, which checks such a transaction the way the service
 * documents it and hands it to Azurite: the library itself sends what it would send to the service.
 * One test pins Azurite's refusal, so that the bridge goes once Azurite accepts the transaction.
 *
 * And a 403 on one message's transaction later fails that message, not the consumer.
 */
import { AzureSASCredential, generateTableSas, TableClient, type TransactionAction } from "@azure/data-tables";
import { AzureNamedKeyCredential } from "@azure/data-tables";
import {
  isConsumerResourceError,
  isEffectsRefusedError,
  QueueConsumer,
  jsonCodec,
  type QueueConsumerEvents,
} from "../../../src/queue/index.js";
import { TableIdempotencyStore } from "../../../src/idempotency/index.js";
import { AZURITE_ACCOUNT_KEY } from "../../../src/testing/index.js";
import { startTableSasBridge, type TableSasBridge } from "../../support/table-sas-bridge.js";
import { endpoints, faultProxyFor, queueSasClient, quickSdkRetries, tableClient } from "../../support/storage.js";
import { newInbox, newQueue, quick, record } from "./consumer-support.js";

interface Order {
  readonly orderId: string;
  readonly effects: boolean;
}

/** A client for `table` at `endpoint` whose credential is a SAS scoped to that table, with `permissions`. */
function tableSasClient(endpoint: string, table: string, permissions: string): TableClient {
  const sas = generateTableSas(table, new AzureNamedKeyCredential("devstoreaccount1", AZURITE_ACCOUNT_KEY), {
    permissions: {
      query: permissions.includes("r"),
      add: permissions.includes("a"),
      update: permissions.includes("u"),
      delete: permissions.includes("d"),
    },
    expiresOn: new Date(Date.now() + 3_600_000),
  });
  return new TableClient(endpoint, table, new AzureSASCredential(sas), {
    allowInsecureConnection: true,
    retryOptions: quickSdkRetries.tables,
  });
}

const effectsOf = (partitionKey: string, tag: string): TransactionAction[] => [
  ["upsert", { partitionKey, rowKey: `order-${tag}`, status: "accepted" }],
];

async function rows(table: TableClient): Promise<string[]> {
  const keys: string[] = [];
  for await (const row of table.listEntities()) keys.push(row.rowKey!);
  return keys.sort();
}

describe("table SAS and entity group transactions", () => {
  let bridge: TableSasBridge;
  beforeAll(async () => {
    bridge = await startTableSasBridge(endpoints().table);
  });
  afterAll(() => bridge.close());

  it("Azurite refuses a table SAS on $batch (the service accepts it); the bridge checks it as the service documents", async () => {
    const inbox = await newInbox("tsas");
    const batch: TransactionAction[] = [["create", { partitionKey: "p", rowKey: "r1" }]];
    // Azurite itself: 403 on the transaction, while a single insert with the same SAS is fine.
    const direct = tableSasClient(endpoints().table, inbox.tableName, "raud");
    await direct.createEntity({ partitionKey: "p", rowKey: "single" });
    await expect(direct.submitTransaction(batch)).rejects.toMatchObject({ statusCode: 403 });
    // Through the bridge: the same transaction commits.
    await tableSasClient(bridge.endpoint, inbox.tableName, "raud").submitTransaction(batch);
    expect(await rows(inbox)).toEqual(["r1", "single"]);
    // What the SAS does not grant is refused: an upsert (add and update) with add only, another table.
    await expect(
      tableSasClient(bridge.endpoint, inbox.tableName, "ra").submitTransaction([
        ["upsert", { partitionKey: "p", rowKey: "r2" }],
      ]),
    ).rejects.toMatchObject({ statusCode: 403 });
    const other = await newInbox("tsasother");
    const wrongTable = new TableClient(
      bridge.endpoint,
      other.tableName,
      new AzureSASCredential(
        generateTableSas(inbox.tableName, new AzureNamedKeyCredential("devstoreaccount1", AZURITE_ACCOUNT_KEY), {
          permissions: { query: true, add: true, update: true, delete: true },
        }),
      ),
      { allowInsecureConnection: true },
    );
    await expect(wrongTable.submitTransaction([["create", { partitionKey: "p", rowKey: "x" }]])).rejects.toMatchObject({
      statusCode: 403,
    });
    expect(await rows(inbox)).toEqual(["r1", "single"]);
    expect(await rows(other)).toEqual([]);
  });

  it("a consumer with exactly the documented rights (queue pu, poison a, inbox raud) commits effects with its done marks", async () => {
    const { queue, poison } = await newQueue("leastfx");
    await poison.create(); // an add-only poison client cannot create it
    const inbox = await newInbox("leastfx");
    const consumer = new QueueConsumer<Order, TransactionAction>(
      queueSasClient(queue.name, "pu"),
      async (order, { idempotency, addEffects }) => {
        if (order.effects) addEffects(...effectsOf(idempotency!.partitionKey, order.orderId));
        return { ok: order.orderId };
      },
      {
        ...quick,
        codec: jsonCodec<Order>(),
        poisonQueue: queueSasClient(poison.name, "a"),
        idempotency: {
          store: new TableIdempotencyStore(tableSasClient(bridge.endpoint, inbox.tableName, "raud")),
          key: (order) => order.orderId,
          partitionKey: () => "orders",
        },
      },
    );
    const events = record(consumer);
    const accepted = bridge.transactions.accepted;
    await consumer.start();
    try {
      for (const order of [
        { orderId: "a", effects: true },
        { orderId: "b", effects: false },
        { orderId: "c", effects: true },
      ])
        await queue.sendMessage(JSON.stringify(order));
      await events.next("processed", 3);
      expect(events.of("failed")).toEqual([]);
      expect(consumer.status).toBe("running");
    } finally {
      await consumer.stop();
    }
    expect(bridge.transactions.accepted - accepted).toBe(2); // the two done marks with effects
    expect(await rows(inbox)).toEqual(["inbox:a", "inbox:b", "inbox:c", "order-a", "order-c"]);
  });
});

describe("a 403 on one message's transaction", () => {
  it("on Azurite itself (which refuses the table SAS's $batch) the least-privilege consumer keeps consuming: only messages with effects fail", async () => {
    const { queue, poison } = await newQueue("azfx");
    await poison.create();
    const inbox = await newInbox("azfx");
    const consumer = new QueueConsumer<Order, TransactionAction>(
      queueSasClient(queue.name, "pu"),
      async (order, { idempotency, addEffects }) => {
        if (order.effects) addEffects(...effectsOf(idempotency!.partitionKey, order.orderId));
        return order.orderId;
      },
      {
        ...quick,
        maxDequeueCount: 1,
        codec: jsonCodec<Order>(),
        poisonQueue: queueSasClient(poison.name, "a"),
        idempotency: {
          store: new TableIdempotencyStore(tableSasClient(endpoints().table, inbox.tableName, "raud")),
          key: (order) => order.orderId,
        },
      },
    );
    const events = record(consumer);
    await consumer.start();
    try {
      await queue.sendMessage(JSON.stringify({ orderId: "with-effects", effects: true }));
      const [poisoned] = await events.next("poisoned");
      expect(poisoned!.reason).toMatch(
        /refused the transaction of idempotency key 'with-effects' \(its effects and done mark\) with 403 AuthorizationFailure/,
      );
      await queue.sendMessage(JSON.stringify({ orderId: "plain", effects: false }));
      expect((await events.next("processed")).map((p) => p.result)).toEqual(["plain"]);
      expect(consumer.status).toBe("running");
      expect(events.of("error")).toEqual([]);
    } finally {
      await consumer.stop();
    }
    expect(await rows(inbox)).toEqual(["inbox:plain"]);
  });

  it("fails that message's attempt (a failed event, then a retry), and the consumer goes on with the others", async () => {
    const { queue } = await newQueue("fx403");
    const inbox = await newInbox("fx403");
    const { proxy, connectionString } = await faultProxyFor("table");
    const consumer = new QueueConsumer<Order, TransactionAction>(
      queue,
      async (order, { idempotency, addEffects }) => {
        if (order.effects) addEffects(...effectsOf(idempotency!.partitionKey, order.orderId));
        return order.orderId;
      },
      {
        ...quick,
        maxDequeueCount: 2,
        codec: jsonCodec<Order>(),
        idempotency: {
          store: new TableIdempotencyStore(tableClient(inbox.tableName, connectionString)),
          key: (order) => order.orderId,
        },
      },
    );
    const events = record(consumer);
    try {
      await consumer.start();
      // The first transaction (the first message's effects and done mark) is refused, as a SAS whose
      // key range one effect leaves would be; nothing else is.
      proxy.addRule({
        method: "POST",
        path: /\/\$batch/,
        times: 1,
        action: { type: "status", statusCode: 403, serviceCode: "AuthorizationPermissionMismatch" },
      });
      await queue.sendMessage(JSON.stringify({ orderId: "refused", effects: true }));
      const [failure] = await events.next("failed");
      expect(isEffectsRefusedError(failure!.error)).toBe(true);
      expect(failure).toMatchObject({ willRetry: true, error: { statusCode: 403, key: "refused" } });
      expect((failure!.error as Error).message).toMatch(
        /refused the transaction of idempotency key 'refused'.*nothing of it was written.*the consumer goes on/,
      );
      expect(consumer.status).toBe("running");

      await queue.sendMessage(JSON.stringify({ orderId: "other", effects: true }));
      const processed = await events.next("processed", 2);
      expect(processed.map((p) => p.result).sort()).toEqual(["other", "refused"]); // the refused one, retried, and the other
      expect(events.of("error")).toEqual([]);
      expect(events.of("poisoned")).toEqual([]);
      expect(consumer.status).toBe("running");
    } finally {
      await consumer.stop();
      await proxy.close();
    }
    expect(await rows(inbox)).toEqual(["inbox:other", "inbox:refused", "order-other", "order-refused"]);
    await expect(consumer.closed).resolves.toBeUndefined();
  });

  it("a refused credential (403 AuthenticationFailed) on that transaction still ends the consumer: it is not the message's fault", async () => {
    const { queue } = await newQueue("fxauth");
    const inbox = await newInbox("fxauth");
    const { proxy, connectionString } = await faultProxyFor("table");
    const consumer = new QueueConsumer<Order, TransactionAction>(
      queue,
      async (order, { idempotency, addEffects }) => {
        addEffects(...effectsOf(idempotency!.partitionKey, order.orderId));
      },
      {
        ...quick,
        codec: jsonCodec<Order>(),
        idempotency: {
          store: new TableIdempotencyStore(tableClient(inbox.tableName, connectionString)),
          key: (o) => o.orderId,
        },
      },
    );
    const stopped = new Promise<QueueConsumerEvents["stopped"]>((resolve) => consumer.on("stopped", resolve));
    try {
      await consumer.start();
      proxy.addRule({
        method: "POST",
        path: /\/\$batch/,
        action: { type: "status", statusCode: 403, serviceCode: "AuthenticationFailed" },
      });
      await queue.sendMessage(JSON.stringify({ orderId: "x", effects: true }));
      const { error } = await stopped;
      expect(isConsumerResourceError(error)).toBe(true);
      expect(consumer.status).toBe("failed");
    } finally {
      await consumer.stop();
      await proxy.close();
    }
  });
});
