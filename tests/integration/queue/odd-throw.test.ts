/**
 * Regression test for issue 21 (security finding: one safe description of any thrown value),
 * against Azurite, OpenTelemetry off: a handler that throws a null-prototype object made the
 * consumer's failure path throw ("Cannot convert object to primitive value"), so the message was
 * neither retried nor poisoned on that reception, and was poisoned later with no reason. Now it is
 * an ordinary failure: reported with a description, and poisoned at once (maxDequeueCount 1) with
 * a reason. tests/integration/explorer/hostile-values.test.ts covers every odd value, with and
 * without OpenTelemetry, in a process of its own.
 */
import { parsePoisonMessage, QueueConsumer, textCodec } from "../../../src/queue/index.js";
import { newQueue, quick, record } from "./consumer-support.js";

it("a handler throwing a null-prototype object: the message fails and is poisoned at once, with a reason", async () => {
  const { queue, poison } = await newQueue("oddthrow");
  const consumer = new QueueConsumer(
    queue,
    async () => {
      throw Object.create(null) as object;
    },
    { ...quick, codec: textCodec, maxDequeueCount: 1 },
  );
  const events = record(consumer);
  await queue.sendMessage("hello");
  await consumer.start();
  try {
    const [poisoned] = await events.next("poisoned", 1, 10_000);
    expect(poisoned!.message.dequeueCount).toBe(1); // on the reception that failed, not a later one
    expect(poisoned!.reason).toMatch(/Failed on each of 1 receptions .*last error: a thrown object without a message/);
    const [failed] = events.of("failed");
    expect(failed?.willRetry).toBe(false);
    expect(events.of("error")).toEqual([]);
  } finally {
    await consumer.stop();
  }
  const { receivedMessageItems } = await poison.receiveMessages({ numberOfMessages: 32 });
  expect(receivedMessageItems).toHaveLength(1);
  expect(parsePoisonMessage(receivedMessageItems[0]!.messageText)).toMatchObject({
    messageText: "hello",
    reason: expect.stringMatching(/last error: a thrown object without a message/) as unknown,
  });
  expect((await queue.peekMessages()).peekedMessageItems).toHaveLength(0);
});
