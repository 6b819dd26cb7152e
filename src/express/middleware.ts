/**
 * The Express middleware: claims the request's `(tenant, Idempotency-Key)` before the route runs
 * (`IdempotencyKeys`, in `idempotency/http-keys.ts`, holds the rules and the draft they follow),
 * then holds the route's response back until it is kept with the key's done record:
 *
 * - `res.writeHead`, `res.write` and `res.end` are replaced on this one response while the route
 *   runs, so that whatever the route uses (`res.json`, `res.send`, a piped stream) is collected;
 * - at `res.end` the collected response is kept (or the key released: a 5xx by default), and only
 *   then sent, with the original functions back in place. A retry that arrives after the send
 *   therefore always finds the key done; one that arrives before gets 409 (or waits);
 * - the client going away before the route answered releases the key; a failure to keep the
 *   response (the store unreachable, the claim lost) goes to Express's error handling (`next(err)`).
 *
 * Body fingerprint: `req.body` as a body parser left it, so mount `express.json()` (or another
 * parser) before this middleware; without one, a reused key with another body is not recognised.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import {
  headerPairs,
  IdempotencyKeys,
  type CapturedHttpResponse,
  type IdempotencyKeyOptions,
  type IdempotencyOfRequest,
  type KeyedRequest,
} from "../idempotency/internal.js";

/** The middleware {@link expressIdempotency} returns: `app.use(…)` or a route's handler list takes it. */
export type ExpressIdempotencyMiddleware<Req extends IncomingMessage = IncomingMessage> = (
  req: Req,
  res: ServerResponse,
  next: (error?: unknown) => void,
) => void;

const running = new WeakMap<IncomingMessage, IdempotencyOfRequest>();

/**
 * The key and claim signal of a request the middleware let through with a key (undefined for a
 * request without one, or of another method).
 *
 * @example
 * ```ts
 * import type { Express } from "express";
 * import { idempotencyOf } from "azure-storage-concurrency/express";
 *
 * declare const app: Express;
 * declare function refund(orderId: string, signal: AbortSignal | undefined): Promise<string>;
 * app.post("/refunds", async (req, res) => {
 *   const idempotency = idempotencyOf(req);
 *   // Aborted if another instance took the key over: stop before the next external effect.
 *   const refundId = await refund((req.body as { orderId: string }).orderId, idempotency?.abortSignal);
 *   res.status(201).json({ refundId, key: idempotency?.key });
 * });
 * ```
 */
export function idempotencyOf(req: IncomingMessage): IdempotencyOfRequest | undefined {
  return running.get(req);
}

/**
 * `Idempotency-Key` handling for Express: each POST or PATCH with a key runs once per tenant and
 * key, and its retries get its response (replayed with `Idempotent-Replayed: true`); 400 for a
 * missing or malformed key, 422 for a key reused with another request, 409 while the first request
 * with the key still runs. `Req` is your request type (Express's `Request`), for `tenant`.
 *
 * @example
 * ```ts
 * import express from "express";
 * import { TableClient } from "@azure/data-tables";
 * import { TableIdempotencyStore } from "azure-storage-concurrency/idempotency";
 * import { expressIdempotency } from "azure-storage-concurrency/express";
 *
 * const app = express();
 * app.use(express.json());
 * app.use(
 *   expressIdempotency<express.Request>({
 *     store: new TableIdempotencyStore(TableClient.fromConnectionString(connectionString, "idempotencykeys")),
 *     tenant: (req) => String(req.headers["x-tenant-id"]), // from the verified identity in a real app
 *   }),
 * );
 * app.post("/payments", async (req, res) => {
 *   res.status(201).json({ paymentId: crypto.randomUUID(), amount: req.body.amount });
 * });
 * ```
 */
export function expressIdempotency<Req extends IncomingMessage = IncomingMessage>(
  options: IdempotencyKeyOptions<Req>,
): ExpressIdempotencyMiddleware<Req> {
  const keys = new IdempotencyKeys<Req>(options, (req) => ({
    method: req.method,
    url: (req as { originalUrl?: string }).originalUrl ?? req.url,
    body: (req as { body?: unknown }).body,
  }));
  return (req, res, next) => {
    keys.begin(req, req.method ?? "GET", req.headers["idempotency-key"]).then(
      (decided) => handle(decided, req, res, next),
      (error: unknown) => next(error),
    );
  };
}

