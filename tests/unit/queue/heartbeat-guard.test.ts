/**
 * The message hold's expiry guard (issue 21: the consumer's own lease has the lock's discipline):
 * when the visibility heartbeat's updates hang, the loss is reported when the hold's window closes,
 * while the hanging update is still waiting for its time limit, not once that limit has passed
 * (by then the message may have been visible to other consumers for a while). Over a queue client
 * in memory whose updates never answer.
 */
import type { QueueClient } from "@azure/storage-queue";
import type { MessageOwnershipLostError } from "../../../src/queue/index.js";
import { VisibilityHeartbeat } from "../../../src/queue/heartbeat.js";
import { markNow, MessageHold } from "../../../src/queue/hold.js";

it("reports the loss when the hold's window closes, while a hanging update still waits for its time limit", async () => {
  const updates: { settled: boolean }[] = [];
  const queue = {
    name: "memory",
    updateMessage: (...args: unknown[]) => {
      const { abortSignal } = args[4] as { abortSignal: AbortSignal };
      const update = { settled: false };
      updates.push(update);
      return new Promise((_, reject) =>
        abortSignal.addEventListener("abort", () => {
          update.settled = true;
          reject(abortSignal.reason as Error);
        }),
      );
    },
  } as unknown as QueueClient;
  // Visibility 1 s, margin 250 ms: the window closes 750 ms after the receive. The first update (at
  // 100 ms) is given up at its time limit, 900 ms later: well after the window.
  const hold = new MessageHold(queue, "m-1", "receipt", markNow(), {
    visibilityTimeoutInSeconds: 1,
    requestTimeoutInMs: 900,
  });
  let lost: { error: MessageOwnershipLostError; updatesInFlight: number } | undefined;
  const heartbeat = new VisibilityHeartbeat(hold, {
    intervalInMs: 100,
    visibilityTimeoutInSeconds: 1,
    onLost: (error) => (lost ??= { error, updatesInFlight: updates.filter((u) => !u.settled).length }),
    onError: () => undefined,
  });
  const started = performance.now();
  while (!lost && performance.now() - started < 5_000) await new Promise((resolve) => setTimeout(resolve, 20));
  await heartbeat.stop();

  expect(lost?.error).toMatchObject({ name: "MessageOwnershipLostError", lost: "message" });
  expect(lost?.updatesInFlight).toBe(1);
  expect(updates).toHaveLength(1);
  expect(hold.state).toBe("lost");
});
