/**
 * The transactional outbox against real storage (issue 25): entity writes and outbox rows commit
 * together or not at all; rows are numbered per partition in commit order, also with concurrent
 * writers; one relay leads a range at a time, sends each row in order (large payloads through the
 * claim-check) and deletes it; consumers use the row's id as their idempotency key.
 */
import type { TableClient } from "@azure/data-tables";
import type { ContainerClient } from "@azure/storage-blob";
import type { QueueClient } from "@azure/storage-queue";
import {
  ClaimCheck,
  exponentialBackoff,
  isOutboxPayloadTooLargeError,
  isTableTransactionError,
  MemoryIdempotencyStore,
  OutboxRelay,
  QueueConsumer,
  TableOutbox,
  type OutboxRelayedMessage,
} from "../../../src/index.js";
import { blobService, faultProxyFor, queueService, tableClient, uniqueName } from "../../support/storage.js";
import { describeStorage } from "../../support/target.js";

let table: TableClient;
let container: ContainerClient;
let locks: ContainerClient;
const queues: QueueClient[] = [];

beforeAll(async () => {
  table = tableClient(uniqueName("outbox"));
  await table.createTable();
  container = blobService().getContainerClient(uniqueName("outboxpayloads"));
  locks = blobService().getContainerClient(uniqueName("outboxlocks"));
});
afterAll(async () => {
  await table.deleteTable();
  await Promise.all([container.deleteIfExists(), locks.deleteIfExists(), ...queues.map((q) => q.deleteIfExists())]);
});

async function newQueue(): Promise<QueueClient> {
  const queue = queueService().getQueueClient(uniqueName("outbox"));
  queues.push(queue);
  await queue.create();
  return queue;
}

async function rowsOf(partitionKey: string): Promise<{ rowKey: string; OutboxId?: string; Sequence?: number }[]> {
  const rows: { rowKey: string; OutboxId?: string; Sequence?: number }[] = [];
  for await (const row of table.listEntities<{ OutboxId?: string; Sequence?: number }>({
    queryOptions: { filter: `PartitionKey eq '${partitionKey}'` },
  }))
    rows.push(row as { rowKey: string; OutboxId?: string; Sequence?: number });
  return rows;
}

const relayOptions = (claimCheck: ClaimCheck) => ({
  claimCheck,
  lockContainer: locks,
  pollIntervalInMs: 20,
  maxPollIntervalInMs: 200,
  retryPeriodInMs: 200,
  renewDeadlineInMs: 5_000,
});

describeStorage("TableOutbox", () => {
  it("commits the entity and its messages together, numbered in the partition", async () => {
    const outbox = new TableOutbox(table);
    const first = await outbox.write(
      [["create", { partitionKey: "c1", rowKey: "order-1", total: 10 }]],
      [{ body: "placed 1", id: "order-1-placed" }, { body: "bill 1" }],
    );
    expect(first).toMatchObject({ partitionKey: "c1", ids: ["order-1-placed", expect.any(String)], sequences: [1, 2] });
    const second = await outbox.write([["create", { partitionKey: "c1", rowKey: "order-2" }]], [{ body: "placed 2" }]);
    expect(second.sequences).toEqual([3]);
    const rows = await rowsOf("c1");
    expect(rows.map((r) => r.rowKey)).toEqual([
      "order-1",
      "order-2",
      "~outbox:default",
      "~outbox:default:0000000000000001",
      "~outbox:default:0000000000000002",
      "~outbox:default:0000000000000003",
    ]);
    expect(rows[3]!.OutboxId).toBe("order-1-placed");
  });

  it("writes nothing when the application's own write is refused", async () => {
    const outbox = new TableOutbox(table);
    await outbox.write([["create", { partitionKey: "c2", rowKey: "order-1" }]], [{ body: "placed" }]);
    const error = await outbox
      .write([["create", { partitionKey: "c2", rowKey: "order-1" }]], [{ body: "placed again" }])
      .catch((e: unknown) => e);
    expect(isTableTransactionError(error)).toBe(true);
    expect(error).toMatchObject({ statusCode: 409, failedActionIndex: 0, mayHaveBeenApplied: false });
    expect((await rowsOf("c2")).filter((r) => r.rowKey.startsWith("~outbox:default:"))).toHaveLength(1);
  });

  it("numbers concurrent writers' messages in commit order, without gaps or repeats", async () => {
    const writers = [new TableOutbox(table), new TableOutbox(table), new TableOutbox(table)];
    const results = await Promise.all(
      writers.flatMap((outbox, w) =>
        Array.from({ length: 6 }, (_, i) =>
          outbox.write([["upsert", { partitionKey: "c3", rowKey: `w${w}-${i}` }]], [{ body: `w${w}-${i}` }], {
            maxAttempts: 30,
          }),
        ),
      ),
    );
    const sequences = results.flatMap((r) => r.sequences).sort((a, b) => a - b);
    expect(sequences).toEqual(Array.from({ length: 18 }, (_, i) => i + 1));
    expect(results.some((r) => r.attempts > 1)).toBe(true); // they did collide
    const messageRows = (await rowsOf("c3")).filter((r) => r.rowKey.startsWith("~outbox:default:"));
    expect(messageRows.map((r) => r.Sequence)).toEqual(sequences);
  });

  it("refuses a payload too large for a row before writing anything; gzip makes room", async () => {
    const big = "a".repeat(1_100_000);
    const error = await new TableOutbox(table)
      .write([["create", { partitionKey: "c4", rowKey: "order-1" }]], [{ body: big }])
      .catch((e: unknown) => e);
    expect(isOutboxPayloadTooLargeError(error)).toBe(true);
    expect(await rowsOf("c4")).toEqual([]);
    const zipped = await new TableOutbox(table, { compression: "gzip" }).write(
      [["create", { partitionKey: "c4", rowKey: "order-1" }]],
      [{ body: big }],
    );
    expect(zipped.sequences).toEqual([1]);
  });
});

