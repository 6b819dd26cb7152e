/**
 * The per-message handler timeout: the handler's signal is aborted with a HandlerTimeoutError, the
 * attempt counts as a failure (retried, then poisoned at maxDequeueCount), its effects are never
 * committed, and a handler that ignores its signal is kept track of until it returns (`stop()`).
 */
import { isHandlerTimeoutError, jsonCodec, QueueConsumer } from "../../../src/queue/index.js";
import { MemoryIdempotencyStore, type MemoryEffect } from "../../../src/idempotency/index.js";
import { newQueue, peekCount, quick, record } from "./consumer-support.js";

describe("QueueConsumer handlerTimeoutInMs", () => {
  it("aborts a slow handler with a HandlerTimeoutError, counts it as a failure, and commits its effects only on the attempt that finishes", async () => {
    const { queue } = await newQueue("timeout");
    await queue.sendMessage(JSON.stringify({ id: "order-1" }));
    const store = new MemoryIdempotencyStore();
    const charges: number[] = [];
    const reasons: unknown[] = [];
    const consumer = new QueueConsumer<{ id: string }, MemoryEffect>(
      queue,
      async (body, { message, abortSignal, addEffects }) => {
        if (message.dequeueCount === 1) {
          // Slow, but honours its signal: the effect added on the way is never committed.
          addEffects(() => charges.push(1));
          await new Promise((_, reject) =>
            abortSignal.addEventListener("abort", () => {
              reasons.push(abortSignal.reason);
              reject(abortSignal.reason as Error);
            }),
          );
        }
        addEffects(() => charges.push(2));
        return "charged";
      },
      {
        ...quick,
        codec: jsonCodec(),
        handlerTimeoutInMs: 300,
        idempotency: { store, key: (body) => body.id },
      },
    );
    const events = record(consumer);
    await consumer.start();
    await events.next("processed");
    await consumer.stop();

    const [failed] = events.of("failed");
    expect(isHandlerTimeoutError(failed!.error)).toBe(true);
    expect(failed).toMatchObject({ willRetry: true, error: { timeoutInMs: 300, code: "HandlerTimedOut" } });
    expect(isHandlerTimeoutError(reasons[0])).toBe(true);
    expect(charges).toEqual([2]);
    expect(store.inspect("order-1")).toMatchObject({ status: "done", result: "charged" });
    expect(await peekCount(queue)).toBe(0);
  });

  it("stops waiting for a handler that ignores its signal: poisons it at maxDequeueCount, refuses its late effects, and stop() waits for it", async () => {
    const { queue, poison } = await newQueue("timeout");
    await queue.sendMessage(JSON.stringify({ id: "stuck" }));
    const store = new MemoryIdempotencyStore();
    const releases: (() => void)[] = [];
    const lateEffects: unknown[] = [];
    const consumer = new QueueConsumer<{ id: string }, MemoryEffect>(
      queue,
      async (_body, { addEffects }) => {
        await new Promise<void>((resolve) => releases.push(resolve)); // ignores its signal
        try {
          addEffects(() => undefined);
        } catch (error) {
          lateEffects.push(error);
        }
        return "too late";
      },
      {
        ...quick,
        codec: jsonCodec(),
        handlerTimeoutInMs: 200,
        maxDequeueCount: 2,
        idempotency: { store, key: (body) => body.id },
      },
    );
    const events = record(consumer);
    await consumer.start();
    const [poisoned] = await events.next("poisoned");
    expect(poisoned!.reason).toMatch(/did not finish within 200 ms/);
    expect(events.of("failed").map((f) => [f.willRetry, isHandlerTimeoutError(f.error)])).toEqual([
      [true, true],
      [false, true],
    ]);
    expect(store.inspect("stuck")).toBeUndefined(); // both claims released
    expect(await peekCount(poison)).toBe(1);

    // The two abandoned calls are still running: stop() reports them at its deadline.
    const stopped = await consumer.stop({ gracePeriodInMs: 0, timeoutInMs: 200 });
    expect(stopped.timedOut).toBe(true);
    expect(stopped.stillRunning.map((m) => m.dequeueCount).sort()).toEqual([1, 2]);
    expect(consumer.status).toBe("stopping");
    for (const release of releases) release();
    await consumer.closed;
    expect(consumer.status).toBe("stopped");
    expect(lateEffects).toHaveLength(2);
    expect(String(lateEffects[0])).toMatch(/attempt ended.*not committed/);
    expect(events.of("processed")).toEqual([]);
  });

  it("refuses a time limit that is not a positive number, before any request", () => {
    expect(() => new QueueConsumer(newQueueClientStub(), async () => undefined, { handlerTimeoutInMs: 0 })).toThrow(
      /`handlerTimeoutInMs` must be at least 1/,
    );
  });
});

function newQueueClientStub() {
  return { name: "never-used", receiveMessages: () => Promise.reject(new Error("no request expected")) } as never;
}
