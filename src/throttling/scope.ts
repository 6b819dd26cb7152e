/**
 * What the service throttles a request by, read from the request itself: one parser for the
 * throttling model (the testing kit's proxy), the pipeline policy and the library's own send sites,
 * so that all three key a request the same way.
 *
 * Azure Storage serves each partition from one partition server and limits the account as a whole
 * ("Scalability and performance targets for standard storage accounts": 20,000 requests per second
 * per account; 2,000 entities per second per table partition, 2,000 messages per second per queue;
 * a blob is its own partition). A partition, as the service partitions them:
 *
 * - Table: account + table + PartitionKey. The key is in the URL (`orders(PartitionKey='p',RowKey='r')`,
 *   or a query's `$filter=PartitionKey eq 'p'`), or in the body (an insert's JSON; an entity group
 *   transaction's `$batch`, whose operations all share one PartitionKey). A query across partitions
 *   and table-level calls (Create Table, `Tables`) have no partition: the account alone.
 * - Queue: account + queue ("Each message is a partition … all messages in a queue are served by one
 *   partition server", so the queue is the unit to slow down).
 * - Blob: account + container + blob name; container calls are keyed by the container.
 * - File: account + share + path.
 *
 * Keys are plain strings (`table:acct/orders/p`, `account:acct`), compared as they are.
 */

/** The keys a request is throttled by. */
export interface ThrottleScope {
  /** The account's key, `account:<name>`: the account-wide limit. */
  readonly account: string;
  /**
   * The partition's key (`table:<account>/<table>/<PartitionKey>`, `queue:<account>/<queue>`,
   * `blob:<account>/<container>/<blob>`, `file:<account>/<share>/<path>`), or `undefined` for a
   * request that no single partition serves (a query across partitions, a table or service call).
   */
  readonly partition: string | undefined;
}

/** The storage services, as their endpoints name them. */
export type StorageService = "blob" | "queue" | "table" | "file";

/** Options for {@link throttleScopeOf}. */
export interface ThrottleScopeOptions {
  /**
   * Which service the URL belongs to. Needed only for path-style URLs (Azurite, an IP address)
   * whose port is not Azurite's default one; an Azure host name (`acct.table.core.windows.net`)
   * says it itself.
   * @default guessed from the host name, or from Azurite's default ports (10000 blob, 10001 queue, 10002 table)
   */
  readonly service?: StorageService;
  /** The request body when it is text: an insert's or a `$batch`'s PartitionKey is read from it. */
  readonly body?: string;
  /** The PartitionKey, when the caller knows it (a table send site): it wins over the URL and the body. */
  readonly partitionKey?: string;
}

const SERVICES: ReadonlySet<string> = new Set(["blob", "queue", "table", "file", "dfs"]);
const AZURITE_PORTS: Readonly<Record<string, StorageService>> = { "10000": "blob", "10001": "queue", "10002": "table" };

/**
 * The {@link ThrottleScope} of a request to `url` (an SDK client's `url`, or a request's): its
 * account, and the partition that serves it.
 *
 * @example
 * ```ts
 * import { throttleScopeOf } from "azure-storage-concurrency/throttling";
 *
 * throttleScopeOf("https://acct.table.core.windows.net/orders(PartitionKey='p1',RowKey='r')");
 * // { account: "account:acct", partition: "table:acct/orders/p1" }
 * throttleScopeOf("http://127.0.0.1:10001/devstoreaccount1/jobs/messages");
 * // { account: "account:devstoreaccount1", partition: "queue:devstoreaccount1/jobs" }
 * ```
 */
export function throttleScopeOf(url: string, options: ThrottleScopeOptions = {}): ThrottleScope {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TypeError(`\`url\` must be an absolute URL, got ${JSON.stringify(String(url).slice(0, 80))}.`);
  }
  const hostLabels = parsed.hostname.split(".");
  const azureStyle = hostLabels.length > 2 && SERVICES.has(hostLabels[1]!);
  let segments = parsed.pathname.split("/").filter(Boolean).map(decodeSegment);
  let accountName: string;
  if (azureStyle) {
    accountName = hostLabels[0]!;
  } else {
    // Path-style (Azurite, an IP address, a proxy in front of either): the account is the first segment.
    accountName = segments[0] ?? parsed.host;
    segments = segments.slice(1);
  }
  const service: StorageService =
    options.service ??
    (azureStyle ? (hostLabels[1] === "dfs" ? "blob" : (hostLabels[1] as StorageService)) : undefined) ??
    AZURITE_PORTS[parsed.port] ??
    guessService(segments);
  const account = `account:${accountName}`;
  const partition = partitionOf(service, accountName, segments, parsed.searchParams, options);
  return { account, partition };
}