describeStorage("OutboxRelay", () => {
  it("sends every row in order per partition, large ones through the claim-check; consumers handle each once by its id", async () => {
    const queue = await newQueue();
    const outbox = new TableOutbox(table, { name: "relay1" });
    const claimCheck = new ClaimCheck(container);
    const large = "L".repeat(150_000);
    const written: string[] = [];
    for (let i = 0; i < 4; i++) {
      for (const partitionKey of ["r1", "r2"]) {
        const { ids } = await outbox.write(
          [["upsert", { partitionKey, rowKey: `e${i}` }]],
          [{ body: i === 2 ? large : `${partitionKey}:${i}`, id: `${partitionKey}-${i}` }],
        );
        written.push(...ids);
      }
    }
    const relay = new OutboxRelay(table, queue, { ...relayOptions(claimCheck), name: "relay1" });
    const sent: OutboxRelayedMessage[] = [];
    relay.on("sent", (message) => sent.push(message));
    const handled = new Map<string, string>();
    const store = new MemoryIdempotencyStore();
    const consumer = new QueueConsumer(
      queue,
      async (body, { idempotency }) => void handled.set(idempotency!.key, body),
      {
        claimCheck,
        idempotency: { store },
        pollingBackoff: exponentialBackoff({ deltaInMs: 10, minInMs: 0, maxInMs: 100 }),
      },
    );
    let processed = 0;
    const allProcessed = new Promise<void>((resolve) =>
      consumer.on("processed", () => ++processed === written.length && resolve()),
    );
    await relay.start();
    await consumer.start();
    await allProcessed;
    await Promise.all([relay.stop(), consumer.stop()]);

    expect([...handled.keys()].sort()).toEqual([...written].sort());
    expect(handled.get("r1-2")).toBe(large);
    for (const partitionKey of ["r1", "r2"]) {
      const sequences = sent.filter((m) => m.partitionKey === partitionKey).map((m) => m.sequence);
      expect(sequences).toEqual([1, 2, 3, 4]);
      expect((await rowsOf(partitionKey)).filter((r) => r.rowKey.startsWith("~outbox:relay1:"))).toEqual([]);
    }
    expect(sent.find((m) => m.id === "r1-2")?.payloadBlob).toBeDefined();
    expect(relay.status).toBe("stopped");
  });

  it("leads a range alone: a second relay takes over only when the first stops", async () => {
    const queue = await newQueue();
    const claimCheck = new ClaimCheck(container);
    const outbox = new TableOutbox(table, { name: "relay2" });
    const a = new OutboxRelay(table, queue, { ...relayOptions(claimCheck), name: "relay2", identity: "a" });
    const b = new OutboxRelay(table, queue, { ...relayOptions(claimCheck), name: "relay2", identity: "b" });
    const leading = (relay: OutboxRelay) => new Promise<void>((resolve) => relay.on("leading", () => resolve()));
    const aLeads = leading(a);
    await a.start();
    await aLeads;
    await b.start();
    await new Promise((resolve) => setTimeout(resolve, 600)); // several looks of b's at the lease
    expect([a.isLeader, b.isLeader]).toEqual([true, false]);
    const bLeads = leading(b);
    await a.stop();
    await bLeads;
    const sent = new Promise<OutboxRelayedMessage>((resolve) => b.on("sent", resolve));
    await outbox.write([], [{ body: "after the handover", id: "handover" }], { partitionKey: "r3" });
    b.notify();
    expect(await sent).toMatchObject({ id: "handover", partitionKey: "r3", sequence: 1 });
    await b.stop();
  });

  it("stops a partition at a row it cannot read, and goes on with the others", async () => {
    const queue = await newQueue();
    const claimCheck = new ClaimCheck(container);
    const outbox = new TableOutbox(table, { name: "relay3" });
    await outbox.write([], [{ body: "one" }, { body: "two" }], { partitionKey: "r4" });
    await outbox.write([], [{ body: "fine" }], { partitionKey: "r5" });
    await table.updateEntity({ partitionKey: "r4", rowKey: "~outbox:relay3:0000000000000001", BodyKind: "?" }, "Merge");
    const relay = new OutboxRelay(table, queue, { ...relayOptions(claimCheck), name: "relay3" });
    const errors: string[] = [];
    relay.on("error", ({ operation }) => errors.push(operation));
    const sent = new Promise<OutboxRelayedMessage>((resolve) => relay.on("sent", resolve));
    await relay.start();
    expect(await sent).toMatchObject({ partitionKey: "r5" });
    await relay.stop();
    expect(errors[0]).toBe("read an outbox row");
    expect((await rowsOf("r4")).filter((r) => r.rowKey.startsWith("~outbox:relay3:"))).toHaveLength(2); // neither sent
  });
});

