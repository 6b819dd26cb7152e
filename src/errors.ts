/**
 * Typed errors, and the one place that reads an Azure SDK `RestError`.
 *
 * Every error the library throws on purpose is a {@link StorageConcurrencyError} with a stable
 * `code`; errors from the service are read once, here, into {@link RestErrorInfo}. Validation of
 * arguments throws the standard `TypeError` / `RangeError`, as the Azure SDK guidelines ask.
 */
import type { StorageConcurrencyErrorCode, StorageConcurrencyErrorOf } from "./error-codes.js";

const BRAND = Symbol.for("azure-storage-concurrency.error");
const REQUEST_BRAND = Symbol.for("azure-storage-concurrency.request-error");

/** Constructor options shared by the library's error classes. */
export interface StorageConcurrencyErrorOptions {
  /** Stable, library-level code to switch on (for example `"OptimisticConflict"`). */
  readonly code: string;
  /** HTTP status of the response that caused the error, when there was one. */
  readonly statusCode?: number | undefined;
  /** The service's error code (`x-ms-error-code`, or the OData body for tables), when known. */
  readonly serviceCode?: string | undefined;
  /** The underlying error. */
  readonly cause?: unknown;
}

/**
 * Base class of every error this library throws on purpose. Check with
 * {@link isStorageConcurrencyError} (by brand, not `instanceof`, so two copies of the package agree).
 *
 * @example
 * ```ts
 * import { StorageConcurrencyError, isStorageConcurrencyError } from "azure-storage-concurrency/errors";
 *
 * // An application's own error in the same family (the message is redacted of secrets):
 * class QuotaExceededError extends StorageConcurrencyError {
 *   constructor(tenant: string) {
 *     super(`Tenant '${tenant}' is over its quota.`, { code: "QuotaExceeded" });
 *     this.name = "QuotaExceededError";
 *   }
 * }
 * const error: unknown = new QuotaExceededError("contoso");
 * if (isStorageConcurrencyError(error)) console.log(error.code); // "QuotaExceeded"
 * ```
 */
export class StorageConcurrencyError extends Error {
  /** Stable, library-level code to switch on. */
  readonly code: string;
  /** HTTP status of the response that caused the error, when there was one. */
  readonly statusCode: number | undefined;
  /** The service's error code, when known. */
  readonly serviceCode: string | undefined;

