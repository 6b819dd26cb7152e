/**
 * A test stand-in for one thing Azurite gets wrong: an entity group transaction (`POST /$batch`)
 * made with a table-scoped service SAS.
 *
 * The service takes it. A table SAS grants query (r), add (a), update (u) and delete (d) on the
 * entities of one table ("Create a service SAS", learn.microsoft.com/rest/api/storageservices/
 * create-service-sas), and a transaction is Insert/Update/Merge/Delete Entity operations on one table
 * ("Performing entity group transactions", …/performing-entity-group-transactions); the Azure SDK for
 * Python's live test `test_batch_sas_auth` (sdk/tables/azure-data-tables/tests/test_table_batch.py)
 * commits a transaction with a `generate_table_sas` token of exactly `raud` against a real account,
 * and azure-storage-net#584 was a client bug (the table name in the `$batch` URL), not a refusal.
 *
 * Azurite (3.37) refuses it with 403 AuthorizationFailure: its context middleware takes the path's
 * last segment as the table name (src/table/middleware/tableStorageContext.middleware.ts), so for
 * `/devstoreaccount1/$batch` the table is `$batch`, and TableSASAuthenticator signs
 * `/table/devstoreaccount1/$batch` instead of the SAS's table: the signature never matches. Its own
 * SAS tests (tests/table/auth/sas.test.ts) cover single operations only.
 *
 * This bridge sits between a test's client and Azurite. Every request but a table-SAS `$batch`
 * goes through untouched (Azurite checks the SAS). A `$batch` with a table SAS is checked here the
 * way the service documents it: the signature (HMAC-SHA256 of the string-to-sign of a service SAS
 * for a table, version 2018-11-09 and later), the start and expiry, every operation of the change
 * set on the SAS's table, and each operation's right (Insert: a; Update/Merge with If-Match: u;
 * Insert Or Replace/Merge, without If-Match: a and u; Delete: d). A refused transaction gets the
 * service's 403 (AuthenticationFailed, AuthorizationPermissionMismatch); an accepted one is sent to
 * Azurite with an account SAS of the same rights on the table service's objects instead. The
 * difference is worked around here, in the tests' set-up: the library sends what it would send to
 * the service.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { AzureNamedKeyCredential, generateAccountSas } from "@azure/data-tables";
import { AZURITE_ACCOUNT_KEY } from "../../src/testing/index.js";

const ACCOUNT = "devstoreaccount1";

/** A running bridge. */
export interface TableSasBridge {
  /** The table endpoint to give clients instead of Azurite's (`http://127.0.0.1:port/devstoreaccount1`). */
  readonly endpoint: string;
  /** The table-SAS transactions it checked: accepted and refused. */
  readonly transactions: { readonly accepted: number; readonly refused: number };
  close(): Promise<void>;
}

/** What a transaction's operation needs of a table SAS. */
function rightsOf(method: string, headers: string): string {
  if (method === "POST") return "a"; // Insert Entity
  if (method === "DELETE") return "d"; // Delete Entity
  if (method === "GET") return "r";
  // Update / Merge Entity carry If-Match; Insert Or Replace / Insert Or Merge do not, and need both.
  return /^if-match:/im.test(headers) ? "u" : "au";
}

function refuse(response: ServerResponse, code: string, message: string): void {
  response.writeHead(403, { "content-type": "application/json;odata=minimalmetadata", "x-ms-error-code": code });
  response.end(JSON.stringify({ "odata.error": { code, message: { lang: "en-US", value: message } } }));
}

/** Why the service would refuse this table-SAS transaction, or undefined when it would take it. */
function checkTableSasTransaction(query: URLSearchParams, body: string): { code: string; why: string } | undefined {
  const get = (name: string) => query.get(name) ?? "";
  const table = get("tn");
  const stringToSign = [
    get("sp"),
    get("st"),
    get("se"),
    `/table/${ACCOUNT}/${table.toLowerCase()}`,
    get("si"),
    get("sip"),
    get("spr"),
    get("sv"),
    get("spk"),
    get("srk"),
    get("epk"),
    get("erk"),
  ].join("\n");
  const expected = createHmac("sha256", Buffer.from(AZURITE_ACCOUNT_KEY, "base64"))
    .update(stringToSign, "utf8")
    .digest();
  const given = Buffer.from(get("sig"), "base64");
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { code: "AuthenticationFailed", why: "the signature does not match" };
  const now = Date.now();
  if (get("se") === "" || Date.parse(get("se")) < now || (get("st") !== "" && Date.parse(get("st")) > now))
    return { code: "AuthenticationFailed", why: "the SAS is not valid now" };
  if (get("si") !== "" || get("spk") !== "" || get("epk") !== "" || get("srk") !== "" || get("erk") !== "")
    return { code: "AuthorizationFailure", why: "stored policies and key ranges are not modelled by this bridge" };
  // Each operation of the change set: "METHOD <url> HTTP/1.1", then its headers up to a blank line.
  const operations = [
    ...body.matchAll(/^(POST|PUT|PATCH|MERGE|DELETE|GET) (\S+) HTTP\/1\.1\r?\n([\s\S]*?)\r?\n\r?\n/gm),
  ];
  if (operations.length === 0) return { code: "InvalidInput", why: "no operation in the change set" };
  for (const [, method, url, headers] of operations) {
    const path = new URL(url!).pathname.split("/").filter(Boolean);
    const target = decodeURIComponent(path[1] ?? "").replace(/\(.*$/, "");
    if (path[0] !== ACCOUNT || target.toLowerCase() !== table.toLowerCase())
      return { code: "AuthorizationFailure", why: `an operation is on table '${target}', not the SAS's '${table}'` };
    for (const right of rightsOf(method!, headers!)) {
      if (!get("sp").includes(right))
        return {
          code: "AuthorizationPermissionMismatch",
          why: `${method} needs '${right}', the SAS grants '${get("sp")}'`,
        };
    }
  }
  return undefined;
}

/** Starts a bridge in front of Azurite's table endpoint (`target`, e.g. `http://127.0.0.1:10002/devstoreaccount1`). */
export async function startTableSasBridge(target: string): Promise<TableSasBridge> {
  const upstream = new URL(target);
  const transactions = { accepted: 0, refused: 0 };
  const accountSas = () =>
    generateAccountSas(new AzureNamedKeyCredential(ACCOUNT, AZURITE_ACCOUNT_KEY), {
      expiresOn: new Date(Date.now() + 600_000),
      permissions: { query: true, add: true, update: true, delete: true },
      resourceTypes: "o",
      services: { table: true },
    }).replace(/^\?/, "");

  const forward = (request: IncomingMessage, response: ServerResponse, path: string, body: Buffer) => {
    const outgoing = httpRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: request.method,
        path,
        headers: { ...request.headers, host: upstream.host, "content-length": String(body.length) },
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    outgoing.on("error", () => response.destroy());
    outgoing.end(body);
  };

  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks);
      const url = new URL(request.url ?? "/", "http://bridge");
      if (request.method !== "POST" || !url.pathname.endsWith("/$batch") || !url.searchParams.has("tn")) {
        return forward(request, response, request.url ?? "/", body);
      }
      const refusal = checkTableSasTransaction(url.searchParams, body.toString("utf8"));
      if (refusal) {
        transactions.refused += 1;
        return refuse(response, refusal.code, `Refused by the test's table SAS bridge: ${refusal.why}.`);
      }
      transactions.accepted += 1;
      forward(request, response, `${url.pathname}?${accountSas()}`, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}${upstream.pathname.replace(/\/$/, "")}`,
    transactions,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
