/**
 * The poison move (issue 12, items 13 and 14): it sends first and creates the poison queue only on
 * 404, so a poison queue client that may only add messages (a queue-scoped SAS, least privilege)
 * can poison; and the reason written to the poison queue and reported by the `poisoned` event is
 * redacted of secrets, as the log line is.
 */
import type { QueueClient } from "@azure/storage-queue";
import { exponentialBackoff, fixedBackoff } from "../../../src/retry/index.js";
import {
  parsePoisonMessage,
  QueueConsumer,
  type QueueConsumerEvents,
  type QueueConsumerOptions,
} from "../../../src/queue/index.js";
import { queueSasClient, queueService, uniqueName } from "../../support/storage.js";

const quick: QueueConsumerOptions<string> = {
  visibilityTimeoutInSeconds: 5,
  maxDequeueCount: 1,
  pollingBackoff: exponentialBackoff({ deltaInMs: 20, minInMs: 0, maxInMs: 200 }),
  retryBackoff: fixedBackoff({ delayInMs: 0 }),
};

async function poisonOne(
  queue: QueueClient,
  options: QueueConsumerOptions<string>,
  error: Error,
): Promise<QueueConsumerEvents["poisoned"]> {
  const consumer = new QueueConsumer(
    queue,
    async () => {
      throw error;
    },
    { ...quick, ...options },
  );
  const poisoned = new Promise<QueueConsumerEvents["poisoned"]>((resolve) => consumer.on("poisoned", resolve));
  await consumer.start();
  await queue.sendMessage("bad job");
  const event = await poisoned;
  await consumer.stop();
  return event;
}

async function poisonTexts(poison: QueueClient): Promise<string[]> {
  return (await poison.peekMessages({ numberOfMessages: 32 })).peekedMessageItems.map((m) => m.messageText);
}

describe("the poison move", () => {
  it("poisons through a poison queue client that may only add messages (no create rights)", async () => {
    const name = uniqueName("leastpoison");
    const queue = queueService().getQueueClient(name);
    const poison = queueService().getQueueClient(`${name}-poison`);
    await queue.create();
    await poison.create();
    try {
      const event = await poisonOne(
        queue,
        { poisonQueue: queueSasClient(poison.name, "a") },
        new Error("always fails"),
      );
      expect(event.poisonQueueName).toBe(poison.name);
      const texts = await poisonTexts(poison);
      expect(texts.map((t) => parsePoisonMessage(t)?.messageText)).toEqual(["bad job"]);
      expect((await queue.getProperties()).approximateMessagesCount).toBe(0);
    } finally {
      await queue.delete();
      await poison.delete();
    }
  });

  it("creates the poison queue when the send answers 404 (it was deleted after the start)", async () => {
    const name = uniqueName("recreate");
    const queue = queueService().getQueueClient(name);
    const poison = queueService().getQueueClient(`${name}-poison`);
    await queue.create();
    try {
      const consumer = new QueueConsumer(
        queue,
        async () => {
          throw new Error("fails");
        },
        quick,
      );
      const poisoned = new Promise<QueueConsumerEvents["poisoned"]>((resolve) => consumer.on("poisoned", resolve));
      await consumer.start(); // creates the poison queue
      await poison.delete();
      await queue.sendMessage("bad job");
      await poisoned;
      await consumer.stop();
      expect((await poisonTexts(poison)).map((t) => parsePoisonMessage(t)?.messageText)).toEqual(["bad job"]);
    } finally {
      await queue.delete();
      await poison.deleteIfExists();
    }
  });

  it("redacts secrets from the reason in the poison queue and in the `poisoned` event", async () => {
    const name = uniqueName("redact");
    const queue = queueService().getQueueClient(name);
    const poison = queueService().getQueueClient(`${name}-poison`);
    await queue.create();
    try {
      const leaky = new Error(
        "GET https://acct.blob.core.windows.net/c/b?sv=2024-05-04&sig=TOPSECRETsig%2F123 failed; AccountKey=TOPSECRETkey==; " +
          "request headers: { authorization: 'Bearer eyJTOPSECRET0iOiJKV1QifQ.eyJhdWQiOiJzdG9yYWdlIn0.TOPSECRETsignature' }",
      );
      const event = await poisonOne(queue, {}, leaky);
      const envelope = parsePoisonMessage((await poisonTexts(poison))[0]!)!;
      for (const reason of [event.reason, envelope.reason]) {
        expect(reason).toMatch(/sig=<redacted>/);
        expect(reason).toMatch(/AccountKey=<redacted>/);
        expect(reason).toMatch(/authorization: 'Bearer <redacted>'/);
        expect(reason).not.toMatch(/TOPSECRET/);
      }
    } finally {
      await queue.delete();
      await poison.deleteIfExists();
    }
  });

  it("poisonMessageFormat 'raw' moves the original text alone, as Azure Functions writes <queue>-poison (issue 23)", async () => {
    const name = uniqueName("rawpoison");
    const queue = queueService().getQueueClient(name);
    const poison = queueService().getQueueClient(`${name}-poison`);
    await queue.create();
    try {
      const event = await poisonOne(queue, { poisonMessageFormat: "raw" }, new Error("always fails"));
      expect(event.reason).toContain("always fails"); // the reason still reaches the event
      const texts = await poisonTexts(poison);
      expect(texts).toEqual(["bad job"]); // the original text, no envelope
      expect(parsePoisonMessage(texts[0]!)).toBeUndefined();

      // The default stays the envelope.
      await queue.clearMessages();
      await poison.clearMessages();
      await poisonOne(queue, {}, new Error("fails too"));
      const [enveloped] = await poisonTexts(poison);
      const envelope = parsePoisonMessage(enveloped!);
      expect(envelope?.messageText).toBe("bad job");
      expect(envelope?.reason).toContain("fails too");
    } finally {
      await queue.delete();
      await poison.deleteIfExists();
    }
  }, 60_000);

  it("refuses a poisonMessageFormat it does not know, by name", () => {
    const queue = queueService().getQueueClient(uniqueName("badformat"));
    expect(
      () => new QueueConsumer(queue, async () => undefined, { poisonMessageFormat: "json" as unknown as "raw" }),
    ).toThrow('`poisonMessageFormat` must be "envelope" or "raw", got "json".');
  });
});
