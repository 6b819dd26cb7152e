/**
 * Idempotency keys for HTTP, the framework-neutral part of the Express and Fastify middleware and
 * of the Azure Functions HTTP wrapper: a request with an `Idempotency-Key` header is run once per
 * (tenant, key) through {@link idempotent}, its response kept with the key's done record, and sent
 * again to every retry of the same request. draft-ietf-httpapi-idempotency-key-header-06
 * (https://datatracker.ietf.org/doc/draft-ietf-httpapi-idempotency-key-header/) is the anchor:
 *
 * - a missing key on a method that needs one: 400; a malformed key: 400 (section 2.7);
 * - the key reused with another request (its fingerprint: method, URL and body by default): 422;
 * - the key's first request still being processed: 409, with `Retry-After: 1` (section 2.7). The
 *   draft asks for 409 and so does the default, `whenInProgress: "reject"`: waiting would hold a
 *   connection and a server slot for as long as the first request runs, past the time limits of the
 *   client, a proxy or the Functions host, for a client that is itself retrying already. `"wait"`
 *   is there for servers that prefer it (it waits up to `waitTimeoutInMs`, then answers 409).
 *
 * How the split across a framework's request cycle works: {@link IdempotencyKeys.begin} claims the
 * key before the route runs. A key already done answers with the kept response (`respond`); a key
 * claimed gives `run`, and the adapter lets the route run, captures its response and hands it to
 * `finish`, which keeps it with the done record (while the claim is held: `idempotent()` extends it
 * and gives it up before it can expire) and only then lets the adapter send it. A response the
 * record does not keep (a 5xx by default, `keepResponse`) or a route that fails releases the key:
 * a retry runs again.
 *
 * Tenant scoping: the record's key is `compositeKey([tenant, key])`, so one tenant's key never
 * answers another tenant's request (which would hand over its stored response).
 */
import { compositeKey } from "../tables/index.js";
import { checkNonEmptyString, checkOptionalFunction, optionalNumber } from "../internal/validate.js";
import { isIdempotencyInProgressError, isIdempotencyPayloadMismatchError } from "./errors.js";
import { DEFAULT_MAX_KEY_LENGTH, parseIdempotencyKey } from "./http-key-header.js";
import {
  isStoredHttpResponse,
  problem,
  replayOf,
  toStored,
  type CapturedHttpResponse,
  type StoredHttpResponse,
} from "./http-response.js";
import { idempotent, type IdempotentContext, type IdempotentFunction } from "./idempotent.js";
import type { IdempotencyStore } from "./store.js";

/** Options of the HTTP idempotency-key integrations (Express, Fastify, Azure Functions HTTP triggers). */
export interface IdempotencyKeyOptions<Req> {
  /** Where the records live: a `TableIdempotencyStore` shared by every instance of the app. */
  readonly store: IdempotencyStore<never>;
  /**
   * The tenant a request acts for, from its verified identity (a token's tenant or subject, an API
   * key's owner), never from its body: keys are scoped by it, so that one tenant's key never
   * replays another tenant's response. A single-tenant app returns a constant. Called after the
   * key is read; a throw or an empty string fails the request (the framework's error handling).
   */
  readonly tenant: (request: Req) => string | Promise<string>;
  /**
   * What must be the same for a retry to count as the same request (its hash is kept with the
   * key): a reused key with another fingerprint gets 422.
   * @default the method, the URL (path and query) and the body
   */
  readonly fingerprint?: (request: Req) => unknown;
  /**
   * A request of these methods without the header gets 400 when `required`; requests of other
   * methods pass through untouched, with or without a key.
   * @default ["POST", "PATCH"] (the draft's non-idempotent methods)
   */
  readonly methods?: readonly string[];
  /**
   * Whether a request of `methods` must carry a key (400 without one), or runs without
   * idempotency when it has none.
   * @default true
   */
  readonly required?: boolean;
  /**
   * Which responses are kept and replayed; any other releases the key, so that a retry runs again.
   * @default status < 500 (a server error is not the request's answer)
   */
  readonly keepResponse?: (status: number) => boolean;
  /**
   * A concurrent duplicate: `"reject"` answers 409 at once (the draft's answer); `"wait"` waits for
   * the first request and replays its response, up to `waitTimeoutInMs`, then answers 409.
   * @default "reject"
   */
  readonly whenInProgress?: "reject" | "wait";
  /** As `idempotent()`'s `waitTimeoutInMs`. @default 2 * claimDurationInMs */
  readonly waitTimeoutInMs?: number;
  /** As `idempotent()`'s `claimDurationInMs`: how soon another instance takes over from one that died. @default 30000 */
  readonly claimDurationInMs?: number;
  /** How long a key keeps its response, from completion (the draft's key expiry policy). @default the store's (7 days) */
  readonly retentionInMs?: number;
  /** The client-side time limit of each store request. @default a quarter of claimDurationInMs, at most 10000 */
  readonly requestTimeoutInMs?: number;
  /** The longest key accepted (400 beyond). @default 255 */
  readonly maxKeyLength?: number;
  /** A URL documenting the API's idempotency rules: the `type` of the 400/409/422 problems, and their `Link`. */
  readonly problemType?: string;
}

