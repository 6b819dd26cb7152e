/**
 * The Azure Functions wrappers, called as the Functions host calls them: with the @azure/functions
 * package's own `InvocationContext` (queue trigger metadata as the host passes it, camelCased) and
 * `HttpRequest`, against real Azurite tables. What the host does around a handler (delete the
 * message after a return, deliver it again after a throw with a higher dequeue count, poison it at
 * maxDequeueCount) is played by the test; what is checked is what the wrappers did with the store
 * and the handler: effects rows exactly once, handler runs, the log lines, the responses.
 */
import { HttpRequest, HttpResponse, InvocationContext, type HttpResponseInit } from "@azure/functions";
import type { TableClient, TransactionAction } from "@azure/data-tables";
import { TableIdempotencyStore } from "../../../src/idempotency/index.js";
import { idempotentHttp, idempotentQueueHandler } from "../../../src/functions/index.js";
import { newInbox } from "../queue/consumer-support.js";

interface Order {
  orderId: string;
  amount: number;
}

/** A context as the host builds it for a queue trigger delivery, its log lines collected. */
function queueContext(id: string, dequeueCount: number, logs: string[] = []): InvocationContext {
  return new InvocationContext({
    invocationId: `inv-${id}-${dequeueCount}`,
    functionName: "processOrder",
    triggerMetadata: { id, dequeueCount, queueTrigger: "…", popReceipt: "p" },
    options: { trigger: { type: "queueTrigger", name: "order", queueName: "orders" } },
    logHandler: (level, ...args) => logs.push(`${level}: ${args.map(String).join(" ")}`),
  });
}

async function ledgerRows(inbox: TableClient): Promise<{ partitionKey: string; amount: number }[]> {
  const rows: { partitionKey: string; amount: number }[] = [];
  for await (const row of inbox.listEntities<{ amount: number }>({ queryOptions: { filter: "RowKey eq 'ledger'" } }))
    rows.push({ partitionKey: row.partitionKey!, amount: row.amount });
  return rows;
}

