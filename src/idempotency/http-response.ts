/**
 * The HTTP side of idempotency keys, shared by the Express and Fastify middleware and the Azure
 * Functions HTTP wrapper: how a response is kept with a key's done record and replayed, and the
 * problem responses (RFC 9457) of draft-ietf-httpapi-idempotency-key-header-06 section 2.7
 * (https://datatracker.ietf.org/doc/draft-ietf-httpapi-idempotency-key-header/): 400 for a missing
 * or malformed key, 422 for a key reused with another request, 409 for a key whose first request is
 * still being processed.
 */
import { MAX_RESULT_JSON_LENGTH } from "./store.js";

/** A response as the middleware captured it from the handler: what the first caller is sent. */
export interface CapturedHttpResponse {
  /** The status code. */
  readonly status: number;
  /** The headers, names in lower case, in the order set (a name may repeat: `set-cookie`). */
  readonly headers: readonly (readonly [string, string])[];
  /** The body's bytes. */
  readonly body: Uint8Array;
}

/**
 * A response as its key's done record keeps it (JSON, at most {@link MAX_RESULT_JSON_LENGTH}
 * characters with everything else): a body that does not fit is left out (`bodyOmitted`, its
 * length), and a replay then sends the status and headers with an empty body.
 */
export interface StoredHttpResponse {
  /** Format version. */
  readonly v: 1;
  readonly status: number;
  readonly headers: readonly (readonly [string, string])[];
  /** The body: UTF-8 text, or base64 of bytes that are not UTF-8. */
  readonly body: string;
  readonly encoding: "utf8" | "base64";
  /** The body's length in bytes when it was too large to keep. */
  readonly bodyOmitted?: number;
}

/** The header a replayed response carries (Stripe's name; the draft defines none). */
const REPLAYED_HEADER = "idempotent-replayed";

/**
 * Headers never kept: hop-by-hop and length headers (recomputed by the server), the date (a
 * replay's is its own), and cookies (a session cookie is a secret: the record is plain text in a
 * table). See RFC 9110 section 7.6.1 for the hop-by-hop fields.
 */
const NOT_KEPT = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "content-length",
  "date",
  "set-cookie",
  "upgrade",
  "trailer",
  "te",
  "proxy-connection",
]);

/** The headers of `captured` that a done record keeps. */
function keptHeaders(headers: readonly (readonly [string, string])[]): [string, string][] {
  return headers.filter(([name]) => !NOT_KEPT.has(name.toLowerCase())).map(([n, v]) => [n.toLowerCase(), v]);
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** What the done record keeps of a captured response. */
export function toStored(captured: CapturedHttpResponse): StoredHttpResponse {
  const headers = keptHeaders(captured.headers);
  let body: string;
  let encoding: "utf8" | "base64" = "utf8";
  try {
    body = utf8.decode(captured.body);
  } catch {
    body = Buffer.from(captured.body).toString("base64");
    encoding = "base64";
  }
  const stored: StoredHttpResponse = { v: 1, status: captured.status, headers, body, encoding };
  // Leave room for the record's own JSON around it.
  if (JSON.stringify(stored).length <= MAX_RESULT_JSON_LENGTH - 100) return stored;
  return { v: 1, status: captured.status, headers, body: "", encoding: "utf8", bodyOmitted: captured.body.length };
}

/** A stored response as it is sent again: its bytes, and the replay header. */
export function replayOf(stored: StoredHttpResponse): CapturedHttpResponse {
  const body = stored.encoding === "base64" ? Buffer.from(stored.body, "base64") : Buffer.from(stored.body, "utf8");
  return { status: stored.status, headers: [...stored.headers, [REPLAYED_HEADER, "true"]], body };
}

/** True when `value` is a response a done record of these integrations keeps. */
export function isStoredHttpResponse(value: unknown): value is StoredHttpResponse {
  const v = value as Partial<StoredHttpResponse> | null;
  return (
    typeof v === "object" &&
    v !== null &&
    v.v === 1 &&
    typeof v.status === "number" &&
    Array.isArray(v.headers) &&
    typeof v.body === "string"
  );
}

/** An RFC 9457 problem response (`application/problem+json`). */
export function problem(
  status: 400 | 409 | 422,
  title: string,
  detail: string,
  options: { readonly type?: string | undefined; readonly retryAfterInSeconds?: number | undefined } = {},
): CapturedHttpResponse {
  const headers: [string, string][] = [["content-type", "application/problem+json"]];
  if (options.type) headers.push(["link", `<${options.type}>; rel="describedby"`]);
  if (options.retryAfterInSeconds !== undefined) headers.push(["retry-after", String(options.retryAfterInSeconds)]);
  const body = JSON.stringify({ type: options.type ?? "about:blank", title, status, detail });
  return { status, headers, body: Buffer.from(body, "utf8") };
}