/** What a route running under an idempotency key can know of it (`idempotencyOf(request)`). */
export interface IdempotencyOfRequest {
  /** The key as the client sent it. */
  readonly key: string;
  /**
   * Aborted when the key's claim can no longer be counted on (another instance took it over after
   * this one stalled past `claimDurationInMs`): pass it to what the route awaits, check it before
   * each external effect. The route's response is then not kept.
   */
  readonly abortSignal: AbortSignal;
}

/** What {@link IdempotencyKeys.begin} decided for a request. */
export type KeyedRequest =
  /** Not a request of `methods`, or one without a key that is not required: run it as usual. */
  | { readonly kind: "pass" }
  /** Answer with `response` without running the route: a replay, or a problem (400, 409, 422). */
  | { readonly kind: "respond"; readonly response: CapturedHttpResponse; readonly replayed: boolean }
  /** The key is this request's: run the route, then `finish` with its response, or `abandon`. */
  | {
      readonly kind: "run";
      /** The key as the client sent it. */
      readonly key: string;
      /** Aborted when the claim can no longer be counted on (see `IdempotentContext.abortSignal`). */
      readonly abortSignal: AbortSignal;
      /** Keeps the response (or releases the key, `keepResponse`); resolves with what to send. */
      finish(response: CapturedHttpResponse): Promise<CapturedHttpResponse>;
      /** The route failed or never answered: releases the key. Never rejects. */
      abandon(reason: unknown): Promise<void>;
    };

/** A response `keepResponse` refused: the key is released and the response sent as it is. */
class NotKept extends Error {
  readonly response: CapturedHttpResponse;
  constructor(response: CapturedHttpResponse) {
    super(`a ${response.status} response is not kept`);
    this.response = response;
  }
}

interface KeyedInput {
  readonly scopedKey: string;
  readonly fingerprint: unknown;
  readonly run: (context: IdempotentContext<never>) => Promise<StoredHttpResponse>;
}

/** The engine of the HTTP integrations; each adapter makes one with its default fingerprint. */
export class IdempotencyKeys<Req> {
  readonly #tenant: (request: Req) => string | Promise<string>;
  readonly #fingerprint: (request: Req) => unknown;
  readonly #methods: ReadonlySet<string>;
  readonly #required: boolean;
  readonly #keep: (status: number) => boolean;
  readonly #maxKeyLength: number;
  readonly #problemType: string | undefined;
  readonly #call: IdempotentFunction<KeyedInput, StoredHttpResponse>;