describe("idempotentQueueHandler (app.storageQueue)", () => {
  const ledgerHandler =
    (runs: { count: number }, fail: () => boolean = () => false) =>
    async (
      order: Order,
      _context: InvocationContext,
      { addEffects, partitionKey }: { addEffects: (...a: TransactionAction[]) => void; partitionKey: string },
    ) => {
      runs.count += 1;
      if (fail()) throw new Error("the payment provider is down");
      addEffects(["create", { partitionKey, rowKey: "ledger", amount: order.amount }]);
      return { charged: order.amount };
    };

  it("keyed by message id: a redelivery of a message whose work is done returns the stored result without running", async () => {
    const inbox = await newInbox("fnq");
    const runs = { count: 0 };
    const handler = idempotentQueueHandler<Order, { charged: number }, TransactionAction>(ledgerHandler(runs), {
      store: new TableIdempotencyStore(inbox),
    });
    const order = { orderId: "o-1", amount: 25 };
    expect(await handler(order, queueContext("m-1", 1))).toEqual({ charged: 25 });
    // The host's delete was lost (or the host died after the handler): the same message comes back.
    const logs: string[] = [];
    expect(await handler(order, queueContext("m-1", 2, logs))).toEqual({ charged: 25 });
    expect(runs.count).toBe(1);
    expect((await ledgerRows(inbox)).map((row) => row.amount)).toEqual([25]);
    expect(logs.join("\n")).toMatch(/information: queue message m-1: its idempotency key is done already/);
    // Another message with the same body is other work under a message-id key: it runs.
    await handler(order, queueContext("m-2", 1));
    expect(runs.count).toBe(2);
    expect(await ledgerRows(inbox)).toHaveLength(2);
  });

  it("keyed by the body: two messages carrying the same order run it once", async () => {
    const inbox = await newInbox("fnq");
    const runs = { count: 0 };
    const handler = idempotentQueueHandler<Order, { charged: number }, TransactionAction>(ledgerHandler(runs), {
      store: new TableIdempotencyStore(inbox),
      key: (order) => order.orderId,
    });
    const order = { orderId: "o-7", amount: 10 };
    await handler(order, queueContext("m-a", 1));
    await handler(order, queueContext("m-b", 1));
    expect(runs.count).toBe(1);
    expect(await ledgerRows(inbox)).toHaveLength(1);
    // The same order id with another body is refused, not run.
    await expect(handler({ orderId: "o-7", amount: 99 }, queueContext("m-c", 1))).rejects.toMatchObject({
      code: "IdempotencyPayloadMismatch",
    });
    expect(runs.count).toBe(1);
  });

  it("concurrent copies under a body key: the second waits for the first and gets its result; the work runs once", async () => {
    const inbox = await newInbox("fnq");
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started!: () => void;
    const firstStarted = new Promise<void>((resolve) => (started = resolve));
    let runs = 0;
    const handler = idempotentQueueHandler<Order, { charged: number }, TransactionAction>(
      async (order, _context, { addEffects, partitionKey }) => {
        runs += 1;
        started();
        await gate;
        addEffects(["create", { partitionKey, rowKey: "ledger", amount: order.amount }]);
        return { charged: order.amount };
      },
      { store: new TableIdempotencyStore(inbox), key: (order) => order.orderId },
    );
    const order = { orderId: "o-9", amount: 5 };
    const first = handler(order, queueContext("m-1", 1));
    await firstStarted;
    const second = handler(order, queueContext("m-2", 1));
    release();
    expect(await Promise.all([first, second])).toEqual([{ charged: 5 }, { charged: 5 }]);
    expect(runs).toBe(1);
    expect(await ledgerRows(inbox)).toHaveLength(1);
  });

  it("a failure releases the key (the host delivers again and it runs); the last delivery says the host poisons it", async () => {
    const inbox = await newInbox("fnq");
    const runs = { count: 0 };
    const handler = idempotentQueueHandler<Order, { charged: number }, TransactionAction>(
      ledgerHandler(runs, () => true),
      { store: new TableIdempotencyStore(inbox), maxDequeueCount: 3 },
    );
    const order = { orderId: "o-3", amount: 1 };
    const logs: string[] = [];
    for (let dequeueCount = 1; dequeueCount <= 3; dequeueCount++) {
      await expect(handler(order, queueContext("m-3", dequeueCount, logs))).rejects.toThrow(/provider is down/);
    }
    // Every delivery ran the handler: a failure never marks the key done, nor leaves it claimed.
    expect(runs.count).toBe(3);
    expect(await ledgerRows(inbox)).toEqual([]);
    const warnings = logs.filter((line) => line.startsWith("warning:"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /dequeueCount 3, maxDequeueCount 3.*'orders-poison' now; its idempotency key was released, not marked done/,
    );
    // The copy an operator replays from the poison queue (a new message id) runs again, and succeeds.
    const replay = idempotentQueueHandler<Order, { charged: number }, TransactionAction>(ledgerHandler(runs), {
      store: new TableIdempotencyStore(inbox),
    });
    await replay(order, queueContext("m-3-replayed", 1));
    expect(await ledgerRows(inbox)).toHaveLength(1);
  });

  it("a claim left by a delivery whose host died is taken over by the next delivery of the message at once", async () => {
    const inbox = await newInbox("fnq");
    const store = new TableIdempotencyStore(inbox);
    // The dead host's claim: made for delivery 1, long enough that only the dequeue-count rule frees it.
    await store.claim({ key: "m-5", owner: "dead-host", messageId: "m-5", dequeueCount: 1, ttlInMs: 600_000 });
    const runs = { count: 0 };
    const handler = idempotentQueueHandler<Order, { charged: number }, TransactionAction>(ledgerHandler(runs), {
      store,
      whenInProgress: "reject",
    });
    expect(await handler({ orderId: "o-5", amount: 3 }, queueContext("m-5", 2))).toEqual({ charged: 3 });
    expect(runs.count).toBe(1);
  });

  it("refuses a context without queue trigger metadata, saying what to pass", async () => {
    const inbox = await newInbox("fnq");
    const handler = idempotentQueueHandler(async () => "ok", { store: new TableIdempotencyStore(inbox) });
    await expect(handler("x", new InvocationContext())).rejects.toThrow(/triggerMetadata.*app\.storageQueue/);
  });
});

describe("idempotentHttp (app.http)", () => {
  const post = (body: unknown, headers: Record<string, string>) =>
    new HttpRequest({
      method: "POST",
      url: "https://example.azurewebsites.net/api/payments?x=1",
      headers: { "content-type": "application/json", ...headers },
      body: { string: JSON.stringify(body) },
    });
  const context = () => new InvocationContext({ functionName: "createPayment" });
  const bodyOf = async (response: HttpResponseInit) => new HttpResponse(response).text();
  const headersOf = (response: HttpResponseInit) => new Headers(response.headers);

  it("runs once per (tenant, key); a retry gets the stored response, marked as replayed", async () => {
    const inbox = await newInbox("fnh");
    let runs = 0;
    const handler = idempotentHttp(
      async (request, _context, idempotency) => {
        runs += 1;
        const payment = (await request.json()) as { amount: number };
        return { status: 201, jsonBody: { paymentId: `p-${runs}`, amount: payment.amount, key: idempotency?.key } };
      },
      { store: new TableIdempotencyStore(inbox), tenant: (request) => request.headers.get("x-tenant")! },
    );
    const headers = { "idempotency-key": '"k-1"', "x-tenant": "contoso" };
    const first = (await handler(post({ amount: 5 }, headers), context())) as HttpResponseInit;
    const again = (await handler(post({ amount: 5 }, headers), context())) as HttpResponseInit;
    expect(runs).toBe(1);
    expect(first.status).toBe(201);
    expect(JSON.parse(await bodyOf(first))).toEqual({ paymentId: "p-1", amount: 5, key: "k-1" });
    expect(again.status).toBe(201);
    expect(await bodyOf(again)).toBe(await bodyOf(first));
    expect(headersOf(again).get("content-type")).toBe("application/json");
    expect(headersOf(again).get("idempotent-replayed")).toBe("true");
    expect(headersOf(first).get("idempotent-replayed")).toBeNull();
    // Another tenant's same key is its own request.
    await handler(post({ amount: 5 }, { ...headers, "x-tenant": "fabrikam" }), context());
    expect(runs).toBe(2);
  });

  it("answers 400 without a key, 422 for a key reused with another body, 409 for a concurrent duplicate", async () => {
    const inbox = await newInbox("fnh");
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let runs = 0;
    const handler = idempotentHttp(
      async (request) => {
        runs += 1;
        if (request.method === "POST" && ((await request.json()) as { slow?: boolean }).slow) await gate;
        return { status: 200, body: "done" };
      },
      { store: new TableIdempotencyStore(inbox), tenant: () => "t" },
    );
    const missing = (await handler(post({}, {}), context())) as HttpResponseInit;
    expect(missing.status).toBe(400);
    expect(headersOf(missing).get("content-type")).toBe("application/problem+json");
    expect(JSON.parse(await bodyOf(missing))).toMatchObject({ status: 400, title: "Idempotency-Key is missing" });
    const malformed = (await handler(post({}, { "idempotency-key": '"a", "b"' }), context())) as HttpResponseInit;
    expect(malformed.status).toBe(400);

    await handler(post({ amount: 1 }, { "idempotency-key": "k-2" }), context());
    const reused = (await handler(post({ amount: 2 }, { "idempotency-key": "k-2" }), context())) as HttpResponseInit;
    expect(reused.status).toBe(422);

    const slow = handler(post({ slow: true }, { "idempotency-key": "k-3" }), context());
    while (runs < 2) await new Promise((resolve) => setTimeout(resolve, 20));
    const duplicate = (await handler(
      post({ slow: true }, { "idempotency-key": "k-3" }),
      context(),
    )) as HttpResponseInit;
    expect(duplicate.status).toBe(409);
    expect(headersOf(duplicate).get("retry-after")).toBe("1");
    release();
    expect(((await slow) as HttpResponseInit).status).toBe(200);
    expect(runs).toBe(2);
    // A GET passes through untouched, key or not.
    const get = new HttpRequest({ method: "GET", url: "https://example/api/x", headers: {} });
    expect(((await handler(get, context())) as HttpResponseInit).status).toBe(200);
  });

  it("a 5xx or a throw releases the key: the retry runs again", async () => {
    const inbox = await newInbox("fnh");
    let runs = 0;
    const handler = idempotentHttp(
      async () => {
        runs += 1;
        if (runs === 1) return { status: 503, body: "try later" };
        if (runs === 2) throw new Error("boom");
        return new HttpResponse({ status: 201, body: "created" });
      },
      { store: new TableIdempotencyStore(inbox), tenant: () => "t" },
    );
    const headers = { "idempotency-key": "k-5" };
    expect(((await handler(post({}, headers), context())) as HttpResponseInit).status).toBe(503);
    await expect(handler(post({}, headers), context())).rejects.toThrow("boom");
    const third = (await handler(post({}, headers), context())) as HttpResponseInit;
    expect(third.status).toBe(201);
    const fourth = (await handler(post({}, headers), context())) as HttpResponseInit;
    expect(await bodyOf(fourth)).toBe("created");
    expect(runs).toBe(3);
  });
});
