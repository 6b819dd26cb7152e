/**
 * Plain REST requests to a storage account (Azurite, or a real account under `npm run test:live`),
 * with no SDK in between: what the service conformance suite sends, so that the request is exactly
 * the shape written in a fact and the answer is read exactly as it came (status, every header, the
 * raw body).
 *
 * Requests are authorised with the account key (Shared Key, as the SDKs do), following "Authorize
 * with Shared Key" (https://learn.microsoft.com/rest/api/storageservices/authorize-with-shared-key):
 * for Blob and Queue the string to sign is the verb, eleven standard headers (Content-Length empty
 * when 0), the canonicalised `x-ms-*` headers and the canonicalised resource (`/account/path` and
 * every query parameter, lower-cased and sorted); for Table it is the verb, Content-MD5,
 * Content-Type, the date and `/account/path` (with `?comp=` only). A connection string with a SAS
 * instead of a key appends the SAS to every request.
 */
import { createHmac } from "node:crypto";

/** One of the three services the suite talks to. */
export type RestService = "blob" | "queue" | "table";

/** Where and how to send: an account's endpoints and its key (or SAS). */
export interface RestAccount {
  readonly name: string;
  /** The account key, base64; absent when the connection string carries a SAS. */
  readonly key: string | undefined;
  /** A SAS query string (without `?`) to append instead of signing. */
  readonly sas: string | undefined;
  /** Each service's endpoint, without a trailing slash (`http://127.0.0.1:10000/devstoreaccount1`). */
  readonly endpoints: Readonly<Record<RestService, string>>;
}

/** A request, relative to the service's endpoint. */
export interface RestRequest {
  readonly method: string;
  /** Path and query after the endpoint, e.g. `container/blob?comp=lease`. */
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Buffer;
  /** Signs with this date instead of now (tests of the signer). */
  readonly date?: Date;
}

/** What came back. */
export interface RestAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: Buffer;
}

/** The service versions the SDKs this project tests with send (the library's request shapes). */
export const SDK_SERVICE_VERSIONS: Readonly<Record<RestService, string>> = {
  blob: "2026-10-06", // @azure/storage-blob 12.34 (SERVICE_VERSION)
  queue: "2026-06-06", // @azure/storage-queue 12.32 (SERVICE_VERSION)
  table: "2019-02-02", // @azure/data-tables 13.3 (generated `version` parameter)
};

/** Reads a storage connection string into a {@link RestAccount}. */
export function restAccountOf(connectionString: string): RestAccount {
  const parts = new Map<string, string>();
  for (const part of connectionString.split(";")) {
    const at = part.indexOf("=");
    if (at > 0) parts.set(part.slice(0, at).trim().toLowerCase(), part.slice(at + 1).trim());
  }
  const name = parts.get("accountname");
  const key = parts.get("accountkey");
  const sas = parts.get("sharedaccesssignature")?.replace(/^\?/, "");
  const protocol = parts.get("defaultendpointsprotocol") ?? "https";
  const suffix = parts.get("endpointsuffix") ?? "core.windows.net";
  const endpoint = (service: RestService) => {
    const explicit = parts.get(`${service}endpoint`);
    if (explicit) return explicit.replace(/\/+$/, "");
    if (!name) throw new Error(`The connection string names neither AccountName nor ${service}Endpoint.`);
    return `${protocol}://${name}.${service}.${suffix}`;
  };
  const endpoints = { blob: endpoint("blob"), queue: endpoint("queue"), table: endpoint("table") };
  const accountName = name ?? new URL(endpoints.blob).hostname.split(".")[0]!;
  if (!key && !sas) throw new Error("The connection string has neither AccountKey nor SharedAccessSignature.");
  return { name: accountName, key, sas, endpoints };
}

/** Sends `request` to `service` of `account` and reads the whole answer. */
export async function sendRest(account: RestAccount, service: RestService, request: RestRequest): Promise<RestAnswer> {
  const base = account.endpoints[service];
  let url = new URL(`${base}/${request.path}`);
  const body = request.body === undefined ? undefined : Buffer.from(request.body);
  const headers: Record<string, string> = {
    "x-ms-version": SDK_SERVICE_VERSIONS[service],
    "x-ms-date": (request.date ?? new Date()).toUTCString(),
  };
  for (const [name, value] of Object.entries(request.headers ?? {})) headers[name.toLowerCase()] = value;
  if (body !== undefined || ["PUT", "POST", "PATCH", "MERGE"].includes(request.method)) {
    headers["content-length"] = String(body?.length ?? 0);
  }
  if (account.sas) {
    url = new URL(`${url.href}${url.search ? "&" : "?"}${account.sas}`);
  } else {
    headers.authorization = `SharedKey ${account.name}:${signature(account, service, request.method, url, headers)}`;
  }
  const response = await fetch(url, {
    method: request.method,
    headers,
    ...(body === undefined ? {} : { body }),
    signal: AbortSignal.timeout(30_000),
  });
  return { status: response.status, headers: response.headers, body: Buffer.from(await response.arrayBuffer()) };
}

function signature(
  account: RestAccount,
  service: RestService,
  method: string,
  url: URL,
  headers: Readonly<Record<string, string>>,
): string {
  const h = (name: string) => headers[name] ?? "";
  // The path as it travels in the URL (percent-encoded), after the account name.
  const resource = `/${account.name}${url.pathname}`;
  let toSign: string;
  if (service === "table") {
    const comp = url.searchParams.get("comp");
    toSign = [
      method,
      h("content-md5"),
      h("content-type"),
      h("x-ms-date"),
      resource + (comp ? `?comp=${comp}` : ""),
    ].join("\n");
  } else {
    const length = h("content-length") === "0" ? "" : h("content-length");
    const standard = [
      method,
      h("content-encoding"),
      h("content-language"),
      length,
      h("content-md5"),
      h("content-type"),
      "", // Date: x-ms-date is sent instead
      h("if-modified-since"),
      h("if-match"),
      h("if-none-match"),
      h("if-unmodified-since"),
      h("range"),
    ];
    const msHeaders = Object.keys(headers)
      .filter((name) => name.startsWith("x-ms-"))
      .sort()
      .map((name) => `${name}:${headers[name]!.trim()}\n`)
      .join("");
    const query = new Map<string, string[]>();
    for (const [name, value] of url.searchParams) {
      const key = name.toLowerCase();
      query.set(key, [...(query.get(key) ?? []), value]);
    }
    const params = [...query.keys()]
      .sort()
      .map((name) => `\n${name}:${query.get(name)!.sort().join(",")}`)
      .join("");
    toSign = `${standard.join("\n")}\n${msHeaders}${resource}${params}`;
  }
  return createHmac("sha256", Buffer.from(account.key!, "base64")).update(toSign, "utf8").digest("base64");
}