  constructor(message: string, options: StorageConcurrencyErrorOptions) {
    super(redactSecrets(message), options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "StorageConcurrencyError";
    this.code = options.code;
    this.statusCode = options.statusCode;
    this.serviceCode = options.serviceCode;
    Object.defineProperty(this, BRAND, { value: true });
  }
}

/**
 * True for any error thrown on purpose by this library (any subclass, any copy of the package);
 * given a `code`, true only for an error with that code, narrowed to the class that carries it
 * (`isStorageConcurrencyError(error, "LeaseLost")` gives a `LeaseLostError`, with its `reason`).
 * The one guard for every error of the library: the classes stay for `instanceof` and `cause`
 * chains, and the feature guards (`isLeaseLostError`, …) are deprecated in favour of this one. Your
 * own subclasses' codes are read from `error.code` after the guard without a code.
 *
 * @example
 * ```ts
 * import { blobLock } from "azure-storage-concurrency/lease";
 * import { isStorageConcurrencyError } from "azure-storage-concurrency/errors";
 *
 * await blobLock(container, "nightly").withLock(async () => console.log("working")).catch((error: unknown) => {
 *   if (isStorageConcurrencyError(error, "LockTimeout")) console.error(`busy: ${error.message}`);
 *   else if (isStorageConcurrencyError(error, "LeaseLost")) console.error(`lost the lock (${error.reason})`);
 *   else if (isStorageConcurrencyError(error)) console.error(`${error.code}: ${error.message}`);
 *   throw error;
 * });
 * ```
 */
export function isStorageConcurrencyError(error: unknown): error is StorageConcurrencyError;
export function isStorageConcurrencyError<C extends StorageConcurrencyErrorCode>(
  error: unknown,
  code: C,
): error is StorageConcurrencyErrorOf<C>;
export function isStorageConcurrencyError(error: unknown, code?: string): boolean {
  if (typeof error !== "object" || error === null || !hasBrand(error, BRAND)) return false;
  return code === undefined || readCode(error) === code;
}

/** Reads `code`; `undefined` for a value whose reads throw (any value can be thrown). */
function readCode(error: object): unknown {
  try {
    return (error as { code?: unknown }).code;
  } catch {
    return undefined;
  }
}

/** Reads a brand; `false` for a value whose reads throw (a revoked Proxy, a throwing getter): any value can be thrown. */
function hasBrand(error: object, brand: symbol): boolean {
  try {
    return (error as Record<symbol, unknown>)[brand] === true;
  } catch {
    return false;
  }
}

/**
 * A storage request failed and the library is passing the failure on: the service's answer (or the
 * network failure) is kept in `statusCode`, `serviceCode` and `cause`, and `transient` says whether
 * trying again later may help.
 *
 * @example
 * ```ts
 * import { retry } from "azure-storage-concurrency/retry";
 * import { isStorageRequestError } from "azure-storage-concurrency/errors";
 *
 * try {
 *   await retry(({ abortSignal }) => container.create({ abortSignal }), { operationName: "create container 'reports'" });
 * } catch (error) {
 *   if (isStorageRequestError(error)) {
 *     console.error(error.statusCode, error.serviceCode, error.transient, error.attempts, error.requestId);
 *   }
 *   throw error;
 * }
 * ```
 */
export class StorageRequestError extends StorageConcurrencyError {
  /** Whether the failure is worth retrying (see {@link retry!classifyError}). */
  readonly transient: boolean;
  /** The service's request id, for support tickets. */
  readonly requestId: string | undefined;
  /** How many attempts were made before giving up. */
  readonly attempts: number;

  constructor(
    message: string,
    options: StorageConcurrencyErrorOptions & {
      readonly transient: boolean;
      readonly requestId?: string | undefined;
      readonly attempts?: number;
    },
  ) {
    super(message, options);
    this.name = "StorageRequestError";
    this.transient = options.transient;
    this.requestId = options.requestId;
    this.attempts = options.attempts ?? 1;
    Object.defineProperty(this, REQUEST_BRAND, { value: true });
  }
}

/**
 * True when `error` is a {@link StorageRequestError}, or one of the feature-specific subclasses that
 * carry more detail (such as a failed table transaction), so that {@link retry!classifyError} reads them all.
 *
 * @example
 * ```ts
 * import { retry } from "azure-storage-concurrency/retry";
 * import { isStorageRequestError } from "azure-storage-concurrency/errors";
 *
 * await retry(({ abortSignal }) => blob.getProperties({ abortSignal })).catch((error: unknown) => {
 *   if (isStorageRequestError(error) && error.statusCode === 404) return undefined; // no such blob
 *   throw error;
 * });
 * ```
 */
export function isStorageRequestError(error: unknown): error is StorageRequestError {
  return isStorageConcurrencyError(error) && hasBrand(error, REQUEST_BRAND);
}

/**
 * A request failed (throttled, timed out, refused by a busy service) and was not retried because
 * its {@link RetryBudget} is empty: retries had outrun successes, so the service is overloaded and
 * another retry would only add to it. `statusCode`, `serviceCode` and `cause` are the failure's;
 * the code is `"RetryBudgetExhausted"`. Not transient for the one classifier: an outer retry loop
 * must not retry it either.
 *
 * @example
 * ```ts
 * import { retry } from "azure-storage-concurrency/retry";
 * import { RetryBudget, isRetryBudgetExhaustedError } from "azure-storage-concurrency/throttling";
 *
 * const budget = new RetryBudget();
 * await retry(({ abortSignal }) => blob.getProperties({ abortSignal }), { budget }).catch((error: unknown) => {
 *   if (isRetryBudgetExhaustedError(error)) console.warn(`${error.budget}: ${error.statusCode} ${error.serviceCode}`);
 *   throw error;
 * });
 * ```
 */
export class RetryBudgetExhaustedError extends StorageConcurrencyError {
  /** The budget's name. */
  readonly budget: string;
  /** The tokens it had left (fewer than one retry costs). */
  readonly tokens: number;

