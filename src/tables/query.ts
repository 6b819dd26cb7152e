/**
 * Queries that say what they cost: filters built with the quoting done right, and paging that
 * follows continuation tokens while counting round trips. A query that crosses partition-server
 * boundaries gets a continuation token at each one, so every boundary is one more request
 * (the partitioning guide: "a continuation token ... adds at least one more request").
 */
import type { TableClient, TableEntityResult } from "@azure/data-tables";
import { checkNumber, checkOptionalSignal, optionalNumber } from "../internal/validate.js";
import { withTimeLimit } from "../internal/time-limit.js";
import { sdkTracing } from "../observability/scope.js";
import { classifyQuery, type QueryShape } from "./query-shape.js";

/**
 * Quotes a string for an OData filter: wraps it in single quotes and doubles the single quotes in it.
 *
 * @example
 * ```ts
 * import { odataString } from "azure-storage-concurrency/tables";
 *
 * `PartitionKey eq ${odataString("O'Brien")}`; // "PartitionKey eq 'O''Brien'"
 * ```
 */
export function odataString(value: string): string {
  if (typeof value !== "string") throw new TypeError("`value` must be a string.");
  return `'${value.replace(/'/g, "''")}'`;
}

/**
 * The smallest string greater than every string that starts with `prefix`: the exclusive upper
 * bound of a prefix range (`"AGE:"` gives `"AGE;"`).
 *
 * @example
 * ```ts
 * import { prefixUpperBound } from "azure-storage-concurrency/tables";
 *
 * prefixUpperBound("AGE:"); // "AGE;"
 * ```
 */
