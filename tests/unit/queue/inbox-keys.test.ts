/**
 * The Table idempotency store's keys, checked before any request (issue 21): a RowKey prefix that
 * cannot be the start of another store's space, keys checked as they will be sent (escaped, with the
 * prefix) against the service's 1 KiB limit, and half of a surrogate pair refused with the table
 * toolkit's key error instead of the SDK's `URIError`. Pure checks: a recording stand-in for the
 * TableClient shows that nothing was sent.
 */
import type { TableClient } from "@azure/data-tables";
import { isTableKeyError, multiIndexTable, prefixUpperBound } from "../../../src/tables/index.js";
import { TableIdempotencyStore, type ClaimRequest } from "../../../src/idempotency/index.js";

/** A TableClient stand-in that records every call and answers none. */
function recordingClient(): { client: TableClient; calls: string[] } {
  const calls: string[] = [];
  const record =
    (name: string) =>
    (...args: unknown[]) => {
      calls.push(`${name}(${JSON.stringify(args[0])})`);
      return Promise.reject(new Error(`${name} must not be called`));
    };
  const client = {
    tableName: "inbox",
    url: "https://account.table.core.windows.net/inbox",
    createEntity: record("createEntity"),
    getEntity: record("getEntity"),
    updateEntity: record("updateEntity"),
    upsertEntity: record("upsertEntity"),
    deleteEntity: record("deleteEntity"),
    submitTransaction: record("submitTransaction"),
    listEntities: () => {
      calls.push("listEntities");
      throw new Error("listEntities must not be called");
    },
  };
  return { client: client as unknown as TableClient, calls };
}

const request = (overrides: Partial<ClaimRequest> = {}): ClaimRequest => ({
  key: "order-1",
  owner: "consumer-a",
  messageId: "m-1",
  dequeueCount: 1,
  ttlInMs: 30_000,
  ...overrides,
});

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => new Error("expected a rejection"),
    (error: unknown) => error,
  );
}

describe("TableIdempotencyStore's rowKeyPrefix", () => {
  it.each(["in:b", "inbox", "inbox_", "in:b%", "in/b:", "a\uD800:"])(
    "refuses %j at construction, naming the option",
    (prefix) => {
      const { client } = recordingClient();
      expect(() => new TableIdempotencyStore(client, { rowKeyPrefix: prefix })).toThrow(RangeError);
      expect(() => new TableIdempotencyStore(client, { rowKeyPrefix: prefix })).toThrow(/`rowKeyPrefix`/);
    },
  );

  it("says which separator a prefix must end with, and why", () => {
    const { client } = recordingClient();
    expect(() => new TableIdempotencyStore(client, { rowKeyPrefix: "in:b" })).toThrow(/must end with ':'.*share rows/);
  });

  it.each(["inbox:", "in:", "in:b:", "tenant-7:inbox:", "a:b:c:"])("accepts %j", (prefix) => {
    const { client } = recordingClient();
    expect(() => new TableIdempotencyStore(client, { rowKeyPrefix: prefix })).not.toThrow();
  });

  it("keeps two stores' rows apart even when one prefix starts the other: ':' is escaped in keys", () => {
    const { client } = recordingClient();
    const outer = new TableIdempotencyStore(client, { rowKeyPrefix: "in:" });
    const inner = new TableIdempotencyStore(client, { rowKeyPrefix: "in:b:" });
    expect(outer.rowOf("b:x", "p").rowKey).toBe("in:b%3Ax");
    expect(inner.rowOf("x", "p").rowKey).toBe("in:b:x");
    // Every key of the outer store stays out of the inner store's space.
    for (const key of ["b:x", "b:", "b%3Ax", "b", "b:x:y"]) {
      expect(outer.rowOf(key, "p").rowKey.startsWith("in:b:")).toBe(false);
    }
    // The partition key keeps its own escaping: ':' is allowed there.
    expect(outer.rowOf("k", "tenant:7").partitionKey).toBe("tenant:7");
  });
});