  constructor(
    message: string,
    options: Omit<StorageConcurrencyErrorOptions, "code"> & { readonly budget: string; readonly tokens: number },
  ) {
    super(message, { ...options, code: "RetryBudgetExhausted" });
    this.name = "RetryBudgetExhaustedError";
    this.budget = options.budget;
    this.tokens = options.tokens;
  }
}

/**
 * True when `error` is a {@link RetryBudgetExhaustedError} (by its code, so two copies of the package agree).
 *
 * @example
 * ```ts
 * import { isRetryBudgetExhaustedError } from "azure-storage-concurrency/throttling";
 *
 * declare const error: unknown;
 * if (isRetryBudgetExhaustedError(error)) console.log(error.budget, error.tokens);
 * ```
 */
export function isRetryBudgetExhaustedError(error: unknown): error is RetryBudgetExhaustedError {
  return isStorageConcurrencyError(error) && error.code === "RetryBudgetExhausted";
}

/** What the library reads out of an SDK `RestError` (or a bare network error). */
export interface RestErrorInfo {
  /** HTTP status, absent for network failures. */
  readonly statusCode: number | undefined;
  /** The service's error code, e.g. `ConditionNotMet`, `LeaseAlreadyPresent`, `ServerBusy`. */
  readonly serviceCode: string | undefined;
  /** The network failure's code (`ECONNRESET`, `ETIMEDOUT`, `REQUEST_SEND_ERROR`, …), if any. */
  readonly networkCode: string | undefined;
  /** The service's request id. */
  readonly requestId: string | undefined;
  /** How long the service asked callers to wait, from `x-ms-retry-after-ms`, `retry-after-ms` or `Retry-After`. */
  readonly retryAfterInMs: number | undefined;
  /** The service's message, first line only, with secrets removed. */
  readonly message: string;
}

interface RestErrorLike {
  name?: unknown;
  message?: unknown;
  code?: unknown;
  statusCode?: unknown;
  response?: { headers?: { get(name: string): string | undefined }; bodyAsText?: string | null };
  details?: unknown;
}

/**
 * Reads an SDK `RestError` (or a Node.js network error) into {@link RestErrorInfo}; `undefined` for
 * anything else. This is the only function in the library that looks inside SDK errors.
 *
 * Blob and queue errors carry the service code in `code` and `x-ms-error-code`;
 * `@azure/data-tables` leaves `code` undefined and puts it in the OData body, which is read here too.
 *
 * @example
 * ```ts
 * import { readRestError } from "azure-storage-concurrency/errors";
 *
 * try {
 *   await table.createEntity({ partitionKey: "p", rowKey: "r" });
 * } catch (error) {
 *   const info = readRestError(error);
 *   console.log(info?.statusCode, info?.serviceCode, info?.requestId); // 409 "EntityAlreadyExists" "…"
 * }
 * ```
 */
export function readRestError(error: unknown): RestErrorInfo | undefined {
  // The library's own errors carry `statusCode` and a library-level `code` too: they are not SDK errors.
  if (typeof error !== "object" || error === null || isStorageConcurrencyError(error)) return undefined;
  try {
    return readRestErrorObject(error);
  } catch {
    return undefined; // a thrown value whose properties cannot be read (a throwing getter, a revoked Proxy)
  }
}

function readRestErrorObject(e: RestErrorLike): RestErrorInfo | undefined {
  const statusCode = typeof e.statusCode === "number" ? e.statusCode : undefined;
  const code = typeof e.code === "string" ? e.code : undefined;
  if (e.name !== "RestError" && statusCode === undefined && !(code && NETWORK_CODES.has(code))) return undefined;

  const header = (name: string) => e.response?.headers?.get(name) ?? undefined;
  const body = parseODataError(e.response?.bodyAsText) ?? parseXmlError(e.response?.bodyAsText);
  const serviceCode =
    statusCode === undefined ? undefined : (header("x-ms-error-code") ?? code ?? body?.code ?? detailsCode(e.details));
  const rawMessage = body?.message ?? (typeof e.message === "string" ? e.message : "");
  return {
    statusCode,
    serviceCode,
    networkCode: statusCode === undefined ? code : undefined,
    requestId: header("x-ms-request-id"),
    retryAfterInMs: parseRetryAfter(header),
    message: redactSecrets(rawMessage.split("\n")[0]!.trim()),
  };
}

/**
 * The HTTP status of a storage error (an SDK error or one of the library's), if it has one.
 *
 * @example
 * ```ts
 * import { statusOf } from "azure-storage-concurrency/errors";
 *
 * const properties = await blob.getProperties().catch((error: unknown) => {
 *   if (statusOf(error) === 404) return undefined;
 *   throw error;
 * });
 * ```
 */
export function statusOf(error: unknown): number | undefined {
  return readRestError(error)?.statusCode ?? (isStorageConcurrencyError(error) ? error.statusCode : undefined);
}

/**
 * The service error code of a storage error (`ConditionNotMet`, `LeaseAlreadyPresent`, …), if any;
 * for tables too, whose SDK leaves `code` undefined.
 *
 * @example
 * ```ts
 * import { serviceCodeOf } from "azure-storage-concurrency/errors";
 *
 * await table.createEntity({ partitionKey: "p", rowKey: "r" }).catch((error: unknown) => {
 *   if (serviceCodeOf(error) !== "EntityAlreadyExists") throw error;
 * });
 * ```
 */
export function serviceCodeOf(error: unknown): string | undefined {
  return readRestError(error)?.serviceCode ?? (isStorageConcurrencyError(error) ? error.serviceCode : undefined);
}

/**
 * Network failure codes that mean "the request may or may not have reached the service".
 * Node.js socket codes, undici's, and the Azure core pipeline's own.
 */
export const NETWORK_CODES: ReadonlySet<string> = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "ETIMEDOUT",
  "ESOCKETTIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENETDOWN",
  "EAI_AGAIN",
  "ENOTFOUND",
  "REQUEST_SEND_ERROR",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
]);