export function prefixUpperBound(prefix: string): string | undefined {
  if (typeof prefix !== "string") throw new TypeError("`prefix` must be a string.");
  for (let i = prefix.length - 1; i >= 0; i--) {
    const code = prefix.charCodeAt(i);
    if (code === 0xffff) continue;
    const head = prefix.slice(0, i);
    // The bound travels in a URL, so it must be well-formed UTF-16 (no half of a surrogate pair),
    // and still above every string that starts with the prefix, in code-unit order.
    if (code === 0xdfff && isHighSurrogate(head.charCodeAt(head.length - 1))) {
      // The last of a pair's low halves: step the high half instead (…\uD83D\uDFFF gives …\uD83E\uDC00).
      const high = head.charCodeAt(head.length - 1);
      const before = head.slice(0, -1);
      return high < 0xdbff ? `${before}${String.fromCharCode(high + 1)}\uDC00` : `${before}\uE000`;
    }
    if (code + 1 === 0xd800) return `${head}\uD800\uDC00`; // after U+D7FF, the first character of the surrogate range
    return head + String.fromCharCode(code + 1);
  }
  return undefined; // empty, or all U+FFFF: no upper bound
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** What {@link keyFilter} selects. */
export interface KeyFilterOptions {
  /** An exact PartitionKey. */
  readonly partitionKey?: string;
  /** RowKeys that start with this (a row range scan when `partitionKey` is given). */
  readonly rowKeyPrefix?: string;
  /** RowKey at least this. */
  readonly rowKeyFrom?: string;
  /** RowKey below this. */
  readonly rowKeyBefore?: string;
}

/**
 * Builds a filter from key conditions, quoting every value: an exact PartitionKey and a RowKey
 * prefix or range make a row range scan, the second-best kind of query.
 *
 * @example
 * ```ts
 * import { keyFilter } from "azure-storage-concurrency/tables";
 *
 * keyFilter({ partitionKey: "2011 New York City Marathon__Full", rowKeyPrefix: "AGE:055" });
 * // "PartitionKey eq '2011 New York City Marathon__Full' and RowKey ge 'AGE:055' and RowKey lt 'AGE:056'"
 * ```
 */
export function keyFilter(options: KeyFilterOptions): string {
  const parts: string[] = [];
  if (options.partitionKey !== undefined) parts.push(`PartitionKey eq ${odataString(options.partitionKey)}`);
  if (options.rowKeyPrefix !== undefined && options.rowKeyPrefix !== "") {
    parts.push(`RowKey ge ${odataString(options.rowKeyPrefix)}`);
    const upper = prefixUpperBound(options.rowKeyPrefix);
    if (upper !== undefined) parts.push(`RowKey lt ${odataString(upper)}`);
  }
  if (options.rowKeyFrom !== undefined) parts.push(`RowKey ge ${odataString(options.rowKeyFrom)}`);
  if (options.rowKeyBefore !== undefined) parts.push(`RowKey lt ${odataString(options.rowKeyBefore)}`);
  return parts.join(" and ");
}

/** Options for {@link queryEntityPages} and {@link queryEntities}. */
export interface QueryEntitiesOptions {
  /** The OData filter; none reads the whole table. */
  readonly filter?: string;
  /** Only these properties. */
  readonly select?: readonly string[];
  /**
   * At most this many entities per response (the service sends at most 1,000).
   * @default 1000
   */
  readonly pageSize?: number;
  /**
   * Stop after this many round trips; the result's `continuationToken` resumes from there.
   * @default Infinity
   */
  readonly maxRoundTrips?: number;
  /** Resume a query from a token a previous call returned. */
  readonly continuationToken?: string;
  /** Cancels the query. */
  readonly abortSignal?: AbortSignal;
  /**
   * The client-side time limit of each round trip, in milliseconds: a page whose answer does not
   * come within it fails the query with a transient `StorageRequestError` (code `RequestTimedOut`),
   * so a query never waits for ever. A query only reads: running it again is safe.
   * @default 30000
   */
  readonly requestTimeoutInMs?: number;
}

/** One response of a query. */
export interface EntityPage<T extends object> {
  /** The entities of this response, possibly none. */
  readonly entities: readonly TableEntityResult<T>[];
  /** Which round trip this was, from 1. */
  readonly roundTrip: number;
  /** Where the next page starts; undefined after the last one. */
  readonly continuationToken: string | undefined;
}

/** The default client-side time limit of one page of a query. */
const QUERY_PAGE_TIMEOUT_IN_MS = 30_000;

/** The part of a `TableClient` queries use. */
export type QueryClient = Pick<TableClient, "listEntities">;

function settings(options: QueryEntitiesOptions) {
  checkOptionalSignal("abortSignal", options.abortSignal);
  return {
    pageSize: checkNumber("pageSize", options.pageSize ?? 1000, { min: 1, max: 1000, integer: true }),
    requestTimeoutInMs: optionalNumber("requestTimeoutInMs", options.requestTimeoutInMs, QUERY_PAGE_TIMEOUT_IN_MS, {
      min: 1,
    }),
    maxRoundTrips: checkNumber("maxRoundTrips", options.maxRoundTrips ?? Infinity, {
      min: 1,
      integer: true,
      allowInfinity: true,
    }),
  };
}

/**
 * The responses of a query, one per round trip, following continuation tokens. A response may be
 * empty and still carry a token (the service stops at partition-server boundaries and time limits).
 *
 * @example
 * ```ts
 * import { queryEntityPages } from "azure-storage-concurrency/tables";
 *
 * for await (const page of queryEntityPages(table, { filter: "Age gt 50" })) {
 *   console.log(`round trip ${page.roundTrip}: ${page.entities.length} entities`);
 * }
 * ```
 */
export async function* queryEntityPages<T extends object = Record<string, unknown>>(
  client: QueryClient,
  options: QueryEntitiesOptions = {},
): AsyncGenerator<EntityPage<T>, void, undefined> {
  const { pageSize, maxRoundTrips, requestTimeoutInMs } = settings(options);
  const queryOptions = {
    ...(options.filter ? { filter: options.filter } : {}),
    ...(options.select ? { select: [...options.select] } : {}),
  };
  let continuationToken = options.continuationToken;
  for (let roundTrip = 1; ; roundTrip++) {
    // One request per page, each under its own time limit: the SDK's iterator takes one signal for
    // the whole query, so each page starts a new one from the previous page's token.
    const from = continuationToken;
    const page = await withTimeLimit(
      `read page ${roundTrip} of a query${options.filter ? ` (${options.filter})` : ""}`,
      requestTimeoutInMs,
      options.abortSignal,
      async (abortSignal) => {
        const pages = client
          .listEntities<T>({ queryOptions, abortSignal, tracingOptions: sdkTracing() })
          .byPage({ maxPageSize: pageSize, ...(from ? { continuationToken: from } : {}) });
        const next = await pages.next();
        return next.done ? undefined : next.value;
      },
    );
    if (!page) return;
    continuationToken = (page as { continuationToken?: string }).continuationToken || undefined;
    yield { entities: page, roundTrip, continuationToken };
    if (!continuationToken || roundTrip >= maxRoundTrips) return;
  }
}

/** What {@link queryEntities} read. */
export interface QueryEntitiesResult<T extends object> {
  /** Every entity the query returned, in the service's order (PartitionKey, then RowKey). */
  readonly entities: TableEntityResult<T>[];
  /** Requests made: one per response. */
  readonly roundTrips: number;
  /** Set when `maxRoundTrips` stopped the query early: pass it back to continue. */
  readonly continuationToken: string | undefined;
  /** Which kind of query the filter is ({@link classifyQuery}). */
  readonly shape: QueryShape;
}

/**
 * Runs a query to the end (or to `maxRoundTrips`), following continuation tokens, and says how many
 * round trips it took and which kind of query it was.
 *
 * @example
 * ```ts
 * import { queryEntities, keyFilter } from "azure-storage-concurrency/tables";
 *
 * const race = "2011 New York City Marathon__Full";
 * const result = await queryEntities(table, { filter: keyFilter({ partitionKey: race, rowKeyPrefix: "AGE:" }) });
 * console.log(`${result.entities.length} runners, ${result.roundTrips} round trips, ${result.shape.kind}`);
 * ```
 */
export async function queryEntities<T extends object = Record<string, unknown>>(
  client: QueryClient,
  options: QueryEntitiesOptions = {},
): Promise<QueryEntitiesResult<T>> {
  const shape = classifyQuery(options.filter);
  const entities: TableEntityResult<T>[] = [];
  let roundTrips = 0;
  let continuationToken: string | undefined;
  for await (const page of queryEntityPages<T>(client, options)) {
    entities.push(...page.entities);
    roundTrips = page.roundTrip;
    continuationToken = page.continuationToken;
  }
  return { entities, roundTrips, continuationToken, shape };
}
