/**
 * The HTTP side of the Files responder: what an operation handler reads from a request and how it
 * answers, in the service's formats.
 *
 * - Error responses carry `x-ms-error-code` and an XML body `<Error><Code/><Message/></Error>`, as in
 *   https://learn.microsoft.com/rest/api/storageservices/status-and-error-codes2; HEAD responses carry
 *   the header only (a HEAD response has no body).
 * - Every response has `x-ms-request-id`, `x-ms-version` (echoed) and `Date`
 *   (https://learn.microsoft.com/rest/api/storageservices/common-rest-api-response-headers).
 * - Metadata travels as `x-ms-meta-<name>` headers; names keep their case
 *   (https://learn.microsoft.com/rest/api/storageservices/set-file-metadata).
 * - A body shorter than its Content-Length is waited for until the request's server timeout (its
 *   `timeout` parameter, at most 30 s: "If the server timeout interval elapses before the service has
 *   finished processing the request, the service returns an error",
 *   https://learn.microsoft.com/rest/api/storageservices/setting-timeouts-for-file-service-operations),
 *   then answered 500 OperationTimedOut, the common error code for it
 *   (https://learn.microsoft.com/rest/api/storageservices/common-rest-api-error-codes), and the
 *   connection is closed: the request is not applied. (An SDK that announced a body it did not
 *   send, issue 23, thus gets an error after the timeout instead of an answer.)
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Metadata } from "./store.js";

/** A request as the operation handlers see it. */
export interface ResponderRequest {
  readonly method: string;
  /** Share name, as sent (may be undefined for account-level requests). */
  readonly shareName: string | undefined;
  /** Path inside the share, segments joined by "/" ("" for the share itself). */
  readonly path: string;
  /** Query parameters, lower-cased names. */
  readonly query: URLSearchParams;
  /** A request header (lower-cased name). */
  header(name: string): string | undefined;
  /** `x-ms-meta-*` headers, names with their case. */
  readonly metadata: Metadata;
  /** The body (empty for requests without one). */
  readonly body: Buffer;
}

/** What an operation answers. */
export interface ResponderReply {
  readonly status: number;
  readonly headers?: Record<string, string | undefined>;
  readonly body?: Buffer;
}

/** A refusal the responder answers with `x-ms-error-code`. Thrown by handlers. */
export class ServiceError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "ServiceError";
  }
}

/** Throws a {@link ServiceError}. */
export function fail(status: number, code: string, message: string): never {
  throw new ServiceError(status, code, message);
}

/** The largest request body the responder accepts: one 4 MiB range plus slack. */
const MAX_BODY_BYTES = 4 * 1024 * 1024 + 1024;

/** The longest server timeout of a FileREST operation (other than uploads and downloads of large files), in seconds. */
const MAX_SERVER_TIMEOUT_IN_SECONDS = 30;

/** Reads a request into a {@link ResponderRequest}, or `"wrong-account"` if its URL is not for `accountName`. */
export async function readRequest(
  req: IncomingMessage,
  accountName: string,
): Promise<ResponderRequest | "wrong-account"> {
  const url = new URL(req.url ?? "/", "http://responder");
  const segments = url.pathname
    .split("/")
    .filter((s) => s.length > 0)
    .map(decodeURIComponent);
  if (segments[0] !== accountName) {
    req.resume();
    return "wrong-account";
  }
  const query = new URLSearchParams();
  for (const [name, value] of url.searchParams) query.set(name.toLowerCase(), value);
  const body = await readBody(req, serverTimeoutInMs(query.get("timeout")));
  const metadata: Metadata = new Map();
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const rawName = req.rawHeaders[i]!;
    if (/^x-ms-meta-/i.test(rawName)) {
      const name = rawName.slice("x-ms-meta-".length);
      metadata.set(name.toLowerCase(), { name, value: req.rawHeaders[i + 1]! });
    }
  }
  return {
    method: (req.method ?? "GET").toUpperCase(),
    shareName: segments[1],
    path: segments.slice(2).join("/"),
    query,
    header: (name) => {
      const value = req.headers[name.toLowerCase()];
      return Array.isArray(value) ? value.join(",") : value;
    },
    metadata,
    body,
  };
}

