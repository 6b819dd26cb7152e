/**
 * The claim-check's pure logic (issue 25): envelopes (read back exactly, refused when broken),
 * payload names that sort by the time their messages stop being deliverable, and options checked
 * by name before any request.
 */
import type { ContainerClient } from "@azure/storage-blob";
import type { QueueClient } from "@azure/storage-queue";
import { ClaimCheck, isMessageDecodeError } from "../../../src/index.js";
import {
  blobEnvelopeOf,
  ENVELOPE_KIND,
  envelopeText,
  isEnvelopeText,
  messageBytes,
  parseEnvelope,
} from "../../../src/queue/envelope.js";
import { deliverableUntilOf, payloadBlobName, timeKey, timeKeyOfName } from "../../../src/claim-check/payload.js";

const container = { containerName: "payloads", getBlockBlobClient: () => ({}) } as unknown as ContainerClient;
const queue = {
  name: "q",
  sendMessage: () => Promise.reject(new Error("no request in unit tests")),
} as unknown as QueueClient;

describe("envelopes", () => {
  it("round-trip, and a plain text is no envelope", () => {
    const inline = { kind: ENVELOPE_KIND, key: "k", text: '{"a":"€"}' } as const;
    expect(parseEnvelope(envelopeText(inline))).toEqual(inline);
    const reference = {
      kind: ENVELOPE_KIND,
      key: "k",
      container: "c",
      blob: "claim-check/x",
      size: 10,
      stored: 8,
      compression: "gzip",
      contentType: "text/plain",
      body: "text",
    } as const;
    expect(parseEnvelope(envelopeText(reference))).toEqual(reference);
    expect(blobEnvelopeOf(envelopeText(reference))).toEqual(reference);
    expect(parseEnvelope('{"kind":"something else"}')).toBeUndefined();
    expect(isEnvelopeText("hello")).toBe(false);
  });

  it("a text that starts like an envelope but is broken cannot be decoded (the consumer poisons it)", () => {
    const prefix = `{"kind":"${ENVELOPE_KIND}"`;
    for (const broken of [
      `${prefix},`,
      `${prefix}}`,
      `${prefix},"key":"k","blob":"b"}`,
      `${prefix},"key":"k","container":"c","blob":"b","size":1,"stored":1,"compression":"lz4","body":"text"}`,
    ]) {
      let error: unknown;
      try {
        parseEnvelope(broken);
      } catch (e) {
        error = e;
      }
      expect(isMessageDecodeError(error)).toBe(true);
      expect(blobEnvelopeOf(broken)).toBeUndefined();
    }
  });

  it("counts UTF-8 bytes, as the service does", () => {
    expect(messageBytes("a")).toBe(1);
    expect(messageBytes("€")).toBe(3);
    expect(messageBytes("😀")).toBe(4);
    expect(messageBytes("\uD800")).toBe(3); // a lone surrogate travels as U+FFFD
  });
});

describe("payload names", () => {
  it("sort as the times their messages stop being deliverable, and give that time back", () => {
    const times = [Date.UTC(2030, 0, 2, 3, 4, 5), Date.UTC(2030, 0, 2, 3, 4, 6), Date.UTC(2031, 11, 31, 23, 59, 59)];
    const names = times.map((t) => payloadBlobName("p/", t));
    expect([...names].sort()).toEqual(names);
    expect(timeKeyOfName("p/", names[0]!)).toBe(timeKey(times[0]!));
    expect(timeKey(times[0]!)).toBe("20300102T030405Z");
    expect(timeKeyOfName("p/", "p/not-a-time/x")).toBeUndefined();
    expect(deliverableUntilOf({ deliverableuntil: "1700000000000" })).toBe(1_700_000_000_000);
    expect(deliverableUntilOf({ deliverableuntil: "soon" })).toBeUndefined();
    expect(deliverableUntilOf(undefined)).toBeUndefined();
  });
});

describe("ClaimCheck options", () => {
  it.each([
    [{ thresholdInBytes: 65_537 }, RangeError, /`thresholdInBytes` must be between 1 and 65536/],
    [{ thresholdInBytes: 0 }, RangeError, /`thresholdInBytes`/],
    [{ compression: "zstd" }, TypeError, /`compression` must be "none", "gzip" or "brotli"/],
    [{ requestTimeoutInMs: "5s" }, TypeError, /`requestTimeoutInMs` must be a number/],
    [{ sweepGraceInMs: -1 }, RangeError, /`sweepGraceInMs`/],
    [{ blobPrefix: "a?b" }, RangeError, /`blobPrefix`/],
  ])("refuses %j", (options, type, message) => {
    expect(() => new ClaimCheck(container, options as never)).toThrow(type);
    expect(() => new ClaimCheck(container, options as never)).toThrow(message);
  });

  it("refuses a client that is not a ContainerClient", () => {
    expect(() => new ClaimCheck({} as ContainerClient)).toThrow(/`containerClient` must be a ContainerClient/);
  });

  it.each([
    [{ messageTimeToLive: -1 }, RangeError, /`messageTimeToLive` must not be -1/],
    [{ messageTimeToLive: 0 }, RangeError, /`messageTimeToLive`/],
    [{ visibilityTimeout: 60, messageTimeToLive: 60 }, RangeError, /`visibilityTimeout` \(60 s\) must be shorter/],
    [{ idempotencyKey: "" }, TypeError, /`idempotencyKey` must be a non-empty string/],
    [{ idempotencyKey: "k".repeat(513) }, RangeError, /`idempotencyKey` has 513 characters/],
    [{ abortSignal: "stop" }, TypeError, /`abortSignal` must be an AbortSignal/],
  ])("a send refuses %j before any request", async (options, type, message) => {
    const claimCheck = new ClaimCheck(container);
    await expect(claimCheck.sendMessage(queue, "x", options as never)).rejects.toThrow(type);
    await expect(claimCheck.sendMessage(queue, "x", options as never)).rejects.toThrow(message);
  });
});
