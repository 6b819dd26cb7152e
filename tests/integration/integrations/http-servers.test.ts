/**
 * The Express middleware and the Fastify plugin in real servers on loopback, against Azurite
 * tables, driven with `fetch`: one route that counts its runs and writes a ledger row per run, so a
 * run too many is seen in the table, not only in a counter. Each case runs on both frameworks.
 */
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import express from "express";
import Fastify, { type FastifyInstance } from "fastify";
import type { TableClient } from "@azure/data-tables";
import { TableIdempotencyStore } from "../../../src/idempotency/index.js";
import { expressIdempotency, idempotencyOf as expressKeyOf } from "../../../src/express/index.js";
import { fastifyIdempotency, idempotencyOf as fastifyKeyOf } from "../../../src/fastify/index.js";
import { newInbox } from "../queue/consumer-support.js";

interface App {
  readonly url: string;
  readonly runs: () => number;
  readonly ledger: TableClient;
  /** Lets the slow route (body `{ slow: true }`) finish. */
  readonly release: () => void;
  close(): Promise<void>;
}

interface Route {
  runs: number;
  release: () => void;
  gate: Promise<void>;
}

function route(): Route {
  const r = { runs: 0 } as Route;
  r.gate = new Promise<void>((resolve) => (r.release = resolve));
  return r;
}

/** The route's work: a ledger row per run (what must happen once), then its answer. */
async function work(
  r: Route,
  ledger: TableClient,
  body: { amount?: number; slow?: boolean; fail?: boolean; missing?: boolean },
) {
  r.runs += 1;
  if (body.slow) await r.gate;
  if (body.fail) return { status: 500, json: { error: "database unavailable" } };
  if (body.missing) return { status: 404, json: { error: "no such account" } };
  await ledger.createEntity({ partitionKey: "ledger", rowKey: `run-${r.runs}`, amount: body.amount ?? 0 });
  return { status: 201, json: { paymentId: `p-${r.runs}`, amount: body.amount } };
}

/** Options beside the store and the tenant, as both frameworks take them (the request typed loosely). */
type Extra = Record<string, unknown>;