/** The request's server timeout: its `timeout` parameter (seconds), at most (and by default) 30 s. */
function serverTimeoutInMs(timeout: string | null): number {
  const seconds = timeout !== null && /^\d+$/.test(timeout) ? Number(timeout) : MAX_SERVER_TIMEOUT_IN_SECONDS;
  return Math.min(Math.max(seconds, 1), MAX_SERVER_TIMEOUT_IN_SECONDS) * 1000;
}

function readBody(req: IncomingMessage, timeoutInMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // A body that does not arrive in full within the server timeout: the service's error (and
    // `send` closes the connection: the rest of the body could not be told from a next request).
    const timer = setTimeout(
      () =>
        reject(
          new ServiceError(500, "OperationTimedOut", "Operation could not be completed within the specified time."),
        ),
      timeoutInMs,
    );
    timer.unref();
    req.once("end", () => clearTimeout(timer));
    req.once("close", () => clearTimeout(timer));
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on("end", () =>
      size > MAX_BODY_BYTES
        ? reject(
            new ServiceError(
              413,
              "RequestBodyTooLarge",
              "The request body is too large and exceeds the maximum permissible limit.",
            ),
          )
        : resolve(Buffer.concat(chunks)),
    );
    req.on("error", reject);
  });
}

/** Writes a reply with the common response headers. */
export function send(req: IncomingMessage, res: ServerResponse, reply: ResponderReply): void {
  const headers: Record<string, string> = {
    "x-ms-request-id": randomUUID(),
    "x-ms-version": String(req.headers["x-ms-version"] ?? "2026-10-06"),
    server: "azure-storage-concurrency-files-responder",
  };
  const clientRequestId = req.headers["x-ms-client-request-id"];
  if (typeof clientRequestId === "string") headers["x-ms-client-request-id"] = clientRequestId;
  for (const [name, value] of Object.entries(reply.headers ?? {})) if (value !== undefined) headers[name] = value;
  const body = req.method === "HEAD" ? undefined : reply.body;
  if (!("content-length" in headers)) headers["content-length"] = String(reply.body?.length ?? 0);
  if (!req.complete) headers.connection = "close"; // a body not read in full: the connection cannot serve another request
  res.writeHead(reply.status, headers);
  res.end(body);
}

/** Writes a {@link ServiceError} in the service's error format. */
export function sendError(req: IncomingMessage, res: ServerResponse, error: ServiceError): void {
  const xml =
    `\uFEFF<?xml version="1.0" encoding="utf-8"?><Error><Code>${error.code}</Code>` +
    `<Message>${escapeXml(error.message)}\nRequestId:${randomUUID()}\nTime:${new Date().toISOString()}</Message></Error>`;
  const body = Buffer.from(xml, "utf8");
  send(req, res, {
    status: error.status,
    headers: {
      "x-ms-error-code": error.code,
      "content-type": "application/xml",
      "content-length": String(body.length),
    },
    body,
  });
}

/** Metadata as `x-ms-meta-*` response headers. */
export function metadataHeaders(metadata: Metadata): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const { name, value } of metadata.values()) headers[`x-ms-meta-${name}`] = value;
  return headers;
}

/**
 * Checks metadata names: C# identifiers, as the naming rules require
 * (https://learn.microsoft.com/rest/api/storageservices/naming-and-referencing-shares--directories--files--and-metadata).
 */
export function checkMetadata(metadata: Metadata): void {
  for (const { name } of metadata.values()) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      fail(400, "InvalidMetadata", `The metadata name '${name}' is not a valid C# identifier.`);
  }
}

/** ETag and Last-Modified headers. */
export function versionHeaders(entry: { etag: string; lastModified: number }): Record<string, string> {
  return { etag: entry.etag, "last-modified": new Date(entry.lastModified).toUTCString() };
}

function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
