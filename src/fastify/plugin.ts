/**
 * The Fastify plugin: the same `Idempotency-Key` handling as the Express middleware, in Fastify's
 * hooks (https://fastify.dev/docs/latest/Reference/Hooks/):
 *
 * - `preHandler` (after the body is parsed, so the fingerprint sees it) claims the request's
 *   `(tenant, key)`: a replay or a problem (400, 409, 422) is sent from there, and the route does
 *   not run;
 * - `onSend` gets the route's serialized response (an error's too: Fastify's error handler sends
 *   through it) and keeps it with the key's done record before it is sent (a 5xx releases the key);
 *   a stream is read to its end first. A failure to keep it fails the request (Fastify's `onError`);
 * - `onResponse` and `onRequestAbort` release the key of a request that never reached `onSend`.
 *
 * The plugin skips Fastify's encapsulation (`Symbol.for("skip-override")`, as `fastify-plugin`
 * does), so its hooks apply to the context it is registered in: register it in the root for every
 * route, or inside a plugin for that plugin's routes only. Nothing of Fastify is loaded at run time.
 */
import type { FastifyPluginCallback, FastifyReply, FastifyRequest } from "fastify";
import {
  headerPairs,
  IdempotencyKeys,
  type CapturedHttpResponse,
  type IdempotencyKeyOptions,
  type IdempotencyOfRequest,
  type KeyedRequest,
} from "../idempotency/internal.js";

type Run = Extract<KeyedRequest, { kind: "run" }>;
const runs = new WeakMap<FastifyRequest, Run>();

/** The options of {@link fastifyIdempotency}: as for every HTTP integration, with Fastify's request. */
export type FastifyIdempotencyOptions = IdempotencyKeyOptions<FastifyRequest>;

/**
 * The key and claim signal of a request the plugin let through with a key (undefined for a
 * request without one, or of another method).
 *
 * @example
 * ```ts
 * import type { FastifyInstance } from "fastify";
 * import { idempotencyOf } from "azure-storage-concurrency/fastify";
 *
 * declare const app: FastifyInstance;
 * declare function refund(orderId: string, signal: AbortSignal | undefined): Promise<string>;
 * app.post("/refunds", async (request, reply) => {
 *   const idempotency = idempotencyOf(request);
 *   // Aborted if another instance took the key over: stop before the next external effect.
 *   const refundId = await refund((request.body as { orderId: string }).orderId, idempotency?.abortSignal);
 *   return reply.code(201).send({ refundId, key: idempotency?.key });
 * });
 * ```
 */
export function idempotencyOf(request: FastifyRequest): IdempotencyOfRequest | undefined {
  const run = runs.get(request);
  return run && { key: run.key, abortSignal: run.abortSignal };
}

/**
 * `Idempotency-Key` handling for Fastify 5: each POST or PATCH with a key runs once per tenant and
 * key, and its retries get its response (replayed with `Idempotent-Replayed: true`); 400 for a
 * missing or malformed key, 422 for a key reused with another request, 409 while the first request
 * with the key still runs.
 *
 * @example
 * ```ts
 * import Fastify from "fastify";
 * import { TableClient } from "@azure/data-tables";
 * import { TableIdempotencyStore } from "azure-storage-concurrency/idempotency";
 * import { fastifyIdempotency } from "azure-storage-concurrency/fastify";
 *
 * const app = Fastify();
 * await app.register(fastifyIdempotency, {
 *   store: new TableIdempotencyStore(TableClient.fromConnectionString(connectionString, "idempotencykeys")),
 *   tenant: (request) => String(request.headers["x-tenant-id"]), // from the verified identity in a real app
 * });
 * app.post("/payments", async (request, reply) => reply.code(201).send({ paymentId: crypto.randomUUID() }));
 * ```
 */
export const fastifyIdempotency: FastifyPluginCallback<FastifyIdempotencyOptions> = Object.assign(
  (
    fastify: Parameters<FastifyPluginCallback<FastifyIdempotencyOptions>>[0],
    options: FastifyIdempotencyOptions,
    done: (error?: Error) => void,
  ) => {
    let keys: IdempotencyKeys<FastifyRequest>;
    try {
      keys = new IdempotencyKeys<FastifyRequest>(options, (request) => ({
        method: request.method,
        url: request.url,
        body: request.body,
      }));
    } catch (error) {
      done(error as Error);
      return;
    }
    fastify.addHook("preHandler", async (request: FastifyRequest, reply: FastifyReply) => {
      const decided = await keys.begin(request, request.method, request.headers["idempotency-key"]);
      if (decided.kind === "pass") return;
      if (decided.kind === "respond") return send(reply, decided.response);
      runs.set(request, decided);
    });
    fastify.addHook("onSend", async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
      const run = runs.get(request);
      if (!run) return payload;
      runs.delete(request);
      const body = await bytesOf(payload);
      await run.finish({ status: reply.statusCode, headers: headerPairs(reply.getHeaders()), body });
      return body;
    });
    const abandon = async (request: FastifyRequest) => {
      const run = runs.get(request);
      if (!run) return;
      runs.delete(request);
      await run.abandon(new Error("The request ended before its response was sent."));
    };
    fastify.addHook("onResponse", abandon);
    fastify.addHook("onRequestAbort", abandon);
    done();
  },
  {
    [Symbol.for("skip-override")]: true,
    [Symbol.for("fastify.display-name")]: "azure-storage-concurrency-idempotency",
  },
);

function send(reply: FastifyReply, response: CapturedHttpResponse): FastifyReply {
  const grouped = new Map<string, string[]>();
  for (const [name, value] of response.headers) grouped.set(name, [...(grouped.get(name) ?? []), value]);
  reply.code(response.status);
  for (const [name, values] of grouped) reply.header(name, values.length === 1 ? values[0]! : values);
  return reply.send(Buffer.from(response.body));
}

/** The bytes of an `onSend` payload: a string, a Buffer, a stream (read to its end) or nothing. */
async function bytesOf(payload: unknown): Promise<Buffer> {
  if (payload === undefined || payload === null) return Buffer.alloc(0);
  if (typeof payload === "string") return Buffer.from(payload, "utf8");
  if (payload instanceof Uint8Array) return Buffer.from(payload);
  if (typeof (payload as AsyncIterable<unknown>)[Symbol.asyncIterator] === "function") {
    const chunks: Buffer[] = [];
    for await (const chunk of payload as AsyncIterable<unknown>)
      chunks.push(typeof chunk === "string" ? Buffer.from(chunk, "utf8") : Buffer.from(chunk as Uint8Array));
    return Buffer.concat(chunks);
  }
  throw new TypeError(`An onSend payload of type ${typeof payload} cannot be kept with an idempotency key.`);
}