async function expressApp(extra: Extra = {}): Promise<App> {
  const inbox = await newInbox("http");
  const ledger = await newInbox("ledger");
  const r = route();
  const app = express();
  app.use(express.json());
  app.use(
    expressIdempotency<express.Request>({
      store: new TableIdempotencyStore(inbox),
      tenant: (req) => req.header("x-tenant") ?? "anonymous",
      ...extra,
    }),
  );
  const payments = async (req: express.Request, res: express.Response) => {
    const { status, json } = await work(r, ledger, req.body as { amount?: number });
    res
      .status(status)
      .set("x-key-seen", expressKeyOf(req)?.key ?? "none")
      .cookie("session", "secret")
      .json(json);
  };
  app.post("/payments", payments);
  app.put("/payments", payments);
  app.patch("/payments", payments);
  app.post("/stream", (req, res) => {
    r.runs += 1;
    res.writeHead(200, { "content-type": "text/plain" });
    res.write("part one, ");
    res.end("part two");
  });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    runs: () => r.runs,
    ledger,
    release: r.release,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function fastifyApp(extra: Extra = {}): Promise<App> {
  const inbox = await newInbox("http");
  const ledger = await newInbox("ledger");
  const r = route();
  const app: FastifyInstance = Fastify();
  await app.register(fastifyIdempotency, {
    store: new TableIdempotencyStore(inbox),
    tenant: (request) => (request.headers["x-tenant"] as string | undefined) ?? "anonymous",
    ...extra,
  });
  for (const method of ["POST", "PUT", "PATCH"] as const) {
    app.route({
      method,
      url: "/payments",
      handler: async (request, reply) => {
        const { status, json } = await work(r, ledger, request.body as { amount?: number });
        return reply
          .code(status)
          .header("x-key-seen", fastifyKeyOf(request)?.key ?? "none")
          .header("set-cookie", "session=secret")
          .send(json);
      },
    });
  }
  app.post("/stream", async (_request, reply) => {
    r.runs += 1;
    const { Readable } = await import("node:stream");
    return reply.type("text/plain").send(Readable.from(["part one, ", "part two"]));
  });
  await app.listen({ port: 0, host: "127.0.0.1" });
  return {
    url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
    runs: () => r.runs,
    ledger,
    release: r.release,
    close: () => app.close(),
  };
}

async function ledgerRows(ledger: TableClient): Promise<number> {
  let n = 0;
  for await (const _ of ledger.listEntities({ queryOptions: { filter: "PartitionKey eq 'ledger'" } })) n += 1;
  return n;
}

const post = (url: string, body: unknown, headers: Record<string, string> = {}, method = "POST") =>
  fetch(url, {
    method,
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });

describe.each([
  ["Express", expressApp],
  ["Fastify", fastifyApp],
])("%s idempotency keys on loopback", (_name, start) => {
  let app: App;
  beforeEach(async () => {
    app = await start();
  });
  afterEach(async () => {
    app.release();
    await app.close();
  });

  it("runs a keyed POST once; the retry gets the same status, headers and body, without the cookie, marked replayed", async () => {
    const headers = { "idempotency-key": '"pay-1"', "x-tenant": "contoso" };
    const first = await post(`${app.url}/payments`, { amount: 5 }, headers);
    const firstBody = await first.text();
    const again = await post(`${app.url}/payments`, { amount: 5 }, headers);
    expect(app.runs()).toBe(1);
    expect(await ledgerRows(app.ledger)).toBe(1);
    expect(first.status).toBe(201);
    expect(JSON.parse(firstBody)).toEqual({ paymentId: "p-1", amount: 5 });
    expect(first.headers.get("x-key-seen")).toBe("pay-1");
    expect(first.headers.get("set-cookie")).toMatch(/session=secret/);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    expect(again.status).toBe(201);
    expect(await again.text()).toBe(firstBody);
    expect(again.headers.get("x-key-seen")).toBe("pay-1");
    expect(again.headers.get("content-type")).toMatch(/application\/json/);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("set-cookie")).toBeNull();
  });

  it("scopes keys by tenant: the same key from another tenant is another request", async () => {
    await post(`${app.url}/payments`, { amount: 5 }, { "idempotency-key": "k", "x-tenant": "contoso" });
    const other = await post(`${app.url}/payments`, { amount: 5 }, { "idempotency-key": "k", "x-tenant": "fabrikam" });
    expect(other.headers.get("idempotent-replayed")).toBeNull();
    expect(app.runs()).toBe(2);
    expect(await ledgerRows(app.ledger)).toBe(2);
  });

  it("answers 400 for a missing or malformed key and 422 for a key reused with another body, without running", async () => {
    const missing = await post(`${app.url}/payments`, { amount: 5 });
    expect(missing.status).toBe(400);
    expect(missing.headers.get("content-type")).toBe("application/problem+json");
    expect(await missing.json()).toMatchObject({ status: 400, title: "Idempotency-Key is missing" });
    const malformed = await post(`${app.url}/payments`, { amount: 5 }, { "idempotency-key": "two words" });
    expect(malformed.status).toBe(400);
    await post(`${app.url}/payments`, { amount: 5 }, { "idempotency-key": "k-2" });
    const reused = await post(`${app.url}/payments`, { amount: 6 }, { "idempotency-key": "k-2" });
    expect(reused.status).toBe(422);
    expect(app.runs()).toBe(1);
  });

  it("answers 409 with Retry-After to a duplicate that arrives while the first runs; a retry after it gets the answer", async () => {
    const headers = { "idempotency-key": "k-3" };
    const first = post(`${app.url}/payments`, { amount: 7, slow: true }, headers);
    while (app.runs() < 1) await new Promise((resolve) => setTimeout(resolve, 20));
    const duplicate = await post(`${app.url}/payments`, { amount: 7, slow: true }, headers);
    expect(duplicate.status).toBe(409);
    expect(duplicate.headers.get("retry-after")).toBe("1");
    app.release();
    expect((await first).status).toBe(201);
    const retry = await post(`${app.url}/payments`, { amount: 7, slow: true }, headers);
    expect(retry.status).toBe(201);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(app.runs()).toBe(1);
    expect(await ledgerRows(app.ledger)).toBe(1);
  });

  it("a 5xx answer is sent but not kept: the retry runs again", async () => {
    const headers = { "idempotency-key": "k-4" };
    const failed = await post(`${app.url}/payments`, { amount: 1, fail: true }, headers);
    expect(failed.status).toBe(500);
    const retry = await post(`${app.url}/payments`, { amount: 1, fail: true }, headers);
    expect(retry.status).toBe(500);
    expect(retry.headers.get("idempotent-replayed")).toBeNull();
    expect(app.runs()).toBe(2);
  });

  it("keeps a response written in parts (a stream) whole", async () => {
    const headers = { "idempotency-key": "k-5" };
    const first = await post(`${app.url}/stream`, {}, headers);
    expect(await first.text()).toBe("part one, part two");
    const again = await post(`${app.url}/stream`, {}, headers);
    expect(await again.text()).toBe("part one, part two");
    expect(again.headers.get("content-type")).toMatch(/text\/plain/);
    expect(app.runs()).toBe(1);
  });

  it("lets GET requests through untouched", async () => {
    const response = await fetch(`${app.url}/payments`, { headers: { "idempotency-key": "k" } });
    expect(response.status).toBe(404);
  });
});

