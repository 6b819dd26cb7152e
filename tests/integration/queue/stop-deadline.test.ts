/**
 * `stop({ timeoutInMs })` is an upper bound (issue 12, item 15): a handler that ignores its aborted
 * signal cannot keep `stop()` pending past the deadline. It resolves with `timedOut: true` and the
 * messages still running; those finish in the background (kept invisible), and `closed` settles then.
 */
import { exponentialBackoff } from "../../../src/retry/index.js";
import { QueueConsumer, type QueueConsumerEvents } from "../../../src/queue/index.js";
import { queueService, uniqueName } from "../../support/storage.js";

it("stop({ timeoutInMs }) resolves at the deadline with what is still running when a handler ignores its signal", async () => {
  const queue = queueService().getQueueClient(uniqueName("deadline"));
  await queue.create();
  try {
    await queue.sendMessage("stubborn");
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let aborted = false;
    const consumer = new QueueConsumer(
      queue,
      async (_body, { abortSignal }) => {
        abortSignal.addEventListener("abort", () => (aborted = true));
        await released; // ignores the signal
        return "finished anyway";
      },
      {
        visibilityTimeoutInSeconds: 5,
        pollingBackoff: exponentialBackoff({ deltaInMs: 20, minInMs: 0, maxInMs: 200 }),
      },
    );
    const received = new Promise<QueueConsumerEvents["received"]>((resolve) => consumer.on("received", resolve));
    const processed = new Promise<QueueConsumerEvents["processed"]>((resolve) => consumer.on("processed", resolve));
    await consumer.start();
    const { message } = await received;

    const result = await consumer.stop({ gracePeriodInMs: 50, timeoutInMs: 300 });
    expect(result.timedOut).toBe(true);
    expect(result.stillRunning.map((m) => m.messageId)).toEqual([message.messageId]);
    expect(aborted).toBe(true);
    expect(consumer.status).toBe("stopping");
    expect(consumer.inFlight).toBe(1);

    release();
    await consumer.closed;
    expect(consumer.status).toBe("stopped");
    expect((await processed).result).toBe("finished anyway");
    // A later stop() sees everything stopped.
    await expect(consumer.stop({ timeoutInMs: 0, gracePeriodInMs: 0 })).resolves.toEqual({
      timedOut: false,
      stillRunning: [],
    });
  } finally {
    await queue.delete();
    await queueService().getQueueClient(`${queue.name}-poison`).deleteIfExists();
  }
});

it("stop() refuses a deadline shorter than the grace period, before stopping anything", async () => {
  const queue = queueService().getQueueClient(uniqueName("deadline"));
  await queue.create();
  try {
    const consumer = new QueueConsumer(queue, async () => undefined, { gracePeriodInMs: 1_000 });
    await consumer.start();
    await expect(consumer.stop({ timeoutInMs: 500 })).rejects.toThrow(RangeError);
    await expect(consumer.stop({ timeoutInMs: 500 })).rejects.toThrow(
      /`timeoutInMs` \(500\) must not be shorter than the grace period/,
    );
    expect(consumer.status).toBe("running");
    await consumer.stop({ gracePeriodInMs: 0, timeoutInMs: 5_000 });
  } finally {
    await queue.delete();
    await queueService().getQueueClient(`${queue.name}-poison`).deleteIfExists();
  }
});
