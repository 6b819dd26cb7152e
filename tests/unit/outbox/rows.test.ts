/**
 * The outbox's rows (issue 25): a payload survives its row (text and bytes, with and without
 * gzip, across 64 KiB properties), rows sort by sequence after the head and inside the relay's
 * range, and bad messages are refused by name before anything is written.
 */
import type { TableClient } from "@azure/data-tables";
import { isOutboxPayloadTooLargeError, MAX_OUTBOX_PAYLOAD_BYTES, TableOutbox } from "../../../src/index.js";
import {
  checkMessages,
  headRowKey,
  messageRow,
  messageRowKey,
  messageRowRange,
  readMessageRow,
} from "../../../src/outbox/rows.js";

describe("outbox rows", () => {
  it.each([
    ["text", "héllo €".repeat(30_000), "none"],
    ["text, gzip", "héllo €".repeat(30_000), "gzip"],
    ["bytes", new Uint8Array(200_000).map((_, i) => i % 251), "none"],
    ["empty text", "", "none"],
  ] as const)("hold a payload exactly: %s", async (_case, body, compression) => {
    const row = await messageRow(
      "p",
      "default",
      7,
      { body, timeToLiveInSeconds: 60, contentType: "x/y" },
      "id-7",
      compression,
    );
    const read = await readMessageRow({ ...row, etag: "W/1" });
    expect(read).toMatchObject({ id: "id-7", sequence: 7, timeToLiveInSeconds: 60, contentType: "x/y", etag: "W/1" });
    if (typeof body === "string") expect(read.body).toBe(body);
    else expect(Buffer.from(read.body as Uint8Array).equals(Buffer.from(body))).toBe(true);
    for (const [name, value] of Object.entries(row))
      if (value instanceof Uint8Array) expect([name, value.length <= 64 * 1024]).toEqual([name, true]);
  });

  it("refuses a payload larger than a row holds", async () => {
    const error = await messageRow(
      "p",
      "default",
      1,
      { body: new Uint8Array(MAX_OUTBOX_PAYLOAD_BYTES + 1) },
      "big",
      "none",
    ).catch((e: unknown) => e);
    expect(isOutboxPayloadTooLargeError(error)).toBe(true);
    expect(error).toMatchObject({
      code: "OutboxPayloadTooLarge",
      messageId: "big",
      payloadBytes: MAX_OUTBOX_PAYLOAD_BYTES + 1,
    });
  });

  it("sort by sequence, inside the relay's range, with the head below it", () => {
    const { after, before } = messageRowRange("orders");
    const keys = [1, 2, 10, 99_999].map((n) => messageRowKey("orders", n));
    expect([...keys].sort()).toEqual(keys);
    for (const key of keys) expect(key > after && key < before).toBe(true);
    expect(headRowKey("orders") < after).toBe(true);
    expect(messageRowKey("orders-eu", 1) > before || messageRowKey("orders-eu", 1) < after).toBe(true);
  });

  it("reading a row the outbox did not write names what is wrong", async () => {
    await expect(readMessageRow({ partitionKey: "p", rowKey: "r" })).rejects.toThrow(/has no OutboxId/);
    const row = await messageRow("p", "default", 1, { body: "abc" }, "id", "none");
    await expect(readMessageRow({ ...row, BodyBytes: 4 })).rejects.toThrow(/holds 3 payload bytes, not 4/);
  });

  it.each([
    [[{}], TypeError, /`messages\[0\]\.body` must be a string or a Uint8Array/],
    [[{ body: "a", id: "" }], TypeError, /`messages\[0\]\.id` must be a non-empty string/],
    [
      [
        { body: "a", id: "x" },
        { body: "b", id: "x" },
      ],
      RangeError,
      /`messages\[1\]\.id` "x" is given twice/,
    ],
    [[{ body: "a", timeToLiveInSeconds: 0 }], RangeError, /`messages\[0\]\.timeToLiveInSeconds`/],
    ["a", TypeError, /`messages` must be an array/],
  ])("refuses messages %j", (messages, type, message) => {
    expect(() => checkMessages(messages)).toThrow(type);
    expect(() => checkMessages(messages)).toThrow(message);
  });
});

describe("TableOutbox options", () => {
  const table = { submitTransaction: () => undefined, getEntity: () => undefined } as unknown as TableClient;
  it.each([
    [{ name: "a b" }, RangeError, /`name` "a b" must be 1 to 40 letters/],
    [{ compression: "brotli" }, TypeError, /`compression` must be "none" or "gzip"/],
    [{ requestTimeoutInMs: 0 }, RangeError, /`requestTimeoutInMs`/],
  ])("refuses %j", (options, type, message) => {
    expect(() => new TableOutbox(table, options as never)).toThrow(type);
    expect(() => new TableOutbox(table, options as never)).toThrow(message);
  });

  it("refuses actions of several partitions, and messages without one, before any request", async () => {
    const outbox = new TableOutbox(table);
    await expect(
      outbox.write(
        [
          ["create", { partitionKey: "a", rowKey: "1" }],
          ["create", { partitionKey: "b", rowKey: "1" }],
        ],
        [{ body: "x" }],
      ),
    ).rejects.toThrow(/must share one PartitionKey/);
    await expect(outbox.write([], [{ body: "x" }])).rejects.toThrow(/Give `options.partitionKey`/);
  });
});
