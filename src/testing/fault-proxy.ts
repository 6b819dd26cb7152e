/**
 * A fault-injecting HTTP proxy to put between an SDK client and a storage endpoint (Azurite or a
 * real account over http). It works at the network level, so the real SDK pipeline, with its own
 * retries, sees exactly what it would see from a flaky network or a busy service:
 *
 * - `dropResponse`: forward the request, let the service apply it, then cut the connection before
 *   a byte of the response reaches the client (the "lost response" case);
 * - `serverBusy`: answer 503 ServerBusy without forwarding;
 * - `status`: answer any error status and service code without forwarding;
 * - `statusAfterApply`: forward, let the service apply it, then answer an error instead of the
 *   service's answer (a 500 OperationTimedOut or a 504 whose request was applied all the same);
 * - `delay`: wait, then forward (a fixed time, or one drawn around it: an Azure-like round trip);
 * - `hang`: never answer (optionally after forwarding), until the client gives up or the proxy closes:
 *   what a client-side time limit is for;
 * - `reset`: cut the connection without forwarding.
 *
 * With `throttling`, the proxy is also a model of the service's throttling (`throttling-model.ts`):
 * each partition and the account are served at a configured rate, and requests past it are
 * answered 503 ServerBusy (or 500 OperationTimedOut) as the service answers them. Rules are tried
 * first; a request no rule takes goes through the model.
 */