describeStorage("outbox messages and consumers without a claimCheck option (issue 25) [Azurite only]", () => {
  it("a relay's re-send after a lost delete has no second effect, for a consumer given no claimCheck option", async () => {
    const queue = await newQueue();
    const claimCheck = new ClaimCheck(container);
    await new TableOutbox(table, { name: "resend" }).write(
      [["upsert", { partitionKey: "s1", rowKey: "order" }]],
      [{ body: "order placed", id: "s1-placed" }],
    );
    // The relay's table goes through the proxy: its first delete of the row never gets an answer and
    // never reaches the service, as if the relay had crashed between its send and its delete.
    const { proxy, connectionString } = await faultProxyFor("table");
    await using _ = proxy;
    proxy.addRule({ method: "DELETE", times: 1, action: { type: "hang" } });
    const relay = new OutboxRelay(tableClient(table.tableName, connectionString), queue, {
      ...relayOptions(claimCheck),
      name: "resend",
      requestTimeoutInMs: 300,
    });
    const relayed = new Promise<OutboxRelayedMessage>((resolve) => relay.on("sent", resolve));
    const relayErrors: unknown[] = [];
    relay.on("error", ({ error }) => relayErrors.push(error));
    await relay.start();
    expect(await relayed).toMatchObject({ id: "s1-placed" });
    await relay.stop();
    expect(relayErrors).toHaveLength(1); // the delete cut off by the time limit: the row was sent again
    expect(proxy.requests.filter((r) => r.method === "DELETE").length).toBe(2);

    const handled: { key: string; body: string }[] = [];
    const consumer = new QueueConsumer(
      queue,
      async (body: string, { idempotency }) => {
        handled.push({ key: idempotency!.key, body });
      },
      {
        idempotency: { store: new MemoryIdempotencyStore() },
        pollingBackoff: exponentialBackoff({ deltaInMs: 10, minInMs: 0, maxInMs: 100 }),
      },
    );
    let settled = 0;
    const bothSettled = new Promise<void>((resolve) => {
      const one = () => ++settled === 2 && resolve();
      consumer.on("processed", one);
      consumer.on("duplicate", one);
    });
    await consumer.start();
    await bothSettled;
    await consumer.stop();
    expect(handled).toEqual([{ key: "s1-placed", body: "order placed" }]);
    expect((await queue.getProperties()).approximateMessagesCount).toBe(0);
  });

  it("a consumer without claimCheck that receives a payload reference ends at once with a typed error, the message left", async () => {
    const queue = await newQueue();
    await new ClaimCheck(container).sendMessage(queue, "P".repeat(100_000), { idempotencyKey: "big-1" });
    let calls = 0;
    const consumer = new QueueConsumer(queue, async () => void calls++, {
      idempotency: { store: new MemoryIdempotencyStore() },
      pollingBackoff: exponentialBackoff({ deltaInMs: 10, minInMs: 0, maxInMs: 100 }),
    });
    await consumer.start();
    const error = await consumer.closed.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({
      name: "ConsumerResourceError",
      code: "ConsumerResourceFailed",
      resource: "claimCheck",
      resourceName: container.containerName,
      transient: false,
    });
    expect(String((error as Error).message)).toMatch(/claimCheck: new ClaimCheck/);
    expect(calls).toBe(0);
    expect(consumer.status).toBe("failed");
    expect((await queue.getProperties()).approximateMessagesCount).toBe(1); // not deleted, not poisoned
  });
});
