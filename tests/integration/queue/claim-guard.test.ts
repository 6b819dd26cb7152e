/**
 * The consumer's idempotency claim under a store that stops answering its extensions (issue 21,
 * defect 2, the consumer's side), on Azurite through the fault proxy: two consumers on two queues
 * get a message each with the same key (derived from the body). The first claims it, then its
 * claim's extensions hang while its queue heartbeats go on; its claim is given up before it can
 * expire (the handler's signal aborted, `ownershipLost` with `lost: "claim"`), before the second
 * consumer, waiting in place for the key, takes it over and runs it. The effect happens once.
 */
import {
  isMessageOwnershipLostError,
  QueueConsumer,
  type MessageOwnershipLostError,
} from "../../../src/queue/index.js";
import { TableIdempotencyStore } from "../../../src/idempotency/index.js";
import { faultProxyFor, tableClient } from "../../support/storage.js";
import { newInbox, newQueue, quick, record } from "./consumer-support.js";

it("a claim whose extensions hang is given up before another consumer can take its key over", async () => {
  const { proxy, connectionString: viaProxy } = await faultProxyFor("table");
  const inbox = await newInbox("claimguard");
  const { queue: queueA } = await newQueue("claimguarda");
  const { queue: queueB } = await newQueue("claimguardb");
  const timeline: string[] = [];
  let bRan!: () => void;
  const bHasRun = new Promise<void>((resolve) => (bRan = resolve));
  const options = { ...quick, visibilityTimeoutInSeconds: 2 }; // the claim lasts 2 s; its guard gives it up at 1.5 s
  const a = new QueueConsumer<string>(
    queueA,
    async (_body, { abortSignal }) => {
      // From now on A's claim extensions (a Merge of its inbox row) get no answer; its queue heartbeats do.
      proxy.addRule({ method: ["PATCH", "MERGE"], action: { type: "hang" } });
      await Promise.race([bHasRun, new Promise((resolve) => abortSignal.addEventListener("abort", resolve))]);
      if (abortSignal.aborted) {
        timeline.push("A aborted");
        throw abortSignal.reason;
      }
      timeline.push("A charged");
    },
    {
      ...options,
      idempotency: { store: new TableIdempotencyStore(tableClient(inbox.tableName, viaProxy)), key: (body) => body },
    },
  );
  const b = new QueueConsumer<string>(
    queueB,
    async () => {
      timeline.push("B charged");
      bRan();
    },
    { ...options, idempotency: { store: new TableIdempotencyStore(inbox), key: (body) => body } },
  );
  const eventsA = record(a);
  const eventsB = record(b);
  try {
    await queueA.sendMessage("order-1");
    await a.start();
    await eventsA.next("received");
    await new Promise((resolve) => setTimeout(resolve, 300)); // A holds the claim
    await queueB.sendMessage("order-1");
    await b.start();
    await eventsB.next("processed", 1, 15_000);
    const [lost] = await eventsA.next("ownershipLost", 1, 5_000);

    expect(timeline).toEqual(["A aborted", "B charged"]);
    expect(isMessageOwnershipLostError(lost!.error)).toBe(true);
    expect(lost!.error).toMatchObject({ lost: "claim", operation: "expiry-guard" });
    expect((lost!.error as MessageOwnershipLostError).cause).toMatchObject({
      name: "IdempotencyClaimLostError",
      reason: "expiry-guard",
    });
    expect(eventsB.of("deferred").length).toBeGreaterThan(0); // B waited for A's claim
    const row = await inbox.getEntity<Record<string, unknown>>("order-1", "inbox:order-1");
    expect(row.Status).toBe("done");
  } finally {
    proxy.clearRules();
    await Promise.all([a.stop(), b.stop()]);
    await proxy.close();
  }
});