import { createServer, request as httpRequest, Agent, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { checkNumber } from "../internal/validate.js";
import {
  ThrottlingModelState,
  throttledAnswer,
  type ThrottlingModel,
  type ThrottlingModelOptions,
} from "./throttling-model.js";

/** What a rule does to a matching request. */
export type FaultAction =
  | {
      /** Forward the request, let the service apply it, then cut the client's connection before the response reaches it. */
      readonly type: "dropResponse";
    }
  | {
      /** Answer 503 ServerBusy without forwarding. */
      readonly type: "serverBusy";
      /** Sent as the `x-ms-retry-after-ms` header, in milliseconds; no header when absent. */
      readonly retryAfterInMs?: number;
    }
  | {
      /** Answer an error without forwarding. */
      readonly type: "status";
      /** The HTTP status, 400 to 599. */
      readonly statusCode: number;
      /** The service error code, sent as `x-ms-error-code` and in the body (XML, or JSON when the client asks for JSON). */
      readonly serviceCode: string;
    }
  | {
      /** Forward the request, let the service apply it, then answer this error instead of the service's answer. */
      readonly type: "statusAfterApply";
      /** The HTTP status, 400 to 599 (500 OperationTimedOut and 504 GatewayTimeout are the realistic ones). */
      readonly statusCode: number;
      /** The service error code, sent as `x-ms-error-code` and in the body. */
      readonly serviceCode: string;
    }
  | {
      /**
       * Never answer: the request stays open until the client aborts it or the proxy closes. The SDKs
       * have no client-side time limit of their own, so this is how to test one.
       */
      readonly type: "hang";
      /**
       * Forward the request first (the service applies it), then hold back its answer for ever.
       * @default false
       */
      readonly afterApply?: boolean;
    }
  | {
      /**
       * Wait, then forward: with `jitterInMs`, a round trip to a distant service
       * (`{ type: "delay", delayInMs: 10, jitterInMs: 3 }` is about Azure's from a nearby region).
       */
      readonly type: "delay";
      /** How long to wait before forwarding, in milliseconds (the mean, with `jitterInMs`). */
      readonly delayInMs: number;
      /**
       * Spread the wait uniformly over `delayInMs ± jitterInMs` (drawn from the proxy's `random`), as
       * a network's round trips are; at most `delayInMs`.
       * @default 0
       */
      readonly jitterInMs?: number;
    }
  | {
      /** Cut the connection without forwarding (the service never sees the request). */
      readonly type: "reset";
    };

/** The request a rule looks at. */
export interface FaultRequestInfo {
  /** `GET`, `PUT`, … */
  readonly method: string;
  /** Path and query, e.g. `/devstoreaccount1/locks/a?comp=lease`. */
  readonly path: string;
  /** Request headers, lower-cased names. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

/** A fault to inject: which requests, what to do, how often. */
export interface FaultRule {
  /** What to do to a matching request. */
  readonly action: FaultAction;
  /** Only requests with this method (or one of these). */
  readonly method?: string | readonly string[];
  /** Only requests whose path and query match. */
  readonly path?: RegExp;
  /** Only requests for which this returns true. */
  readonly when?: (request: FaultRequestInfo) => boolean;
  /**
   * The chance, from 0 to 1, that a matching request is hit.
   * @default 1
   */
  readonly probability?: number;
  /**
   * How many requests the rule hits before it retires.
   * @default Infinity
   */
  readonly times?: number;
}

/** One request the proxy saw, and what became of it. */
export interface ProxiedRequest extends Omit<FaultRequestInfo, "headers"> {
  /** The fault applied, `"throttled"` when the throttling model refused it, or `"forwarded"`. */
  readonly outcome: FaultAction["type"] | "throttled" | "forwarded";
  /** The status the service answered (for requests it saw: forwarded, dropped, replaced or held back), or the injected one. */
  readonly statusCode: number | undefined;
  /** With `delay`: how long this request was held, in milliseconds. */
  readonly delayedInMs?: number;
}

/** Options for {@link createFaultProxy}. */
export interface FaultProxyOptions {
  /** The endpoint to forward to, e.g. Azurite's `blobEndpoint` (`http://127.0.0.1:10000/devstoreaccount1`). */
  readonly target: string;
  /** Rules to start with; more can be added with {@link FaultProxy.addRule}. */
  readonly rules?: readonly FaultRule[];
  /**
   * The random source deciding probabilistic faults; pass {@link seededRandom} for repeatable runs.
   * @default Math.random
   */
  readonly random?: () => number;
  /**
   * Model the service's throttling: serve each partition (table partition, queue, blob) and the
   * account at these rates, and answer requests past them 503 ServerBusy as the service does.
   * `{}` models today's published targets (2,000 per partition, 20,000 per account, per second).
   * @default undefined (no throttling)
   */
  readonly throttling?: ThrottlingModelOptions;
}

/** A running fault proxy. */
export interface FaultProxy extends AsyncDisposable {
  /** The proxy's endpoint: its own origin plus the target's path. Give it to an SDK client. */
  readonly endpoint: string;
  /** Adds a rule; rules are tried in the order added and the first that fires wins. Returns a remover. */
  addRule(rule: FaultRule): () => void;
  /** Removes every rule: from now on every request is forwarded untouched. */
  clearRules(): void;
  /** Every request seen since the start or the last {@link FaultProxy.clearLog}. */
  readonly requests: readonly ProxiedRequest[];
  /** Forgets the request log. */
  clearLog(): void;
  /** The throttling model, when the proxy was started with `throttling`: its rates and what it counted. */
  readonly throttling: ThrottlingModel | undefined;
  /** Stops listening and closes every connection; resolves when done. */
  close(): Promise<void>;
}

interface LiveRule {
  readonly rule: FaultRule;
  remaining: number;
}

/**
 * Starts a fault-injecting proxy on a free loopback port in front of `target`.
 *
 * @example
 * ```ts
 * import { startAzurite, createFaultProxy, buildConnectionString } from "azure-storage-concurrency/testing";
 *
 * const azurite = await startAzurite();
 * const proxy = await createFaultProxy({ target: azurite.blobEndpoint! });
 * proxy.addRule({ method: "PUT", probability: 0.05, action: { type: "dropResponse" } });
 * const flakyConnectionString = buildConnectionString({ blobEndpoint: proxy.endpoint });
 * ```
 */
export async function createFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const target = new URL(options.target);
  if (target.protocol !== "http:") {
    throw new RangeError(
      `\`target\` must be an http:// endpoint (the proxy does not speak TLS), got ${target.protocol}`,
    );
  }
  const random = options.random ?? Math.random;
  const model =
    options.throttling === undefined ? undefined : new ThrottlingModelState({ random, ...options.throttling });
  const rules: LiveRule[] = [];
  const log: ProxiedRequest[] = [];
  // A fresh connection to the service for each request: a pooled one can be closed by the service
  // (its idle timeout) just as a request goes out on it, and the client would see a reset that no
  // rule asked for. On localhost a connection costs a fraction of a millisecond.
  const agent = new Agent({ keepAlive: false, maxSockets: 256 });

  const addRule = (rule: FaultRule) => {
    validateRule(rule);
    const live: LiveRule = { rule, remaining: rule.times ?? Infinity };
    rules.push(live);
    return () => {
      const index = rules.indexOf(live);
      if (index >= 0) rules.splice(index, 1);
    };
  };
  for (const rule of options.rules ?? []) addRule(rule);

  const pick = (info: FaultRequestInfo): FaultAction | undefined => {
    for (const live of rules) {
      const { rule } = live;
      if (live.remaining <= 0 || !matches(rule, info)) continue;
      if (random() >= (rule.probability ?? 1)) continue;
      live.remaining -= 1;
      return rule.action;
    }
    return undefined;
  };

  const server = createServer((req, res) => {
    const info: FaultRequestInfo = { method: req.method ?? "GET", path: req.url ?? "/", headers: req.headers };
    const action = pick(info);
    const record = (outcome: ProxiedRequest["outcome"], statusCode: number | undefined, delayedInMs?: number) =>
      log.push({
        method: info.method,
        path: info.path,
        outcome,
        statusCode,
        ...(delayedInMs === undefined ? {} : { delayedInMs }),
      });
    switch (action?.type) {
      case undefined:
        if (model) return throttle(model, req, res, target, agent, record);
        return forward(req, res, target, agent, (status) => record("forwarded", status));
      case "delay": {
        const jitter = action.jitterInMs ?? 0;
        const delayedInMs = Math.max(0, action.delayInMs + (random() * 2 - 1) * jitter);
        // Then as any other request: through the throttling model, when there is one.
        const after = model
          ? () => throttle(model, req, res, target, agent, (outcome, status) => record(outcome === "forwarded" ? "delay" : outcome, status, delayedInMs)) // prettier-ignore
          : () => forward(req, res, target, agent, (status) => record("delay", status, delayedInMs));
        return void setTimeout(after, delayedInMs);
      }
      case "dropResponse":
        return forward(req, res, target, agent, (status) => record("dropResponse", status), { answer: "drop" });
      case "statusAfterApply":
        return forward(req, res, target, agent, (status) => record("statusAfterApply", status), {
          answer: () => answerError(req, res, action.statusCode, action.serviceCode, "Injected by the fault proxy."),
        });
      case "hang":
        if (action.afterApply) {
          return forward(req, res, target, agent, (status) => record("hang", status), { answer: "hold" });
        }
        record("hang", undefined);
        return void req.resume();
      case "reset":
        record("reset", undefined);
        req.resume();
        return void req.socket.destroy();
      case "serverBusy":
        record("serverBusy", 503);
        return answerError(req, res, 503, "ServerBusy", "The server is busy (injected by the fault proxy).", {
          ...(action.retryAfterInMs === undefined ? {} : { "x-ms-retry-after-ms": String(action.retryAfterInMs) }),
        });
      case "status":
        record("status", action.statusCode);
        return answerError(req, res, action.statusCode, action.serviceCode, "Injected by the fault proxy.");
    }
  });
  // Clients' idle connections stay open well past any pause in a benchmark or a test (Node's default
  // of 5 s closed them between two races, and a request sent as one closed was reset).
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}${target.pathname.replace(/\/$/, "")}`;

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
      agent.destroy();
    }));

  return {
    endpoint,
    addRule,
    clearRules: () => void rules.splice(0, rules.length),
    get requests() {
      return log;
    },
    clearLog: () => void log.splice(0, log.length),
    throttling: model,
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** Puts a request no rule took through the throttling model: forwarded, or answered as the service refuses. */
function throttle(
  model: ThrottlingModelState,
  req: IncomingMessage,
  res: ServerResponse,
  target: URL,
  agent: Agent,
  record: (outcome: ProxiedRequest["outcome"], statusCode: number | undefined) => void,
): void {
  const decide = (body: Buffer | undefined) => {
    const request = { method: req.method ?? "GET", url: `${target.origin}${req.url ?? "/"}`, headers: req.headers };
    const decision = model.decide({ ...request, body: body?.toString("utf8") });
    const forwarded = body === undefined ? {} : { body };
    if (decision.kind === "admit")
      return forward(req, res, target, agent, (status) => record("forwarded", status), forwarded);
    const table = req.headers["dataserviceversion"] !== undefined;
    const { statusCode, headers, body: errorBody } = throttledAnswer(decision, req, table);
    const answer = () => {
      res.writeHead(statusCode, headers);
      res.end(errorBody);
    };
    if (decision.afterApply)
      return forward(req, res, target, agent, () => record("throttled", statusCode), { ...forwarded, answer });
    record("throttled", statusCode);
    if (body === undefined) req.resume();
    answer();
  };
  // A table insert's or transaction's PartitionKey is in its body: read it before deciding.
  if (req.method === "POST" && req.headers["dataserviceversion"] !== undefined) {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.once("end", () => decide(Buffer.concat(chunks)));
    return;
  }
  decide(undefined);
}

function forward(
  req: IncomingMessage,
  res: ServerResponse,
  target: URL,
  agent: Agent,
  done: (statusCode: number | undefined) => void,
  {
    answer = "pass",
    body,
  }: {
    /** What reaches the client: the service's answer, nothing (connection cut), nothing ever, or another answer. */
    answer?: "pass" | "drop" | "hold" | (() => void);
    /** The request body, when it was read already (else the request is piped through). */
    body?: Buffer;
  } = {},
): void {
  const headers: Record<string, string | string[] | undefined> = { ...req.headers, host: target.host };
  delete headers.connection;
  delete headers["keep-alive"];
  const upstream = httpRequest(
    {
      protocol: "http:",
      hostname: target.hostname,
      port: target.port,
      method: req.method,
      path: req.url,
      headers,
      agent,
    },
    (upstreamRes) => {
      done(upstreamRes.statusCode);
      if (answer !== "pass") {
        // The service has applied the request; read its answer fully, then lose it on the way back,
        // hold it back for ever, or answer something else.
        upstreamRes.resume();
        upstreamRes.once("end", () => {
          if (answer === "drop") req.socket.destroy();
          else if (typeof answer === "function") answer();
        });
        return;
      }
      const responseHeaders = { ...upstreamRes.headers };
      delete responseHeaders.connection;
      delete responseHeaders["keep-alive"];
      res.writeHead(upstreamRes.statusCode ?? 502, responseHeaders);
      upstreamRes.pipe(res);
    },
  );
  upstream.on("error", () => {
    done(undefined);
    req.socket.destroy();
  });
  if (body === undefined) req.pipe(upstream);
  else upstream.end(body);
}

function answerError(
  req: IncomingMessage,
  res: ServerResponse,
  statusCode: number,
  serviceCode: string,
  message: string,
  extraHeaders: Record<string, string> = {},
): void {
  req.resume();
  const wantsJson = /json/i.test(String(req.headers.accept ?? ""));
  const body = wantsJson
    ? JSON.stringify({ "odata.error": { code: serviceCode, message: { lang: "en-US", value: message } } })
    : `<?xml version="1.0" encoding="utf-8"?><Error><Code>${serviceCode}</Code><Message>${message}</Message></Error>`;
  res.writeHead(statusCode, {
    "content-type": wantsJson ? "application/json;odata=minimalmetadata;charset=utf-8" : "application/xml",
    "content-length": Buffer.byteLength(body),
    "x-ms-error-code": serviceCode,
    "x-ms-request-id": `fault-proxy-${Date.now()}`,
    ...extraHeaders,
  });
  res.end(body);
}

function matches(rule: FaultRule, info: FaultRequestInfo): boolean {
  if (rule.method !== undefined) {
    const methods = typeof rule.method === "string" ? [rule.method] : rule.method;
    if (!methods.some((m) => m.toUpperCase() === info.method)) return false;
  }
  if (rule.path && !rule.path.test(info.path)) return false;
  return rule.when ? rule.when(info) : true;
}

function validateRule(rule: FaultRule): void {
  const types = ["dropResponse", "serverBusy", "status", "statusAfterApply", "delay", "hang", "reset"];
  if (!rule || typeof rule !== "object" || !types.includes(rule.action?.type)) {
    throw new TypeError(`A fault rule needs \`action.type\`, one of ${types.join(", ")}.`);
  }
  if (rule.probability !== undefined) checkNumber("probability", rule.probability, { min: 0, max: 1 });
  if (rule.times !== undefined) checkNumber("times", rule.times, { min: 0, integer: true, allowInfinity: true });
  if (rule.action.type === "delay") {
    const delayInMs = checkNumber("action.delayInMs", rule.action.delayInMs, { min: 0 });
    if (rule.action.jitterInMs !== undefined)
      checkNumber("action.jitterInMs", rule.action.jitterInMs, { min: 0, max: delayInMs });
  }
  if (rule.action.type === "status" || rule.action.type === "statusAfterApply")
    checkNumber("action.statusCode", rule.action.statusCode, { min: 400, max: 599, integer: true });
}

/**
 * A small seeded random source (mulberry32), for repeatable fault patterns and tests.
 *
 * @example
 * ```ts
 * import { seededRandom } from "azure-storage-concurrency/testing";
 * const random = seededRandom(42);
 * random(); // the same sequence every run
 * ```
 */
export function seededRandom(seed: number): () => number {
  let state = checkNumber("seed", seed, { integer: true }) >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