function handle(decided: KeyedRequest, req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) {
  if (decided.kind === "pass") return next();
  if (decided.kind === "respond") return send(res, decided.response);
  running.set(req, { key: decided.key, abortSignal: decided.abortSignal });
  let answered = false;
  const restore = collect(res, (captured) => {
    answered = true;
    decided.finish(captured).then(
      () => res.end(Buffer.from(captured.body)),
      (error: unknown) => next(error),
    );
  });
  res.once("close", () => {
    if (answered) return;
    restore();
    void decided.abandon(new Error("The client went away before the route answered."));
  });
  next();
}

/** Sends a replay or a problem. */
function send(res: ServerResponse, response: CapturedHttpResponse): void {
  res.statusCode = response.status;
  const grouped = new Map<string, string[]>();
  for (const [name, value] of response.headers) grouped.set(name, [...(grouped.get(name) ?? []), value]);
  for (const [name, values] of grouped) res.setHeader(name, values.length === 1 ? values[0]! : values);
  res.setHeader("content-length", response.body.length);
  res.end(Buffer.from(response.body));
}

type WriteCallback = (error?: Error | null) => void;

/**
 * Collects what the route writes to `res` instead of sending it; `ended` gets it at `res.end`
 * (the original functions are back in place by then). Returns a function that puts them back.
 */
function collect(res: ServerResponse, ended: (captured: CapturedHttpResponse) => void): () => void {
  // What the response had as its own properties (another middleware's wrappers), put back as they were.
  const names = ["writeHead", "write", "end", "flushHeaders"] as const;
  const own = names.map((name) => [name, Object.getOwnPropertyDescriptor(res, name)] as const);
  const restore = () => {
    for (const [name, descriptor] of own) {
      if (descriptor) Object.defineProperty(res, name, descriptor);
      else delete (res as unknown as Record<string, unknown>)[name];
    }
  };
  const chunks: Buffer[] = [];
  const add = (chunk: unknown, encoding: unknown) => {
    if (chunk === undefined || chunk === null || typeof chunk === "function") return;
    chunks.push(
      typeof chunk === "string"
        ? Buffer.from(chunk, typeof encoding === "string" ? (encoding as BufferEncoding) : "utf8")
        : Buffer.from(chunk as Uint8Array),
    );
  };
  const patched = {
    writeHead(status: number, ...rest: unknown[]) {
      res.statusCode = status;
      if (typeof rest[0] === "string") res.statusMessage = rest.shift() as string;
      const headers = rest[0];
      if (Array.isArray(headers)) {
        // [name, value, name, value] or [[name, value], …]
        const flat: unknown[] = headers.flat();
        for (let i = 0; i + 1 < flat.length; i += 2) res.appendHeader(String(flat[i]), String(flat[i + 1]));
      } else if (headers && typeof headers === "object") {
        for (const [name, value] of Object.entries(headers as OutgoingHttpHeaders))
          if (value !== undefined) res.setHeader(name, value);
      }
      return res;
    },
    write(chunk: unknown, encoding?: unknown, callback?: unknown) {
      add(chunk, encoding);
      const cb = (typeof encoding === "function" ? encoding : callback) as WriteCallback | undefined;
      if (cb) queueMicrotask(() => cb());
      return true;
    },
    end(chunk?: unknown, encoding?: unknown, callback?: unknown) {
      add(chunk, encoding);
      const cb = [chunk, encoding, callback].find((a) => typeof a === "function") as (() => void) | undefined;
      restore();
      ended({ status: res.statusCode, headers: headerPairs(res.getHeaders()), body: Buffer.concat(chunks) });
      if (cb) res.once("finish", cb);
      return res;
    },
    flushHeaders() {
      // Held back with the body.
    },
  };
  Object.assign(res, patched);
  return restore;
}