describe("TableIdempotencyStore's keys, as they will be sent", () => {
  it("takes a key whose RowKey is exactly 1 KiB (512 UTF-16 code units with the prefix)", () => {
    const { client } = recordingClient();
    const store = new TableIdempotencyStore(client);
    expect(store.rowOf("k".repeat(512 - "inbox:".length)).rowKey).toHaveLength(512);
  });

  it.each([
    ["a 600-character key", request({ key: "k".repeat(600) }), "rowKey"],
    ["a 507-character key (513 with the prefix)", request({ key: "k".repeat(507) }), "rowKey"],
    ["a key that escaping makes too long", request({ key: "/".repeat(170) }), "rowKey"], // 510 once escaped
    ["a 600-character partition key", request({ partitionKey: "p".repeat(600) }), "partitionKey"],
    ["a 600-character key with its own partition", request({ key: "k".repeat(600), partitionKey: "p" }), "rowKey"],
  ])("refuses %s with a TableKeyError, before any request", async (_, r, keyName) => {
    const { client, calls } = recordingClient();
    const store = new TableIdempotencyStore(client);
    for (const firstDelivery of [false, true]) {
      const error = await rejection(store.claim({ ...r, firstDelivery }));
      expect(isTableKeyError(error)).toBe(true);
      expect(error).toMatchObject({ keyName, rule: "too-long" });
      expect((error as Error).message).toMatch(/512 \(1 KiB\).*shorter key, or a hash/);
    }
    expect(calls).toEqual([]);
  });

  it("counts the prefix and the escaping in the length it reports", async () => {
    const { client } = recordingClient();
    const store = new TableIdempotencyStore(client, { rowKeyPrefix: "tenant-7:inbox:" });
    const error = await rejection(store.claim(request({ key: `${"k".repeat(496)}/` })));
    expect((error as Error).message).toMatch(/is 497 characters, which makes a RowKey of 514 UTF-16 code units/);
    expect((error as Error).message).toMatch(/the prefix 'tenant-7:inbox:'/);
  });

  it.each([
    ["a lone high surrogate in the key", request({ key: "order-\uD83D" }), "rowKey"],
    ["a lone low surrogate in the key", request({ key: "\uDE00order" }), "rowKey"],
    ["a lone surrogate in the partition key", request({ partitionKey: "tenant-\uD800-7" }), "partitionKey"],
  ])("refuses %s with a TableKeyError (not a URIError), before any request", async (_, r, keyName) => {
    const { client, calls } = recordingClient();
    const store = new TableIdempotencyStore(client);
    const error = await rejection(store.claim(r));
    expect(error).not.toBeInstanceOf(URIError);
    expect(isTableKeyError(error)).toBe(true);
    expect(error).toMatchObject({ keyName, rule: "unpaired-surrogate" });
    expect((error as Error).message).toMatch(
      /idempotency .*unpaired UTF-16 surrogate U\+D[89A-F][0-9A-F]{2} at position/,
    );
    expect(calls).toEqual([]);
  });

  it("takes whole characters outside the BMP", () => {
    const { client } = recordingClient();
    expect(new TableIdempotencyStore(client).rowOf("order-😀").rowKey).toBe("inbox:order-😀");
  });
});

describe("multiIndexTable().list()'s keyPrefix", () => {
  const { client, calls } = recordingClient();
  const runners = multiIndexTable<{ bib: number; [k: string]: unknown }>(client, {
    partitionKey: () => "race",
    indexes: { BIB: (r) => String(r.bib) },
  });

  it("refuses half of a surrogate pair with the key check, before any request", async () => {
    const error = await rejection(runners.list("race", "BIB", { keyPrefix: "0\uD83D" }));
    expect(error).not.toBeInstanceOf(URIError);
    expect(isTableKeyError(error)).toBe(true);
    expect(error).toMatchObject({ keyName: "rowKey", rule: "unpaired-surrogate" });
    expect(calls).toEqual([]);
  });

  it("refuses a keyPrefix that is not a string", async () => {
    await expect(runners.list("race", "BIB", { keyPrefix: 7 as unknown as string })).rejects.toThrow(TypeError);
    expect(calls).toEqual([]);
  });
});

describe("prefixUpperBound", () => {
  const wellFormed = (text: string) =>
    !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);

  it.each([
    ["AGE:", "AGE;"],
    ["x\uD83D\uDE00", "x\uD83D\uDE01"], // 😀 -> 😁
    ["x\uD83D\uDFFF", "x\uD83E\uDC00"], // U+1F7FF: the low half cannot step, the high one does
    ["x\uDBFF\uDFFF", "x\uE000"], // U+10FFFF: past the surrogate range
    ["a\uD7FF", "a\uD800\uDC00"], // U+D7FF: the next well-formed string is U+10000
    ["a\uFFFF", "b"],
  ])("gives a well-formed bound above every key that starts with %j", (prefix, bound) => {
    const upper = prefixUpperBound(prefix)!;
    expect(upper).toBe(bound);
    expect(wellFormed(upper)).toBe(true);
    for (const tail of ["", "\uFFFF\uFFFF", "\uDBFF\uDFFF", "zz"]) expect(prefix + tail < upper).toBe(true);
    expect(encodeURIComponent(upper)).toBeTruthy();
  });
});
