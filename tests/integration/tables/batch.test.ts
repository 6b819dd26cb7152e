/**
 * The batch writer and the atomic mode against a real Azurite: chunking at exactly 100 operations
 * and near 4 MiB, the payload estimate against the bodies the SDK really sends, per-transaction
 * outcomes, refusals before any request, and retries that follow the one classifier.
 */
import type { TableClient, TransactionAction } from "@azure/data-tables";
import {
  isTableActionError,
  isTableKeyError,
  isTableTransactionError,
  isTransactionRefusedError,
  planTransactions,
  TRANSACTION_LIMITS,
  writeAtomic,
  writeBatch,
  type TableTransactionError,
  type TransactionRefusedError,
} from "../../../src/tables/index.js";
import { SDK_SINGLE_ATTEMPT, fixedBackoff, classifyError } from "../../../src/retry/index.js";
import { faultProxyFor, tableClient, uniqueName } from "../../support/storage.js";

/** Records the body size of every $batch request a client sends, and how many were in flight at most. */
function watchTransactions(client: TableClient) {
  const seen = { bodies: [] as number[], inFlight: 0, maxInFlight: 0 };
  client.pipeline.addPolicy({
    name: "watch-transactions",
    async sendRequest(request, next) {
      if (!request.url.includes("$batch")) return next(request);
      // @azure/data-tables sends a transaction's multipart body as one string.
      if (typeof request.body !== "string")
        throw new Error(`expected a string $batch body, got ${typeof request.body}`);
      seen.bodies.push(Buffer.byteLength(request.body, "utf8"));
      seen.inFlight += 1;
      seen.maxInFlight = Math.max(seen.maxInFlight, seen.inFlight);
      try {
        return await next(request);
      } finally {
        seen.inFlight -= 1;
      }
    },
  });
  return seen;
}

async function newTable(prefix: string, cs?: string): Promise<TableClient> {
  const client = tableClient(uniqueName(prefix), cs);
  await client.createTable();
  return client;
}

async function rowsOf(client: TableClient, partitionKey?: string): Promise<Record<string, unknown>[]> {
  const rows: Record<string, unknown>[] = [];
  const filter = partitionKey === undefined ? undefined : `PartitionKey eq '${partitionKey}'`;
  for await (const row of client.listEntities({ queryOptions: filter ? { filter } : {} })) rows.push(row);
  return rows;
}

const upsert = (partitionKey: string, rowKey: string, extra: Record<string, unknown> = {}): TransactionAction => [
  "upsert",
  { partitionKey, rowKey, ...extra },
];

