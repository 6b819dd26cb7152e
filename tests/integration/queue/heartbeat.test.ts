/**
 * A handler that runs well past the visibility timeout keeps its message: the consumer process's
 * heartbeat hides it again before it would become visible, so a second consumer (in this test's
 * process) polling the same queue all along never receives it, and it is processed exactly once.
 */
import { exponentialBackoff } from "../../../src/retry/index.js";
import { QueueConsumer } from "../../../src/queue/index.js";
import { spawnWorker } from "../../support/processes.js";
import { queueService, tableClient, uniqueName } from "../../support/storage.js";

interface Line {
  event: string;
  key?: string;
  messageId?: string;
}

describe("visibility heartbeat", () => {
  it("keeps a message invisible while its handler runs 3x past the visibility timeout; no second consumer runs it", async () => {
    const queueName = uniqueName("hb");
    const queue = queueService().getQueueClient(queueName);
    const inbox = tableClient(uniqueName("hbinbox"));
    await queue.create();
    await inbox.createTable();
    await queue.sendMessage(JSON.stringify({ key: "long", sleepMs: 6_000 }));

    const worker = spawnWorker("tests/integration/queue/workers/consumer-worker.ts", [], {
      ASC_QUEUE: queueName,
      ASC_INBOX: inbox.tableName,
      ASC_VISIBILITY_S: "2",
      ASC_HEARTBEAT_MS: "300", // well inside the hold's window (1.5 s from the last update that landed), on a busy machine
    });
    const second = new QueueConsumer(queue, async () => undefined, {
      visibilityTimeoutInSeconds: 2,
      pollingBackoff: exponentialBackoff({ deltaInMs: 50, minInMs: 0, maxInMs: 200 }),
    });
    const receivedBySecond: string[] = [];
    second.on("received", ({ message }) => receivedBySecond.push(message.messageId));
    try {
      const handling = await worker.waitFor<Line>((m) => m.event === "handling", 60_000);
      await second.start();
      await worker.waitFor<Line>((m) => m.event === "processed", 30_000);
      // Past one more visibility timeout: had the message been left behind, it would show up now.
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      await second.stop();

      expect(receivedBySecond).toEqual([]);
      const lines = worker.messages as Line[];
      expect(lines.filter((m) => m.event === "handling").map((m) => m.messageId)).toEqual([handling.messageId]);
      expect(lines.filter((m) => m.event === "processed")).toHaveLength(1);
      expect(lines.filter((m) => m.event === "error" || m.event === "ownershipLost")).toEqual([]);
      expect((await queue.peekMessages()).peekedMessageItems).toEqual([]);
    } finally {
      await second.stop();
      await worker.kill("SIGTERM");
      await queue.delete();
      await inbox.deleteTable();
    }
  }, 90_000);
});
