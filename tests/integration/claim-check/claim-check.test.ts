/**
 * The claim-check against real storage (issue 25): the size threshold at its edges as the service
 * counts them (UTF-8 bytes: exactly the limit, one byte over, multi-byte characters, base64 bytes,
 * the envelope of a message with a key), payloads round-tripped with each compression, and the
 * lifecycle: deleted after settling, kept for the poison queue (whose envelope names it), swept
 * only past its bound.
 */
import { randomBytes } from "node:crypto";
import type { ContainerClient } from "@azure/storage-blob";
import type { QueueClient } from "@azure/storage-queue";
import { ClaimCheck, isClaimCheckSendError, MAX_MESSAGE_BYTES, statusOf, serviceCodeOf } from "../../../src/index.js";
import { blobService, queueService, uniqueName } from "../../support/storage.js";
import { describeStorage } from "../../support/target.js";

let container: ContainerClient;
let queue: QueueClient;
let claimCheck: ClaimCheck;

beforeAll(async () => {
  container = blobService().getContainerClient(uniqueName("claimcheck"));
  queue = queueService().getQueueClient(uniqueName("claimcheck"));
  await queue.create();
  claimCheck = new ClaimCheck(container); // the container is created by the first upload
});
afterAll(async () => {
  await queue.delete();
  await container.deleteIfExists();
});

async function payloadNames(): Promise<string[]> {
  const names: string[] = [];
  for await (const blob of container.listBlobsFlat()) names.push(blob.name);
  return names;
}

/** Sends `body`, receives it back through the claim-check, deletes it; what was sent and what came back. */
async function roundTrip(body: string | Uint8Array, options: Parameters<ClaimCheck["sendMessage"]>[2] = {}) {
  const sent = await claimCheck.sendMessage(queue, body, options);
  const { receivedMessageItems } = await claimCheck.receiveMessages(queue, { numberOfMessages: 1 });
  const [received] = receivedMessageItems;
  expect(received?.error).toBeUndefined();
  const deleted = await claimCheck.deleteMessage(queue, received!);
  return { sent, received: received!, deleted };
}