function partitionOf(
  service: StorageService,
  account: string,
  segments: readonly string[],
  query: URLSearchParams,
  options: ThrottleScopeOptions,
): string | undefined {
  if (service === "table") {
    if (segments[0] === "$batch" && options.body !== undefined) return partitionOfBatch(options.body);
    const table = tableOf(segments);
    if (table === undefined) return undefined;
    const key = options.partitionKey ?? partitionKeyInPath(segments) ?? partitionKeyInFilter(query.get("$filter"));
    const fromBody = key ?? (options.body === undefined ? undefined : partitionKeyInBody(options.body));
    return fromBody === undefined ? undefined : `table:${account}/${table}/${fromBody}`;
  }
  if (segments.length === 0) return undefined; // a service-level call (properties, listing)
  if (service === "queue") return `queue:${account}/${segments[0]}`;
  return `${service}:${account}/${segments.join("/")}`;
}

/**
 * An entity group transaction's partition: its operations' table and PartitionKey (one for all of
 * them, as the service requires), from the first request line of its body and the key in it.
 */
function partitionOfBatch(body: string): string | undefined {
  const line = /^(?:POST|PUT|MERGE|PATCH|DELETE|GET) (\S+) HTTP\/1\.1\r?$/m.exec(body);
  if (!line) return undefined;
  const partitionKey = partitionKeyInBody(body);
  if (partitionKey === undefined) return undefined;
  try {
    return throttleScopeOf(line[1]!, { service: "table", partitionKey }).partition;
  } catch {
    return undefined;
  }
}

/** The table a table request is about: `orders` of `orders(...)` or `orders()`; none for `Tables` and `$batch`. */
function tableOf(segments: readonly string[]): string | undefined {
  const first = segments[0];
  if (first === undefined || first === "$batch" || /^Tables(\(|$)/.test(first)) return undefined;
  return first.replace(/\(.*$/s, "");
}

/** `PartitionKey='p'` in `orders(PartitionKey='p',RowKey='r')` (quotes doubled inside, as OData writes them). */
function partitionKeyInPath(segments: readonly string[]): string | undefined {
  const match = /\(PartitionKey='((?:[^']|'')*)'/.exec(segments[0] ?? "");
  return match ? match[1]!.replace(/''/g, "'") : undefined;
}

/** `PartitionKey eq 'p'` in a query's filter, when the query is about one partition. */
function partitionKeyInFilter(filter: string | null): string | undefined {
  if (!filter) return undefined;
  const matches = [...filter.matchAll(/\bPartitionKey\s+eq\s+'((?:[^']|'')*)'/g)];
  // A filter with `or` may span partitions: only a single equality names one.
  if (matches.length !== 1 || /\bor\b/i.test(filter)) return undefined;
  return matches[0]![1]!.replace(/''/g, "'");
}

/**
 * The PartitionKey in a body: the first `(PartitionKey='…'` of a `$batch`'s request lines, or the
 * first `"PartitionKey":"…"` of an entity's JSON (every operation of a transaction has the same).
 * @example
 * ```ts
 * import { partitionKeyInBody } from "azure-storage-concurrency/throttling";
 *
 * partitionKeyInBody('{"PartitionKey":"2026-11","RowKey":"o-1"}'); // "2026-11"
 * ```
 */
export function partitionKeyInBody(body: string): string | undefined {
  const inUrl = /\(PartitionKey='((?:[^']|'')*)'/.exec(body);
  if (inUrl) return decodeSegment(inUrl[1]!).replace(/''/g, "'");
  const inJson = /"PartitionKey"\s*:\s*("(?:[^"\\]|\\.)*")/.exec(body);
  if (!inJson) return undefined;
  try {
    return JSON.parse(inJson[1]!) as string;
  } catch {
    return undefined;
  }
}

/** Path-style URL on an unknown port: a table request has parentheses or `$batch`; `…/messages` is a queue's. */
function guessService(segments: readonly string[]): StorageService {
  const first = segments[0] ?? "";
  if (first === "$batch" || first.includes("(") || first === "Tables") return "table";
  if (segments[1] === "messages") return "queue";
  return "blob";
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