/**
 * Removes account keys, SAS signatures and shared-key authorisation values from a text, so that no
 * error message or log line carries a secret. It finds them in connection strings (`AccountKey=k`,
 * `AccountKey = k`), in query strings (`sig=…`, also percent-encoded once or twice inside another
 * URL: `sig%3D…`), as fields of JSON or of `util.inspect` output (`"sig": "…"`, `signature: '…'`,
 * `accountKey: <Buffer …>`, a `URLSearchParams`'s `'sig' => '…'`), in `SharedKey` headers, and as
 * bearer tokens (`Authorization: Bearer …`, a bare `Bearer eyJ…`, any JSON Web Token).
 *
 * @example
 * ```ts
 * import { redactSecrets } from "azure-storage-concurrency/errors";
 *
 * redactSecrets("https://acct.blob.core.windows.net/c/b?sv=2024-05-04&sig=abc%2Fdef");
 * // "https://acct.blob.core.windows.net/c/b?sv=2024-05-04&sig=<redacted>"
 * ```
 */
export function redactSecrets(text: string): string {
  return (
    text
      // Connection strings: AccountKey=k, AccountKey = k, AccountKey%3Dk.
      // (A name starts after a non-alphanumeric character or a percent-escape: %26sig%3D, %3BAccountKey%3D.)
      .replace(
        /(?<=^|[^a-z0-9]|%(?:25)?[0-9a-f]{2})(AccountKey|SharedAccessSignature)(\s*(?:=|%3D|%253D)\s*)(?:(?!%3B|%253B)[^;\s"'&])*/gi,
        "$1$2<redacted>",
      )
      // Query strings, also percent-encoded once (%3D, %26) or twice (%253D, %2526) inside another URL.
      .replace(
        /(?<=^|[^a-z0-9]|%(?:25)?[0-9a-f]{2})(sig(?:=|%3D|%253D))(?:(?!%26|%2526)[^&;\s"'()<>])*/gi,
        "$1<redacted>",
      )
      // JSON and util.inspect fields: "sig": "v", sig: 'v', signature: 'v', 'sig' => 'v' (URLSearchParams).
      .replace(
        /((["']?)\b(?:sig|signature|accountKey|sharedAccessSignature)\2\s*(?::|=>)\s*)(["'`])(?:(?!\3)[^\\]|\\.)*\3/gi,
        "$1$3<redacted>$3",
      )
      // util.inspect of a shared key credential: accountKey: <Buffer 12 ab …>.
      .replace(/(\baccountKey\s*:\s*)<Buffer[^>]*>/gi, "$1<redacted>")
      .replace(/(SharedKey(?:Lite)?\s+[^:\s]+:)[^\s"',]+/gi, "$1<redacted>")
      // Bearer tokens (Entra ID, RFC 6750 b64token): in an Authorization header or field (any length), or
      // bare ("Bearer eyJ…", 16 characters or more, so that prose such as "a Bearer token" stays).
      .replace(
        /(\bAuthorization["']?\s*(?::|=>|=)\s*["'`]?\s*(?:Bearer|Basic|Token)\s+)[A-Za-z0-9\-._~+/]+=*/gi,
        "$1<redacted>",
      )
      .replace(/(\bBearer\s+)[A-Za-z0-9\-._~+/]{16,}=*/gi, "$1<redacted>")
      // A JSON Web Token anywhere (header.payload.signature, base64url; the header starts with `{"`, "eyJ").
      .replace(/\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g, "<redacted>")
  );
}

function parseODataError(body: string | null | undefined): { code?: string; message?: string } | undefined {
  if (!body || body[0] !== "{") return undefined;
  try {
    const parsed = JSON.parse(body) as { "odata.error"?: { code?: unknown; message?: { value?: unknown } } };
    const odata = parsed["odata.error"];
    if (!odata) return undefined;
    return {
      ...(typeof odata.code === "string" ? { code: odata.code } : {}),
      ...(typeof odata.message?.value === "string" ? { message: odata.message.value } : {}),
    };
  } catch {
    return undefined;
  }
}

/**
 * The `<Message>` of a Blob, Queue or File error body (`<Error><Code>…</Code><Message>…</Message>`):
 * the service's words, where the SDK's own message says only "Unexpected status code: 503" (the
 * account-level 503s are told apart by it: "Operations per second is over the account limit.").
 */
function parseXmlError(body: string | null | undefined): { code?: string; message?: string } | undefined {
  if (!body || !body.includes("<Error>")) return undefined;
  const message = /<Message>([^<]*)<\/Message>/.exec(body)?.[1];
  return message === undefined ? undefined : { message };
}

function detailsCode(details: unknown): string | undefined {
  if (typeof details !== "object" || details === null) return undefined;
  const d = details as { errorCode?: unknown; code?: unknown };
  if (typeof d.errorCode === "string") return d.errorCode;
  return typeof d.code === "string" ? d.code : undefined;
}

function parseRetryAfter(header: (name: string) => string | undefined): number | undefined {
  for (const name of ["x-ms-retry-after-ms", "retry-after-ms"]) {
    const value = Number(header(name));
    if (header(name) !== undefined && Number.isFinite(value) && value >= 0) return value;
  }
  const retryAfter = header("retry-after");
  if (retryAfter === undefined) return undefined;
  const seconds = Number(retryAfter);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(retryAfter);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