describe("writeBatch", () => {
  it("sends exactly 100 operations in one transaction and 101 in two", async () => {
    const client = await newTable("batch100");
    const seen = watchTransactions(client);
    const hundred = Array.from({ length: 100 }, (_, i) => upsert("p", `r${String(i).padStart(3, "0")}`, { i }));
    const first = await writeBatch(client, hundred);
    expect(first).toMatchObject({ ok: true, committedActions: 100, requests: 1 });
    expect(first.transactions[0]!.etags.every((etag) => typeof etag === "string")).toBe(true);
    const more = Array.from({ length: 101 }, (_, i) => upsert("q", `r${String(i).padStart(3, "0")}`, { i }));
    const second = await writeBatch(client, more);
    expect(second.transactions.map((t) => t.actionIndexes.length)).toEqual([100, 1]);
    expect(second.requests).toBe(2);
    expect(seen.bodies).toHaveLength(3);
    expect(await rowsOf(client)).toHaveLength(201);
  });

  it("splits near 4 MiB by payload, never sends a body over the limit, and estimates every body from above", async () => {
    const client = await newTable("batch4mb");
    const seen = watchTransactions(client);
    // 100 entities of about 60 KB each: 6 MB, under 100 operations but over 4 MiB.
    const text = "y".repeat(30_000);
    const actions = Array.from({ length: 100 }, (_, i) => upsert("big", `row-${i}`, { a: text, b: text }));
    const plan = planTransactions(client, actions);
    expect(plan).toHaveLength(2);
    const result = await writeBatch(client, actions);
    expect(result.ok).toBe(true);
    expect(seen.bodies).toHaveLength(2);
    for (const [i, body] of seen.bodies.entries()) {
      expect(body).toBeLessThanOrEqual(TRANSACTION_LIMITS.maxPayloadBytes);
      expect(plan[i]!.estimatedBytes).toBeGreaterThanOrEqual(body);
      expect(plan[i]!.estimatedBytes - body).toBeLessThan(plan[i]!.actions.length * 600); // close, not wildly over
    }
    expect(seen.bodies[0]).toBeGreaterThan(3.9 * 1024 * 1024); // the first is filled close to the limit
    expect(await rowsOf(client, "big")).toHaveLength(100);
  });

  it("estimates bodies from above for every kind of action and value", async () => {
    const client = await newTable("batchest");
    const seen = watchTransactions(client);
    const pk = "p'é 😀~"; // quotes doubled, non-ASCII percent-encoded in the URL
    await writeBatch(client, [upsert(pk, "target"), upsert(pk, "gone")]);
    const { etag } = await client.getEntity(pk, "target");
    const actions: TransactionAction[] = [
      [
        "create",
        {
          partitionKey: pk,
          rowKey: "n'1",
          s: '"quoted"\n\u0001 é 😀',
          n: 1.5,
          b: true,
          big: 2n ** 60n,
          d: new Date(),
          u: new Uint8Array(1000),
          g: { value: "0f8fad5b-d9cb-469f-a165-70867728950e", type: "Guid" },
          none: null,
        },
      ],
      ["update", { partitionKey: pk, rowKey: "target", s: "x".repeat(5000) }, "Replace", { etag }],
      ["upsert", { partitionKey: pk, rowKey: "é".repeat(200), s: "😀".repeat(3000) }, "Merge"],
      ["delete", { partitionKey: pk, rowKey: "gone" }],
    ];
    seen.bodies.length = 0;
    const plan = planTransactions(client, actions);
    const result = await writeBatch(client, actions);
    expect(result.ok).toBe(true);
    expect(seen.bodies).toHaveLength(1);
    expect(plan[0]!.estimatedBytes).toBeGreaterThanOrEqual(seen.bodies[0]!);
  });

  it("reports each transaction's outcome: the service's reason, the action it blamed, and what was not sent", async () => {
    const client = await newTable("batchfail");
    await client.createEntity({ partitionKey: "a", rowKey: "taken" });
    const actions: TransactionAction[] = [
      ...Array.from({ length: 100 }, (_, i): TransactionAction => [
        "create",
        { partitionKey: "a", rowKey: `new-${i}` },
      ]),
      ["create", { partitionKey: "a", rowKey: "taken" }], // index 100: the second transaction of "a" fails here
      ["create", { partitionKey: "a", rowKey: "fresh" }],
      ...Array.from({ length: 100 }, (_, i): TransactionAction => [
        "create",
        { partitionKey: "a", rowKey: `later-${i}` },
      ]),
      ["create", { partitionKey: "b", rowKey: "1" }],
    ];
    const result = await writeBatch(client, actions);
    expect(result.ok).toBe(false);
    const [a1, a2, a3, b1] = result.transactions;
    expect(a1).toMatchObject({ partitionKey: "a", status: "committed", attempts: 1 });
    expect(a2).toMatchObject({ partitionKey: "a", status: "failed", attempts: 1 });
    const error = a2!.error as TableTransactionError;
    expect(isTableTransactionError(error)).toBe(true);
    expect(error).toMatchObject({
      statusCode: 409,
      serviceCode: "EntityAlreadyExists",
      failedActionIndex: 100,
      transient: false,
      mayHaveBeenApplied: false,
    });
    expect(error.message).toMatch(/at action 100 \(create\): 409 EntityAlreadyExists/);
    expect(classifyError(error)).toMatchObject({ transient: false, kind: "client", statusCode: 409 });
    expect(a3).toMatchObject({ status: "not-sent", reason: "earlier-transaction-failed", attempts: 0 });
    expect(b1).toMatchObject({ partitionKey: "b", status: "committed" });
    expect(result).toMatchObject({ committedActions: 101, failedActions: 100, notSentActions: 2, requests: 3 });
    // The failed transaction applied nothing: "fresh" was in it.
    const rows = await rowsOf(client, "a");
    expect(rows.map((r) => r.rowKey)).not.toContain("fresh");
    expect(rows).toHaveLength(101); // "taken" and new-0..99
  });

  it("refuses a batch with one bad key before sending anything [Azurite only]", async () => {
    const { proxy, connectionString } = await faultProxyFor("table");
    try {
      const client = await newTable("batchbadkey", connectionString);
      proxy.clearLog();
      const actions = Array.from({ length: 150 }, (_, i) => upsert(`p${i % 3}`, i === 120 ? "2024/05/01" : `r${i}`));
      const error = await writeBatch(client, actions).catch((e: unknown) => e);
      expect(isTableKeyError(error)).toBe(true);
      expect(error).toMatchObject({ keyName: "rowKey", rule: "forbidden-character", actionIndex: 120 });
      const badValue = await writeBatch(client, [upsert("p", "a"), upsert("p", "b", { tags: ["x"] })]).catch(
        (e: unknown) => e,
      );
      expect(isTableActionError(badValue)).toBe(true);
      // A lone surrogate cannot be put in a URL: refused as a bad key, not sent and reported as "no answer".
      const surrogate = await writeBatch(client, [upsert("p", "a"), upsert("p", "a\uD800b")]).catch((e: unknown) => e);
      expect(isTableKeyError(surrogate)).toBe(true);
      expect(surrogate).toMatchObject({ keyName: "rowKey", rule: "unpaired-surrogate", actionIndex: 1 });
      const atomic = await writeAtomic(client, [upsert("p\uDC00", "a")]).catch((e: unknown) => e);
      expect(atomic).toMatchObject({ keyName: "partitionKey", rule: "unpaired-surrogate", actionIndex: 0 });
      expect(proxy.requests).toHaveLength(0);
      expect(await rowsOf(client)).toHaveLength(0);
    } finally {
      await proxy.close();
    }
  });

  it("runs transactions of different partitions concurrently, never more than maxConcurrency [Azurite only]", async () => {
    const { proxy, connectionString } = await faultProxyFor("table");
    try {
      const client = await newTable("batchconc", connectionString);
      proxy.addRule({ method: "POST", path: /\$batch/, action: { type: "delay", delayInMs: 150 } });
      const seen = watchTransactions(client);
      const actions = Array.from({ length: 12 }, (_, i) => upsert(`p${i % 6}`, `r${i}`));
      const result = await writeBatch(client, actions, { maxConcurrency: 2 });
      expect(result.ok).toBe(true);
      expect(seen.bodies).toHaveLength(6);
      expect(seen.maxInFlight).toBe(2);
    } finally {
      await proxy.close();
    }
  });

  it("retries a transaction that met ServerBusy, and never one that failed with a 4xx [Azurite only]", async () => {
    const { proxy, connectionString } = await faultProxyFor("table");
    try {
      const client = await newTable("batchretry", connectionString);
      const single = tableClient(client.tableName, connectionString, { retryOptions: SDK_SINGLE_ATTEMPT.tables });
      const retry = { maxRetries: 3, backoff: fixedBackoff({ delayInMs: 10 }) };
      proxy.addRule({ method: "POST", path: /\$batch/, times: 2, action: { type: "serverBusy" } });
      proxy.clearLog();
      const busy = await writeBatch(single, [upsert("p", "a"), upsert("p", "b")], { retry });
      expect(busy.transactions[0]).toMatchObject({ status: "committed", attempts: 3 });
      expect(proxy.requests.filter((r) => r.path.includes("$batch"))).toHaveLength(3);

      proxy.clearLog();
      const conflict = await writeBatch(single, [["create", { partitionKey: "p", rowKey: "a" }]], { retry });
      expect(conflict.transactions[0]).toMatchObject({ status: "failed", attempts: 1 });
      expect(conflict.transactions[0]!.error).toMatchObject({ statusCode: 409, failedActionIndex: 0 });
      expect(proxy.requests.filter((r) => r.path.includes("$batch"))).toHaveLength(1);

      // Without the option, the library sends each transaction once (the client's pipeline may retry).
      proxy.addRule({ method: "POST", path: /\$batch/, times: 1, action: { type: "serverBusy" } });
      proxy.clearLog();
      const once = await writeBatch(single, [upsert("p", "c")]);
      expect(once.transactions[0]).toMatchObject({ status: "failed", attempts: 1 });
      expect(once.transactions[0]!.error).toMatchObject({ statusCode: 503, transient: true });
      expect(classifyError(once.transactions[0]!.error).transient).toBe(true);
    } finally {
      await proxy.close();
    }
  });

  it("recognises its own transaction when the library's retry meets it after a lost answer [Azurite only]", async () => {
    const { proxy, connectionString } = await faultProxyFor("table");
    try {
      const client = await newTable("batchlost", connectionString);
      const single = tableClient(client.tableName, connectionString, { retryOptions: SDK_SINGLE_ATTEMPT.tables });
      proxy.addRule({ method: "POST", path: /\$batch/, times: 1, action: { type: "dropResponse" } });
      const result = await writeBatch(single, [["create", { partitionKey: "p", rowKey: "a" }]], {
        retry: { maxRetries: 2, backoff: fixedBackoff({ delayInMs: 10 }) },
      });
      // The first attempt was applied; its retry met its own entity (409), and the read-back found its write id.
      expect(result.transactions[0]).toMatchObject({ status: "committed", attempts: 2 });
      const rows = await rowsOf(client);
      expect(rows).toHaveLength(1);
      expect(result.transactions[0]!.etags).toEqual([rows[0]!.etag]);
      expect(rows[0]!._writeId).toMatch(/^[A-Za-z0-9_-]{16}$/);
    } finally {
      await proxy.close();
    }
  });

  it("stops sending when cancelled and reports the rest as not sent", async () => {
    const client = await newTable("batchabort");
    const controller = new AbortController();
    const actions = Array.from({ length: 500 }, (_, i) => upsert("p", `r${String(i).padStart(3, "0")}`));
    const result = await writeBatch(client, actions, {
      abortSignal: controller.signal,
      onTransaction: (outcome) => {
        if (outcome.status === "committed") controller.abort();
      },
    });
    expect(result.transactions[0]!.status).toBe("committed");
    expect(result.transactions.slice(1).every((t) => t.status === "not-sent" && t.reason === "cancelled")).toBe(true);
    expect(await rowsOf(client)).toHaveLength(100);
  });

  it("refuses preserveOrder: false when an entity appears twice", async () => {
    const client = await newTable("batchorder");
    await expect(writeBatch(client, [upsert("p", "a"), upsert("p", "a")], { preserveOrder: false })).rejects.toThrow(
      /at most once/,
    );
    const result = await writeBatch(
      client,
      Array.from({ length: 300 }, (_, i) => upsert("p", `r${i}`)),
      { preserveOrder: false, maxConcurrency: 3 },
    );
    expect(result).toMatchObject({ ok: true, committedActions: 300, requests: 3 });
  });
});