  constructor(options: IdempotencyKeyOptions<Req>, defaultFingerprint: (request: Req) => unknown) {
    if (typeof options !== "object" || options === null)
      throw new TypeError("`options` must be an object with a `store` and a `tenant`.");
    if (typeof options.tenant !== "function") {
      throw new TypeError(
        "`tenant` must be a function (request) => string: keys are scoped by tenant, so that one tenant's key never " +
          'replays another\'s response. A single-tenant app passes `tenant: () => "default"`.',
      );
    }
    checkOptionalFunction("fingerprint", options.fingerprint);
    checkOptionalFunction("keepResponse", options.keepResponse);
    const methods: unknown = options.methods ?? ["POST", "PATCH"];
    if (!Array.isArray(methods) || !methods.every((m): m is string => typeof m === "string" && m !== ""))
      throw new TypeError('`methods` must be an array of HTTP method names, e.g. ["POST", "PATCH"].');
    if (options.required !== undefined && typeof options.required !== "boolean")
      throw new TypeError("`required` must be a boolean.");
    if (options.problemType !== undefined) checkNonEmptyString("problemType", options.problemType);
    this.#tenant = options.tenant;
    this.#fingerprint = options.fingerprint ?? defaultFingerprint;
    this.#methods = new Set(methods.map((m) => m.toUpperCase()));
    this.#required = options.required ?? true;
    this.#keep = options.keepResponse ?? ((status) => status < 500);
    this.#maxKeyLength = optionalNumber("maxKeyLength", options.maxKeyLength, DEFAULT_MAX_KEY_LENGTH, { min: 1 });
    this.#problemType = options.problemType;
    this.#call = idempotent<KeyedInput, StoredHttpResponse>((input, context) => input.run(context), {
      store: options.store,
      key: (input) => input.scopedKey,
      payload: (input) => input.fingerprint,
      whenInProgress: options.whenInProgress,
      waitTimeoutInMs: options.waitTimeoutInMs,
      claimDurationInMs: options.claimDurationInMs,
      retentionInMs: options.retentionInMs,
      requestTimeoutInMs: options.requestTimeoutInMs,
    });
  }

  /**
   * Reads the request's key and claims it for `(tenant, key)`: see {@link KeyedRequest}. Rejects
   * when the tenant or the fingerprint cannot be had, or the store fails (the adapter's error path).
   */
  async begin(
    request: Req,
    method: string,
    header: string | readonly string[] | null | undefined,
  ): Promise<KeyedRequest> {
    if (!this.#methods.has(method.toUpperCase())) return { kind: "pass" };
    const parsed = parseIdempotencyKey(header, this.#maxKeyLength);
    if (parsed.kind === "missing") {
      if (!this.#required) return { kind: "pass" };
      return this.#problem(
        400,
        "Idempotency-Key is missing",
        `A ${method.toUpperCase()} request to this resource needs an Idempotency-Key header (a unique value per ` +
          'request, e.g. a UUID: Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"); send the same key when you retry it.',
      );
    }
    if (parsed.kind === "invalid") return this.#problem(400, "Idempotency-Key is malformed", `${parsed.why}.`);
    const tenant = checkNonEmptyString("the tenant (`tenant(request)`)", await this.#tenant(request));
    const fingerprint = await this.#fingerprint(request);
    const scopedKey = compositeKey([tenant, parsed.key]);

    let started!: (context: IdempotentContext<never>) => void;
    const running = new Promise<IdempotentContext<never>>((resolve) => (started = resolve));
    let respond!: { resolve: (r: CapturedHttpResponse) => void; reject: (e: unknown) => void };
    const responded = new Promise<CapturedHttpResponse>((resolve, reject) => (respond = { resolve, reject }));
    const call = this.#call({
      scopedKey,
      fingerprint,
      run: async (context) => {
        started(context);
        const response = await responded;
        if (!this.#keep(response.status)) throw new NotKept(response);
        return toStored(response);
      },
    });
    const first = await Promise.race([
      running.then((context) => ({ context }) as const),
      call.then(
        (stored) => ({ stored }) as const,
        (error: unknown) => ({ error }) as const,
      ),
    ]);
    if ("context" in first) {
      return {
        kind: "run",
        key: parsed.key,
        abortSignal: first.context.abortSignal,
        finish: async (response) => {
          respond.resolve(response);
          try {
            await call;
          } catch (error) {
            if (!(error instanceof NotKept)) throw error;
          }
          // The first caller gets its own response (cookies included); retries get the kept copy.
          return response;
        },
        abandon: async (reason) => {
          respond.reject(reason);
          await call.catch(() => undefined);
        },
      };
    }
    if ("error" in first) {
      const { error } = first;
      if (isIdempotencyPayloadMismatchError(error)) {
        return this.#problem(
          422,
          "Idempotency-Key is already used",
          `The key '${parsed.key}' was used before with another request (method, URL or body differ). ` +
            "A key stands for one request: send a new key for a new request.",
        );
      }
      if (isIdempotencyInProgressError(error)) {
        return this.#problem(
          409,
          "A request with the same Idempotency-Key is being processed",
          `The first request with the key '${parsed.key}' has not finished yet. Retry after a moment: the retry gets its response.`,
          1,
        );
      }
      throw error;
    }
    if (!isStoredHttpResponse(first.stored)) {
      throw new TypeError(
        `The idempotency record of key '${parsed.key}' does not hold an HTTP response: is the store's table shared with ` +
          "another use of idempotent() or a queue consumer? Give the HTTP integrations their own table (or rowKeyPrefix).",
      );
    }
    return { kind: "respond", response: replayOf(first.stored), replayed: true };
  }

  #problem(status: 400 | 409 | 422, title: string, detail: string, retryAfterInSeconds?: number): KeyedRequest {
    return {
      kind: "respond",
      replayed: false,
      response: problem(status, title, detail, { type: this.#problemType, retryAfterInSeconds }),
    };
  }
}

/** Node's and the Fetch API's header lists, as the lower-case pairs a captured response holds. */
export function headerPairs(
  headers: Iterable<readonly [string, string]> | Record<string, number | string | readonly string[] | undefined>,
): [string, string][] {
  const pairs: [string, string][] = [];
  const entries: Iterable<readonly [string, unknown]> = Symbol.iterator in headers ? headers : Object.entries(headers);
  for (const [name, value] of entries) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? (value as unknown[]) : [value])
      pairs.push([name.toLowerCase(), String(one)]);
  }
  return pairs;
}