describeStorage("ClaimCheck: where the threshold is", () => {
  it("the service takes 65,536 UTF-8 bytes and refuses one more: the limit the claim-check uses", async () => {
    await queue.sendMessage("a".repeat(MAX_MESSAGE_BYTES)); // fits
    const refused = await queue.sendMessage("a".repeat(MAX_MESSAGE_BYTES + 1)).catch((error: unknown) => error);
    expect(statusOf(refused)).toBe(413);
    expect(serviceCodeOf(refused)).toBe("RequestBodyTooLarge");
    await queue.clearMessages();
  });

  // Multi-byte characters count as their UTF-8 bytes (the SDK's recorded test "enqueue, peek, dequeue
  // with 64KB characters including special char" sends a 64 KiB UTF-8 buffer to the service). They
  // sit at the start here: Azurite decodes a request body's 64 KiB chunks one by one
  // (src/queue/generated/utils/serializer.ts, readRequestIntoText joins Buffers as strings), so a
  // character split across two chunks arrives as replacement characters; the service has no such limit.
  it.each([
    ["ASCII, exactly the limit", "a".repeat(MAX_MESSAGE_BYTES), false],
    ["ASCII, one byte over", "a".repeat(MAX_MESSAGE_BYTES + 1), true],
    [
      "3-byte characters, exactly the limit (20,000 x € + 5,536 bytes)",
      `${"€".repeat(20_000)}${"a".repeat(5_536)}`,
      false,
    ],
    ["3-byte characters, one byte over", `${"€".repeat(20_000)}${"a".repeat(5_537)}`, true],
    ["4-byte characters (UTF-16 pairs), exactly the limit", `${"😀".repeat(15_000)}${"a".repeat(5_536)}`, false],
    ["4-byte characters, one byte over", `${"😀".repeat(15_000)}${"a".repeat(5_537)}`, true],
  ])("text, %s", async (_case, text, stored) => {
    const { sent, received } = await roundTrip(text);
    expect(sent.payloadBlob !== undefined).toBe(stored);
    expect(sent.messageBytes).toBe(stored ? sent.messageBytes : MAX_MESSAGE_BYTES);
    expect(received.messageText).toBe(text);
    expect(received.rawMessageText === text).toBe(!stored);
  });

  it.each([
    ["exactly 48 KiB (65,536 base64 characters)", 48 * 1024, false],
    ["one byte over", 48 * 1024 + 1, true],
  ])("bytes, %s: sent as base64, as .NET and Functions read them", async (_case, size, stored) => {
    const bytes = randomBytes(size);
    const { sent, received } = await roundTrip(bytes);
    expect(sent.payloadBlob !== undefined).toBe(stored);
    expect(Buffer.from(received.messageText, "base64").equals(bytes)).toBe(true);
  });

  it("a message with an idempotency key counts its envelope, JSON escapes included", async () => {
    const key = "order-1";
    // {"kind":"azure-storage-concurrency/claim-check@1","key":"order-1","text":"…"}: the envelope's own bytes.
    const overhead = Buffer.byteLength(
      JSON.stringify({ kind: "azure-storage-concurrency/claim-check@1", key, text: "" }),
    );
    const fits = "q".repeat(MAX_MESSAGE_BYTES - overhead);
    const over = `${fits}q`;
    const quoted = '"'.repeat((MAX_MESSAGE_BYTES - overhead) / 2 + 1); // each quote is 2 bytes once escaped
    for (const [text, stored] of [
      [fits, false],
      [over, true],
      [quoted, true],
    ] as const) {
      const { sent, received } = await roundTrip(text, { idempotencyKey: key });
      expect(sent.payloadBlob !== undefined).toBe(stored);
      expect(received.messageText).toBe(text);
      expect(received.idempotencyKey).toBe(key);
    }
  });

  it("bytes with an idempotency key count their base64 inside the envelope", async () => {
    // A key whose length leaves room for a whole number of base64 quads, so that exactly the limit is reachable.
    let key = "order-";
    const overheadOf = (k: string) =>
      Buffer.byteLength(JSON.stringify({ kind: "azure-storage-concurrency/claim-check@1", key: k, text: "" }));
    while ((MAX_MESSAGE_BYTES - overheadOf(key)) % 4 !== 0) key += "x";
    const fitting = ((MAX_MESSAGE_BYTES - overheadOf(key)) / 4) * 3; // bytes whose base64 fills the envelope exactly
    for (const [size, stored] of [
      [fitting, false],
      [fitting + 1, true],
    ] as const) {
      const bytes = randomBytes(size);
      const { sent, received } = await roundTrip(bytes, { idempotencyKey: key });
      expect(sent.payloadBlob !== undefined).toBe(stored);
      if (!stored) expect(sent.messageBytes).toBe(MAX_MESSAGE_BYTES);
      expect(Buffer.from(received.messageText, "base64").equals(bytes)).toBe(true);
      expect(received.idempotencyKey).toBe(key);
    }
  });

  it("a lower threshold sends smaller messages to blobs", async () => {
    const small = new ClaimCheck(container, { thresholdInBytes: 1_000 });
    const sent = await small.sendMessage(queue, "x".repeat(1_001));
    expect(sent.payloadBlob).toBeDefined();
    const [received] = (await small.receiveMessages(queue)).receivedMessageItems;
    expect(received!.messageText).toBe("x".repeat(1_001));
    await small.deleteMessage(queue, received!);
  });
});