describe.each([
  ["Express", expressApp],
  ["Fastify", fastifyApp],
])("%s idempotency keys with options set", (_name, start) => {
  let app: App;
  beforeEach(async () => {
    app = await start({
      whenInProgress: "wait",
      waitTimeoutInMs: 20_000,
      required: false,
      methods: ["POST", "PUT"],
      keepResponse: (status: number) => status === 201,
      fingerprint: (request: { body?: { amount?: number } }) => request.body?.amount,
      maxKeyLength: 8,
    });
  });
  afterEach(async () => {
    app.release();
    await app.close();
  });

  it('whenInProgress "wait": a duplicate that arrives while the first runs waits and gets its response', async () => {
    const headers = { "idempotency-key": "w-1" };
    const first = post(`${app.url}/payments`, { amount: 7, slow: true }, headers);
    while (app.runs() < 1) await new Promise((resolve) => setTimeout(resolve, 20));
    const duplicate = post(`${app.url}/payments`, { amount: 7, slow: true }, headers);
    await new Promise((resolve) => setTimeout(resolve, 300)); // the duplicate is waiting, not refused
    app.release();
    const [a, b] = await Promise.all([first, duplicate]);
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(await b.json()).toEqual(await a.json());
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    expect(app.runs()).toBe(1);
    expect(await ledgerRows(app.ledger)).toBe(1);
  });

  it("required: false runs a request without a key, every time, as if there were no middleware", async () => {
    expect((await post(`${app.url}/payments`, { amount: 1 })).status).toBe(201);
    expect((await post(`${app.url}/payments`, { amount: 1 })).status).toBe(201);
    expect(app.runs()).toBe(2);
  });

  it("methods: PUT is guarded, PATCH passes through with its key", async () => {
    const headers = { "idempotency-key": "m-1" };
    await post(`${app.url}/payments`, { amount: 2 }, headers, "PUT");
    const put = await post(`${app.url}/payments`, { amount: 2 }, headers, "PUT");
    expect(put.headers.get("idempotent-replayed")).toBe("true");
    expect(app.runs()).toBe(1);
    await post(`${app.url}/payments`, { amount: 2 }, { "idempotency-key": "m-2" }, "PATCH");
    const patch = await post(`${app.url}/payments`, { amount: 2 }, { "idempotency-key": "m-2" }, "PATCH");
    expect(patch.headers.get("idempotent-replayed")).toBeNull();
    expect(patch.headers.get("x-key-seen")).toBe("none");
    expect(app.runs()).toBe(3);
  });

  it("keepResponse: a 404 it does not keep releases the key, and the retry runs again; a 201 is kept", async () => {
    const headers = { "idempotency-key": "r-1" };
    expect((await post(`${app.url}/payments`, { amount: 3, missing: true }, headers)).status).toBe(404);
    const retry = await post(`${app.url}/payments`, { amount: 3 }, headers);
    expect(retry.status).toBe(201);
    expect(retry.headers.get("idempotent-replayed")).toBeNull();
    const again = await post(`${app.url}/payments`, { amount: 3 }, headers);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(app.runs()).toBe(2);
    expect(await ledgerRows(app.ledger)).toBe(1);
  });

  it("fingerprint: a retry that differs only outside the fingerprint replays; another amount gets 422", async () => {
    const headers = { "idempotency-key": "f-1" };
    await post(`${app.url}/payments`, { amount: 4, note: "first" }, headers);
    const sameAmount = await post(`${app.url}/payments`, { amount: 4, note: "second" }, headers);
    expect(sameAmount.status).toBe(201);
    expect(sameAmount.headers.get("idempotent-replayed")).toBe("true");
    const otherAmount = await post(`${app.url}/payments`, { amount: 5 }, headers);
    expect(otherAmount.status).toBe(422);
    expect(app.runs()).toBe(1);
  });

  it("maxKeyLength: a longer key gets 400 and does not run", async () => {
    const response = await post(`${app.url}/payments`, { amount: 1 }, { "idempotency-key": "123456789" });
    expect(response.status).toBe(400);
    expect(app.runs()).toBe(0);
  });
});
