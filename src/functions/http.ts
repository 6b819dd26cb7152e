/**
 * Azure Functions HTTP triggers (Node.js v4 programming model) keyed by an `Idempotency-Key`
 * header: the handler runs once per tenant and key, and its response is kept with the key's done
 * record and returned again to every retry (with `Idempotent-Replayed: true`). The rules (400, 409,
 * 422, which responses are kept) are those of every HTTP integration: `idempotency/http-keys.ts`,
 * after draft-ietf-httpapi-idempotency-key-header-06.
 *
 * The handler's response (an `HttpResponseInit` or an `HttpResponse`; `jsonBody`, a string, bytes
 * or a stream) is read to its end and returned as bytes with its headers. Its cookies go to the
 * first caller only: they are not kept (a session cookie is a secret, and the record is plain text).
 * The default fingerprint reads the body from `request.clone()` (from @azure/functions 4.2.0), so
 * the handler can still read it.
 */
import type { HttpHandler, HttpRequest, HttpResponse, HttpResponseInit, InvocationContext } from "@azure/functions";
import {
  headerPairs,
  IdempotencyKeys,
  type CapturedHttpResponse,
  type IdempotencyKeyOptions,
  type IdempotencyOfRequest,
} from "../idempotency/internal.js";

/**
 * The handler {@link idempotentHttp} wraps: an `HttpHandler`, given also the request's key and
 * claim signal (undefined for a request without a key, or of another method).
 */
export type IdempotentHttpHandler = (
  request: HttpRequest,
  context: InvocationContext,
  idempotency: IdempotencyOfRequest | undefined,
) => Promise<HttpResponseInit | HttpResponse> | HttpResponseInit | HttpResponse;

/** The options of {@link idempotentHttp}: as for every HTTP integration, with the Functions request. */
export type IdempotentHttpOptions = IdempotencyKeyOptions<HttpRequest>;

/**
 * Wraps an HTTP trigger's handler with `Idempotency-Key` handling: a POST or PATCH with a key
 * runs once per tenant and key, and its retries get its response; 400 for a missing or malformed
 * key, 422 for a key reused with another request, 409 while the first request still runs.
 *
 * @example
 * ```ts
 * import { app } from "@azure/functions";
 * import { TableClient } from "@azure/data-tables";
 * import { TableIdempotencyStore } from "azure-storage-concurrency/idempotency";
 * import { idempotentHttp } from "azure-storage-concurrency/functions";
 *
 * const store = new TableIdempotencyStore(TableClient.fromConnectionString(process.env.AzureWebJobsStorage!, "idempotencykeys"));
 * app.http("createPayment", {
 *   methods: ["POST"],
 *   handler: idempotentHttp(
 *     async (request) => ({ status: 201, jsonBody: { paymentId: crypto.randomUUID(), ...(await request.json() as object) } }),
 *     // The caller's identity as App Service authentication passes it on (x-ms-client-principal).
 *     { store, tenant: (request) => request.user?.id ?? "anonymous" },
 *   ),
 * });
 * ```
 */
export function idempotentHttp(handler: IdempotentHttpHandler, options: IdempotentHttpOptions): HttpHandler {
  if (typeof handler !== "function")
    throw new TypeError("`handler` must be a function (request, context) => response.");
  const keys = new IdempotencyKeys<HttpRequest>(options, async (request) => ({
    method: request.method,
    url: request.url,
    body: await request.clone().text(),
  }));
  return async (request, context) => {
    const decided = await keys.begin(request, request.method, request.headers.get("idempotency-key"));
    if (decided.kind === "pass") return handler(request, context, undefined);
    if (decided.kind === "respond") return toResponseInit(decided.response);
    let result: HttpResponseInit | HttpResponse;
    let captured: CapturedHttpResponse;
    try {
      result = await handler(request, context, { key: decided.key, abortSignal: decided.abortSignal });
      captured = await captureResponse(result);
    } catch (error) {
      await decided.abandon(error);
      throw error;
    }
    const sent = await decided.finish(captured);
    return { ...toResponseInit(sent), ...(result.cookies ? { cookies: result.cookies } : {}) };
  };
}

function toResponseInit(response: CapturedHttpResponse): HttpResponseInit {
  return {
    status: response.status,
    headers: response.headers.map(([n, v]): [string, string] => [n, v]),
    body: Buffer.from(response.body),
  };
}

/** Reads a handler's response to its end: status, headers, body bytes (what the worker would send). */
async function captureResponse(result: HttpResponseInit | HttpResponse | undefined): Promise<CapturedHttpResponse> {
  if (result === undefined || result === null) return { status: 200, headers: [], body: new Uint8Array() };
  if (typeof (result as HttpResponse).arrayBuffer === "function") {
    const response = result as HttpResponse;
    const body = new Uint8Array(await response.arrayBuffer());
    return { status: response.status, headers: headerPairs(response.headers as Iterable<[string, string]>), body };
  }
  const init = result as HttpResponseInit;
  const headers = new Headers(init.headers);
  let bodyInit: unknown = init.body;
  if (init.jsonBody !== undefined) {
    bodyInit = JSON.stringify(init.jsonBody);
    if (!headers.has("content-type")) headers.set("content-type", "application/json");
  }
  // The Fetch API's Response reads every body form the worker accepts, and types a string as text/plain.
  const read = new Response(bodyInit as ConstructorParameters<typeof Response>[0]);
  const type = read.headers.get("content-type");
  if (type && !headers.has("content-type")) headers.set("content-type", type);
  const body = new Uint8Array(await read.arrayBuffer());
  return { status: init.status ?? 200, headers: headerPairs(headers), body };
}