describeStorage("ClaimCheck: payloads", () => {
  it.each(["none", "gzip", "brotli"] as const)(
    "round-trips a 300 KB payload with compression %s; deleting the message deletes the payload",
    async (compression) => {
      const text = JSON.stringify({ rows: Array.from({ length: 6_000 }, (_, i) => ({ i, name: `row ${i}` })) });
      const { sent, received, deleted } = await roundTrip(text, { compression, contentType: "application/json" });
      expect(received.messageText).toBe(text);
      expect(received.payloadBlob).toBe(sent.payloadBlob);
      expect(received.idempotencyKey).toBe(sent.payloadBlob); // copies of one send share a key
      expect(deleted.payload).toBe("deleted");
      expect(await payloadNames()).not.toContain(sent.payloadBlob);
    },
  );

  it("records the content type and the compression on the blob", async () => {
    const sent = await claimCheck.sendMessage(queue, "y".repeat(100_000), {
      compression: "gzip",
      contentType: "text/csv",
      messageTimeToLive: 60,
    });
    const properties = await container.getBlobClient(sent.payloadBlob!).getProperties();
    expect(properties.contentType).toBe("text/csv");
    expect(properties.contentEncoding).toBe("gzip");
    expect(properties.contentLength).toBeLessThan(1_000);
    const deliverableUntil = Number(properties.metadata!.deliverableuntil);
    expect(deliverableUntil).toBeGreaterThan(Date.now() + 59_000);
    expect(deliverableUntil).toBeLessThan(Date.now() + 60_000 + 4 * 30_000 + 1_000);
    await queue.clearMessages();
  });

  it("a reference whose payload is gone comes back with a typed error, not a payload", async () => {
    const sent = await claimCheck.sendMessage(queue, "z".repeat(70_000));
    await container.getBlobClient(sent.payloadBlob!).delete();
    const [received] = (await claimCheck.receiveMessages(queue)).receivedMessageItems;
    expect(received!.error).toMatchObject({ code: "ClaimCheckPayloadMissing", blobName: sent.payloadBlob });
    await queue.clearMessages();
  });
});

describeStorage("ClaimCheck: orphans and the sweep", () => {
  it("a send that fails after the upload leaves the payload for the sweep, which removes it only past its bound", async () => {
    const sweeper = new ClaimCheck(container, {
      blobPrefix: `sweep-${randomBytes(4).toString("hex")}/`,
      sweepGraceInMs: 60_000,
    });
    const missing = queueService().getQueueClient(uniqueName("nosuchqueue"));
    const beforeSend = Date.now();
    const error = await sweeper
      .sendMessage(missing, "o".repeat(80_000), { messageTimeToLive: 30 })
      .catch((e: unknown) => e);
    expect(isClaimCheckSendError(error)).toBe(true);
    expect(error).toMatchObject({ mayHaveBeenSent: false, statusCode: 404 });
    const orphan = (error as { payloadBlob: string }).payloadBlob;

    const kept = await sweeper.sweep();
    expect(kept).toMatchObject({ deleted: 0 });
    expect(await payloadNames()).toContain(orphan);

    // A second before its message's time to live (30 s), the send window (4 x 30 s) and the grace
    // (60 s) have all passed, counted from before the send: its message may still be read, it stays.
    const almost = await sweeper.sweep({ now: new Date(beforeSend + 30_000 + 4 * 30_000 + 60_000 - 1_000) });
    expect(almost).toMatchObject({ deleted: 0 });
    expect(await payloadNames()).toContain(orphan);

    // Past its message's time to live (30 s), the send window and the grace (60 s):
    const later = await sweeper.sweep({ now: new Date(Date.now() + 30_000 + 4 * 30_000 + 60_000 + 1_000) });
    expect(later).toMatchObject({ deleted: 1, failed: 0 });
    expect(await payloadNames()).not.toContain(orphan);
  });

  it("never sweeps a payload kept for the poison queue", async () => {
    const sweeper = new ClaimCheck(container, {
      blobPrefix: `poisoned-${randomBytes(4).toString("hex")}/`,
      sweepGraceInMs: 0,
    });
    const sent = await sweeper.sendMessage(queue, "p".repeat(70_000), { messageTimeToLive: 1 });
    const raw = (await queue.receiveMessages()).receivedMessageItems[0]!.messageText;
    expect(await sweeper.keepPayload(raw)).toBe(sent.payloadBlob);
    expect(await sweeper.deletePayload(raw)).toBe("kept");
    const result = await sweeper.sweep({ now: new Date(Date.now() + 3_600_000) });
    expect(result).toMatchObject({ deleted: 0, poisoned: 1 });
    expect(await payloadNames()).toContain(sent.payloadBlob);
    await queue.clearMessages();
  });
});
