/**
 * The claim of the queue consumer with a Table idempotency store, across processes: with several
 * consumer processes, some of them killed with SIGKILL in the middle of their handlers (one message
 * at a time, or batches whose done marks share transactions), every good key's effect is committed
 * exactly once, every poison message ends in the poison queue, and no message is lost.
 */
import type { QueueClient } from "@azure/storage-queue";
import { parsePoisonMessage } from "../../../src/queue/index.js";
import { workerGroup } from "../../support/processes.js";
import { queueService, tableClient, uniqueName } from "../../support/storage.js";

const WORKER = "tests/integration/queue/workers/consumer-worker.ts";

interface Line {
  pid: number;
  event: string;
  error?: string;
  key?: string;
  messageId?: string;
  reason?: string;
}

async function drain(queue: QueueClient): Promise<string[]> {
  const texts: string[] = [];
  for (;;) {
    const { receivedMessageItems } = await queue.receiveMessages({ numberOfMessages: 32, visibilityTimeout: 60 });
    if (receivedMessageItems.length === 0) return texts;
    texts.push(...receivedMessageItems.map((m) => m.messageText));
  }
}

async function until(what: string, condition: () => Promise<boolean>, timeoutInMs: number): Promise<void> {
  const deadline = Date.now() + timeoutInMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

describe.each([
  // Keys from the body: 1000 messages, 40 good keys sent twice in a row (so that both copies are
  // often in flight at once, in one process or two).
  { keyBy: "body", goodCount: 950, sentTwice: 40, kills: [100, 250], batch: false },
  // Keys are the message ids (the default, where a first delivery writes its record only with the
  // done mark): no duplicates to recognise, but the same kills and redeliveries.
  { keyBy: "message-id", goodCount: 290, sentTwice: 0, kills: [40, 80], batch: false },
  // A batch handler, keys from the body in 6 shared partitions: the done marks and effects of a
  // batch's messages of one partition commit in one transaction; processes die mid-batch.
  { keyBy: "body", goodCount: 400, sentTwice: 20, kills: [60, 150], batch: true, partitions: 6 },
  // effects "tables-only" (issue 27): keys from the body, no claim before a first delivery's
  // handler, so both copies of a key sent twice may run at once, in one process or two: only one
  // commits its effect (the done mark's insert), the other is deleted as a duplicate.
  { keyBy: "body", goodCount: 600, sentTwice: 40, kills: [100, 200], batch: false, effects: "tables-only" },
  // The same with a batch handler whose done marks share transactions in 6 partitions.
  {
    keyBy: "body",
    goodCount: 400,
    sentTwice: 20,
    kills: [60, 150],
    batch: true,
    partitions: 6,
    effects: "tables-only",
  },
] as {
  keyBy: string;
  goodCount: number;
  sentTwice: number;
  kills: number[];
  batch?: boolean;
  partitions?: number;
  effects?: string;
}[])(
  "QueueConsumer across processes, with SIGKILLs, keyed by $keyBy (batch handler: $batch, effects: $effects)",
  ({ keyBy, goodCount, sentTwice, kills, batch = false, partitions = 0, effects: effectsOption = "any" }) => {
    it("commits every good message's effect exactly once, poisons the poison messages, loses nothing", async () => {
      const queueName = uniqueName("mp");
      const queue = queueService().getQueueClient(queueName);
      const poisonQueue = queueService().getQueueClient(`${queueName}-poison`);
      const inbox = tableClient(uniqueName("inbox"));
      await queue.create();
      await inbox.createTable();

      // The good messages, `sentTwice` of them twice in a row; 5 that always fail; 5 that do not decode.
      const goodKeys = Array.from({ length: goodCount }, (_, i) => `good-${i}`);
      const twiceEvery = sentTwice > 0 ? Math.floor(goodCount / sentTwice) : Infinity;
      const bodies = [
        ...goodKeys
          .flatMap((key, i) => (i % twiceEvery === 0 && i / twiceEvery < sentTwice ? [{ key }, { key }] : [{ key }]))
          .map((b) => JSON.stringify(b)),
        ...Array.from({ length: 5 }, (_, i) => JSON.stringify({ key: `poison-${i}`, poison: true })),
        ...Array.from({ length: 5 }, (_, i) => `{"key": "undecodable-${i}", oops`),
      ];
      expect(bodies).toHaveLength(goodCount + sentTwice + 10);
      const poisonTexts = bodies.filter((b) => b.includes("poison-") || b.includes("undecodable-"));
      for (let i = 0; i < bodies.length; i += 50)
        await Promise.all(bodies.slice(i, i + 50).map((b) => queue.sendMessage(b)));

      const env = {
        ASC_QUEUE: queueName,
        ASC_INBOX: inbox.tableName,
        ASC_KEY: keyBy,
        ASC_VISIBILITY_S: "3",
        ASC_MAX_DEQUEUE: "4",
        ASC_MAX_SLEEP_MS: "20",
        ASC_BATCH: batch ? "1" : "0",
        ASC_PARTITIONS: String(partitions),
        ASC_EFFECTS: effectsOption,
      };
      const { workers, start, stopAll } = workerGroup(WORKER, env);
      const [a, b] = [start(), start(), start()];
      try {
        // Kill two workers with SIGKILL while they are busy, and start replacements.
        let handledByA = 0;
        await a.waitFor<Line>((m) => m.event === "handling" && ++handledByA >= kills[0]!, 90_000);
        await a.kill("SIGKILL");
        start();
        // B is killed once it has started a few more handlers after A's kill (counting from its start
        // could ask for more messages than are left for B under load, when the others take most).
        const killBAt = Math.min(kills[1]!, (b.messages as Line[]).filter((m) => m.event === "handling").length + 10);
        let handledByB = 0;
        await b.waitFor<Line>((m) => m.event === "handling" && ++handledByB >= killBAt, 90_000);
        await b.kill("SIGKILL");
        start();

        // Done when every good key is done, the queue is empty and the poison queue holds 10 messages.
        const doneKeys = new Set<string>();
        await until(
          "every good key is done and the queue is empty",
          async () => {
            for await (const row of inbox.listEntities<{ Status?: string; Key?: string }>({
              queryOptions: { filter: "Status eq 'done'" },
            })) {
              doneKeys.add(row.Key!);
            }
            if (doneKeys.size < goodKeys.length) return false;
            const properties = await queue.getProperties();
            return properties.approximateMessagesCount === 0;
          },
          90_000,
        );
        await until(
          "the poison queue holds every poison message",
          async () => {
            const { approximateMessagesCount } = await poisonQueue
              .getProperties()
              .catch(() => ({ approximateMessagesCount: 0 }));
            return (approximateMessagesCount ?? 0) >= poisonTexts.length;
          },
          60_000,
        );
      } finally {
        await stopAll("SIGTERM");
      }

      // Exactly one effect per good key, none for anything else.
      const effects = new Map<string, number>();
      const effectPid = new Map<string, number>();
      for await (const row of inbox.listEntities<{ Key?: string; Pid?: number }>({
        queryOptions: { filter: "RowKey ge 'effect-' and RowKey lt 'effect.'" },
      })) {
        effects.set(row.Key!, (effects.get(row.Key!) ?? 0) + 1);
        effectPid.set(row.Key!, row.Pid!);
      }
      expect([...effects.entries()].filter(([, n]) => n !== 1)).toEqual([]);
      expect([...effects.keys()].sort()).toEqual([...goodKeys].sort());

      // The kills happened mid-handler: the killed workers had started handlers they never finished,
      // and each of those messages was settled by another process (or had committed just before the kill).
      // A kill is sent when the worker reports a handler started; on a loaded machine that handler may
      // finish before the signal lands, so at least one of the two kills must have cut a handler short.
      // The events that settle a message. With effects "tables-only" a first delivery runs its
      // handler before the store is asked, so a handler that started can end as a duplicate too (its
      // done mark found the key done by another message: its effects discarded, the message deleted).
      const settling = new Set(["processed", "poisoned", "duplicate"]);
      let cutShort = 0;
      for (const killed of [a, b]) {
        const lines = killed.messages as Line[];
        const unfinished = new Map(lines.filter((m) => m.event === "handling").map((m) => [m.messageId, m.key]));
        for (const m of lines) if (settling.has(m.event)) unfinished.delete(m.messageId); // by the killed worker itself
        cutShort += unfinished.size;
        const settledElsewhere = new Set(
          workers
            .filter((w) => w !== killed)
            .flatMap((w) => w.messages as Line[])
            .filter((m) => settling.has(m.event))
            .map((m) => m.messageId),
        );
        const unaccounted = [...unfinished]
          .filter(([id, key]) => !settledElsewhere.has(id) && effectPid.get(key!) !== killed.child.pid)
          .map(([id, key]) => ({
            id,
            key,
            // What every worker said of it, for the failure message.
            seen: workers.flatMap((w) =>
              (w.messages as Line[]).filter((m) => m.messageId === id).map((m) => `${m.pid} ${m.event}`),
            ),
          }));
        expect(unaccounted).toEqual([]);
      }
      expect(cutShort).toBeGreaterThan(0);

      // Every poison message is in the poison queue, with its reason; nothing else is.
      const poisoned = (await drain(poisonQueue)).map((text) => parsePoisonMessage(text)!);
      expect(new Set(poisoned.map((p) => p.messageText))).toEqual(new Set(poisonTexts));
      for (const p of poisoned) {
        expect(p.reason).toMatch(p.messageText.includes("undecodable") ? /not valid JSON/ : /always fails/);
      }
      expect(await drain(queue)).toEqual([]);

      // The duplicates were recognised as duplicates across processes: the effects above are once
      // each. The events are a lower bound only: a duplicate's delete whose answer came after the
      // request time limit is reported as that error (the consumer cannot tell it was deleted), and
      // a worker killed after deleting duplicates (a batch holds several) never prints their events
      // (seen: 19 of 20 in a batch run).
      const all = workers.flatMap((w) => w.messages as Line[]);
      const lateAnswers = all.filter(
        (m) => m.event === "error" && /RequestTimedOut|no answer within/.test(String(m.error)),
      ).length;
      expect(all.filter((m) => m.event === "duplicate").length + lateAnswers).toBeGreaterThanOrEqual(sentTwice / 2);
      // No failure besides answers slower than the request time limit (two cores shared by Azurite
      // and every worker: a timeout is then reported, and the consumer tries again, which is its job).
      expect(
        all.filter((m) => m.event === "error" && !/RequestTimedOut|no answer within/.test(String(m.error))),
      ).toEqual([]);
      await queue.delete();
      await poisonQueue.delete();
      await inbox.deleteTable();
    }, 240_000);
  },
);
