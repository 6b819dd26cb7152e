/**
 * Invalid options are typed errors that name the option, thrown when the consumer is created,
 * before any request (the fake queue client records every call and must see none).
 */
import type { QueueClient } from "@azure/storage-queue";
import { MemoryIdempotencyStore } from "../../../src/idempotency/index.js";
import { QueueConsumer, type QueueConsumerOptions } from "../../../src/queue/index.js";

function fakeQueue() {
  const calls: string[] = [];
  const record = (name: string) => async () => {
    calls.push(name);
    return { receivedMessageItems: [] };
  };
  const queue = {
    name: "orders",
    url: "http://127.0.0.1:10001/devstoreaccount1/orders",
    receiveMessages: record("receiveMessages"),
    updateMessage: record("updateMessage"),
    deleteMessage: record("deleteMessage"),
    sendMessage: record("sendMessage"),
  } as unknown as QueueClient;
  return { queue, calls };
}

const handler = async () => undefined;

describe("QueueConsumer options", () => {
  const invalid: [string, QueueConsumerOptions<string>, RegExp, ErrorConstructor][] = [
    ["batchSize above the service's 32", { batchSize: 33 }, /`batchSize` must be between 1 and 32, got 33/, RangeError],
    ["batchSize not whole", { batchSize: 2.5 }, /`batchSize` must be a whole number/, RangeError],
    ["concurrency 0", { concurrency: 0 }, /`concurrency` must be at least 1/, RangeError],
    [
      "threshold not below concurrency",
      { concurrency: 4, newBatchThreshold: 4 },
      /`newBatchThreshold` \(4\) must be less than `concurrency` \(4\)/,
      RangeError,
    ],
    [
      "visibility timeout 0",
      { visibilityTimeoutInSeconds: 0 },
      /`visibilityTimeoutInSeconds` must be between 1 and 604800/,
      RangeError,
    ],
    ["visibility timeout in fractions", { visibilityTimeoutInSeconds: 1.5 }, /whole number/, RangeError],
    [
      "heartbeat not shorter than the visibility timeout",
      { visibilityTimeoutInSeconds: 2, heartbeatIntervalInMs: 2_000 },
      /`heartbeatIntervalInMs` \(2000\) must be shorter than `visibilityTimeoutInSeconds` \(2 s\)/,
      RangeError,
    ],
    ["maxDequeueCount 0", { maxDequeueCount: 0 }, /`maxDequeueCount` must be at least 1/, RangeError],
    [
      "request time limit not shorter than the visibility timeout",
      { visibilityTimeoutInSeconds: 3, requestTimeoutInMs: 3_000 },
      /`requestTimeoutInMs` \(3000\) must be shorter than `visibilityTimeoutInSeconds` \(3 s\)/,
      RangeError,
    ],
    ["request time limit 0", { requestTimeoutInMs: 0 }, /`requestTimeoutInMs` must be at least 1/, RangeError],
    [
      "retryBackoff not a strategy",
      { retryBackoff: 5 as never },
      /`retryBackoff` must be a BackoffStrategy/,
      TypeError,
    ],
    [
      "pollingBackoff not a strategy",
      { pollingBackoff: {} as never },
      /`pollingBackoff` must be a BackoffStrategy/,
      TypeError,
    ],
    ["codec without decode", { codec: {} as never }, /`codec` must be a MessageCodec/, TypeError],
    ["poison TTL 0", { poisonTimeToLiveInSeconds: 0 }, /-1 \(never expire\) or at least 1/, RangeError],
    ["negative grace period", { gracePeriodInMs: -1 }, /`gracePeriodInMs` must be at least 0/, RangeError],
    [
      "idempotency without a store",
      { idempotency: {} as never },
      /`idempotency.store` must be an IdempotencyStore/,
      TypeError,
    ],
    [
      "idempotency key not a function",
      { idempotency: { store: new MemoryIdempotencyStore(), key: "id" as never } },
      /`idempotency.key` must be a function/,
      TypeError,
    ],
    [
      "retention not longer than the visibility timeout",
      { visibilityTimeoutInSeconds: 30, idempotency: { store: new MemoryIdempotencyStore(), retentionInMs: 30_000 } },
      /`idempotency.retentionInMs` \(30000\) must be longer than the visibility timeout \(30 s\)/,
      RangeError,
    ],
    [
      "retention under a second",
      { idempotency: { store: new MemoryIdempotencyStore(), retentionInMs: 10 } },
      /`idempotency.retentionInMs` must be at least 1000/,
      RangeError,
    ],
    [
      "purge interval under a second",
      { idempotency: { store: new MemoryIdempotencyStore(), purge: { intervalInMs: 10 } } },
      /`idempotency.purge.intervalInMs` must be at least 1000/,
      RangeError,
    ],
    [
      "purge not a boolean or object",
      { idempotency: { store: new MemoryIdempotencyStore(), purge: "hourly" as never } },
      /`idempotency.purge` must be a boolean or an object/,
      TypeError,
    ],
    [
      "a purge schedule for a store that cannot purge",
      {
        idempotency: {
          store: { name: "custom", claim: async () => undefined as never, complete: async () => undefined } as never,
          purge: { intervalInMs: 60_000 },
        },
      },
      /the idempotency store has no `purge\(\)`/,
      TypeError,
    ],
    ["handler time limit 0", { handlerTimeoutInMs: 0 }, /`handlerTimeoutInMs` must be at least 1/, RangeError],
    [
      "handler time limit not a number",
      { handlerTimeoutInMs: "5s" as never },
      /`handlerTimeoutInMs` must be a number/,
      TypeError,
    ],
    ["empty consumer id", { consumerId: "" }, /`consumerId` must be a non-empty string/, TypeError],
    ["abortSignal not a signal", { abortSignal: {} as never }, /`abortSignal` must be an AbortSignal/, TypeError],
    ["keepAlive not a boolean", { keepAlive: "yes" as never }, /`keepAlive` must be a boolean/, TypeError],
  ];

  it.each(invalid)("%s", (_name, options, message, type) => {
    const { queue, calls } = fakeQueue();
    let error: unknown;
    try {
      new QueueConsumer(queue, handler, options);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(type);
    expect((error as Error).message).toMatch(message);
    expect(calls).toEqual([]);
  });

  it("needs a poisonQueue when the queue's name leaves no room for '-poison'", () => {
    const { queue, calls } = fakeQueue();
    const long = { ...queue, name: "q".repeat(57) } as QueueClient;
    expect(() => new QueueConsumer(long, handler)).toThrow(/too long for a '-poison' queue.*pass `poisonQueue`/);
    expect(() => new QueueConsumer(long, handler, { poisonQueue: queue })).not.toThrow();
    expect(calls).toEqual([]);
  });

  it("rejects a missing client or handler", () => {
    expect(() => new QueueConsumer({} as QueueClient, handler)).toThrow(/`queueClient` must be a QueueClient/);
    expect(() => new QueueConsumer(fakeQueue().queue, undefined as never)).toThrow(
      /`handler` must be an async function/,
    );
    expect(() => QueueConsumer.withBatchHandler(fakeQueue().queue, undefined as never)).toThrow(
      /`handler` must be an async function \(messages, context\) => outcomes/,
    );
    expect(() => QueueConsumer.withBatchHandler(fakeQueue().queue, async () => undefined, { batchSize: 33 })).toThrow(
      /`batchSize` must be between 1 and 32/,
    );
  });

  it("accepts the defaults and the service's limits", () => {
    const { queue, calls } = fakeQueue();
    const consumer = new QueueConsumer(queue, handler, {
      batchSize: 32,
      visibilityTimeoutInSeconds: 604_800,
      heartbeatIntervalInMs: 1,
    });
    expect(consumer.status).toBe("idle");
    expect(consumer.consumerId).toMatch(/^consumer-/);
    expect(calls).toEqual([]);
  });

  it("stop() refuses a deadline shorter than the grace period, and a negative one, before stopping anything", async () => {
    const { queue, calls } = fakeQueue();
    const consumer = new QueueConsumer(queue, handler, { gracePeriodInMs: 1_000 });
    await expect(consumer.stop({ timeoutInMs: 999 })).rejects.toThrow(
      /`timeoutInMs` \(999\) must not be shorter than the grace period \(`gracePeriodInMs`, 1000\)/,
    );
    await expect(consumer.stop({ timeoutInMs: -1, gracePeriodInMs: 0 })).rejects.toThrow(RangeError);
    await expect(consumer.stop({ gracePeriodInMs: -1 })).rejects.toThrow(/`gracePeriodInMs` must be at least 0/);
    expect(consumer.status).toBe("idle");
    await expect(consumer.stop({ timeoutInMs: 0, gracePeriodInMs: 0 })).resolves.toEqual({
      timedOut: false,
      stillRunning: [],
    });
    expect(consumer.status).toBe("stopped");
    expect(calls).toEqual([]);
  });

  it("a stopped consumer that never started makes no request", async () => {
    const { queue, calls } = fakeQueue();
    const consumer = new QueueConsumer(queue, handler);
    await consumer.stop();
    expect(consumer.status).toBe("stopped");
    await expect(consumer.start()).rejects.toThrow(/starts once/);
    expect(calls).toEqual([]);
  });
});