describe("writeAtomic", () => {
  async function refusal(client: TableClient, actions: TransactionAction[]): Promise<TransactionRefusedError> {
    const error = await writeAtomic(client, actions).catch((e: unknown) => e);
    if (!isTransactionRefusedError(error)) throw new Error(`expected a refusal, got ${String(error)}`);
    return error;
  }

  it("commits writes of one partition together and returns their ETags", async () => {
    const client = await newTable("atomicok");
    const result = await writeAtomic(client, [
      ["create", { partitionKey: "tx-1", rowKey: "debit", amount: -25 }],
      ["create", { partitionKey: "tx-1", rowKey: "credit", amount: 25 }],
    ]);
    expect(result).toMatchObject({ partitionKey: "tx-1", attempts: 1 });
    expect(result.etags[1]).toBe((await client.getEntity("tx-1", "credit")).etag);
  });

  it("refuses, before sending anything, writes that cannot be one transaction [Azurite only]", async () => {
    const { proxy, connectionString } = await faultProxyFor("table");
    try {
      const client = await newTable("atomicrefuse", connectionString);
      proxy.clearLog();
      // Azurite would accept several partitions in one batch (Azure/Azurite#1215): the library refuses itself.
      const partitions = await refusal(client, [upsert("a", "1"), upsert("b", "1"), upsert("c", "1")]);
      expect(partitions).toMatchObject({
        code: "TransactionRefused",
        reason: "multiple-partitions",
        operationCount: 3,
        partitionKeys: ["a", "b", "c"],
      });
      expect(partitions.message).toMatch(/Nothing was sent/);
      expect(
        await refusal(
          client,
          Array.from({ length: 101 }, (_, i) => upsert("p", `r${i}`)),
        ),
      ).toMatchObject({ reason: "too-many-operations" });
      const text = "z".repeat(30_000);
      const payload = await refusal(
        client,
        Array.from({ length: 80 }, (_, i) => upsert("p", `r${i}`, { a: text, b: text })),
      );
      expect(payload.reason).toBe("payload-too-large");
      expect(payload.estimatedBytes).toBeGreaterThan(TRANSACTION_LIMITS.maxPayloadBytes);
      expect(
        await refusal(client, [upsert("p", "same"), ["delete", { partitionKey: "p", rowKey: "same" }]]),
      ).toMatchObject({ reason: "duplicate-entity" });
      expect(await refusal(client, [])).toMatchObject({ reason: "empty" });
      expect(proxy.requests).toHaveLength(0);
      expect(await rowsOf(client)).toHaveLength(0);
    } finally {
      await proxy.close();
    }
  });

  it("commits a transaction just under 4 MiB", async () => {
    const client = await newTable("atomicnear");
    const seen = watchTransactions(client);
    const text = "w".repeat(30_000);
    const actions = Array.from({ length: 69 }, (_, i) => upsert("p", `r${i}`, { a: text, b: text }));
    const result = await writeAtomic(client, actions);
    expect(result.estimatedBytes).toBeLessThanOrEqual(TRANSACTION_LIMITS.maxPayloadBytes);
    expect(seen.bodies[0]).toBeGreaterThan(4_000_000);
    expect(await rowsOf(client)).toHaveLength(69);
  });

  it("throws the service's refusal with the action it blamed, and applies nothing", async () => {
    const client = await newTable("atomicfail");
    await client.createEntity({ partitionKey: "p", rowKey: "b" });
    const error = (await writeAtomic(client, [upsert("p", "a"), ["create", { partitionKey: "p", rowKey: "b" }]]).catch(
      (e: unknown) => e,
    )) as TableTransactionError;
    expect(isTableTransactionError(error)).toBe(true);
    expect(error).toMatchObject({ failedActionIndex: 1, statusCode: 409, partitionKey: "p", actionIndexes: [0, 1] });
    expect(await rowsOf(client)).toHaveLength(1);
  });
});
