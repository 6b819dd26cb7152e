/**
 * `messages`: the claim-check and the transactional outbox (issue 25), each against raw SDK calls
 * in the same run.
 *
 * - Claim-check, at 1 KiB, 48 KiB, 1 MiB and 16 MiB of payload (ASCII text): one cycle is a send, a
 *   receive of that message and its delete, through `ClaimCheck` (`sendMessage`, `receiveMessages`,
 *   `deleteMessage`: upload, reference, download and payload delete above the 64 KiB threshold) and,
 *   where the payload fits in a message (1 KiB, 48 KiB), through the raw SDK (`sendMessage`,
 *   `receiveMessages`, `deleteMessage`). The two take turns, cycle by cycle, so that the machine's
 *   load falls on both alike; each figure is a median. `claimCheckSmallRatio` = raw / claim-check
 *   cycles per second at 1 KiB (goal: at least 0.95: small messages must not pay for the feature);
 *   `claimCheckBytesPerSec1MiB` = payload bytes per second through the claim-check at 1 MiB.
 * - Outbox (./messages-outbox.ts): writes per second, and the latency from the write to the
 *   handled effect against a write followed by a plain send (`outboxRatio`), and a burst whose
 *   effects are counted: `lost` and `doubled` (goal: 0 each).
 * - Orphans: payloads of messages that expired unread, and of sends refused after their upload, are
 *   left to the sweep; after their bound (a 1 s time to live, a short grace) one sweep must leave
 *   none (`orphanBlobs`, goal: 0), and no payload of the cycles above may be left either.
 *
 * `--quick` runs a few cycles of each, to check that the scenario works.
 */
import { randomBytes } from "node:crypto";
import type { QueueClient } from "@azure/storage-queue";
import type { ContainerClient } from "@azure/storage-blob";
import { numberFlag } from "../../internal/args.js";
import { importSdk } from "../../internal/sdk.js";
import { setTimeout as sleep } from "node:timers/promises";
import { ClaimCheck } from "azure-storage-concurrency/claim-check";
import { median, round, type BenchScenario } from "../harness.js";
import { pairRatios, ratioSpread, type RatioSpread } from "../stats.js";
import { measureOutbox } from "./messages-outbox.js";

const KiB = 1024;
const MiB = 1024 * 1024;

interface SizePoint {
  readonly bytes: number;
  readonly cycles: number;
  readonly claimCheckMedianMs: number;
  /** Null where the payload does not fit in a message. */
  readonly rawMedianMs: number | null;
  /** Raw / claim-check cycles per second (null without raw). */
  readonly ratio: number | null;
  /** The same per interleaved pair of cycles: median, interquartile range and extremes (null without raw). */
  readonly ratioSpread: RatioSpread | null;
  readonly claimCheckBytesPerSec: number;
}

async function time(step: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await step();
  return performance.now() - started;
}

/** One claim-check cycle: send, receive, delete (message and payload). */
async function claimCheckCycle(claimCheck: ClaimCheck, queue: QueueClient, payload: string): Promise<void> {
  await claimCheck.sendMessage(queue, payload);
  const [message] = (await claimCheck.receiveMessages(queue, { numberOfMessages: 1 })).receivedMessageItems;
  if (!message || message.error || message.messageText.length !== payload.length)
    throw new Error(`the claim-check cycle got back no payload, or another one (${String(message?.error)})`);
  await claimCheck.deleteMessage(queue, message);
}

/** The same cycle on raw SDK calls. */
async function rawCycle(queue: QueueClient, payload: string): Promise<void> {
  await queue.sendMessage(payload);
  const [message] = (await queue.receiveMessages({ numberOfMessages: 1 })).receivedMessageItems;
  if (!message || message.messageText.length !== payload.length) throw new Error("the raw cycle got back no message");
  await queue.deleteMessage(message.messageId, message.popReceipt);
}

/** Payloads of messages that expire unread, and of refused sends: one sweep after their bound must leave none. */
async function orphans(container: ContainerClient, queue: QueueClient, missing: QueueClient): Promise<number> {
  const prefix = `orphans-${randomBytes(4).toString("hex")}/`;
  const claimCheck = new ClaimCheck(container, { blobPrefix: prefix, requestTimeoutInMs: 500, sweepGraceInMs: 500 });
  const payload = "o".repeat(100 * KiB);
  for (let i = 0; i < 5; i++) await claimCheck.sendMessage(queue, payload, { messageTimeToLive: 1 }); // expire unread
  for (let i = 0; i < 5; i++) await claimCheck.sendMessage(missing, payload).catch(() => undefined); // refused: 404
  // The bound of the last one: its upload + 4 request limits + its time to live (7 days for the
  // refused ones: they are swept by a sweep that judges at that time, as a later real sweep would).
  await sleep(1_000 + 4 * 500 + 500 + 200);
  await claimCheck.sweep();
  await claimCheck.sweep({ now: new Date(Date.now() + 7 * 24 * 3_600_000 + 4 * 500 + 1_000) });
  let left = 0;
  for await (const blob of container.listBlobsFlat({ prefix, includeMetadata: true }))
    if (blob.metadata?.poisonedon === undefined) left += 1;
  return left;
}

export const messagesScenario: BenchScenario<{
  queues: typeof import("@azure/storage-queue");
  blobs: typeof import("@azure/storage-blob");
  tables: typeof import("@azure/data-tables");
}> = {
  name: "messages",
  description:
    "claim-check send + receive against plain sends (1 KiB to 16 MiB), the transactional outbox against a write then a plain send",
  flags: {
    "--samples <n>":
      "claim-check and raw cycles at 1 KiB (fewer for the larger sizes), and outbox samples (default 200)",
    "--quick": "a short run to check the scenario: a few cycles of each",
  },
  services: ["blob", "queue", "table"],
  timeLimitInSec: 600,
  loadSdks: async () => ({
    queues: await importSdk(() => import("@azure/storage-queue"), "@azure/storage-queue"),
    blobs: await importSdk(() => import("@azure/storage-blob"), "@azure/storage-blob"),
    tables: await importSdk(() => import("@azure/data-tables"), "@azure/data-tables"),
  }),
  async run({ connectionString, args, log }, { queues, blobs, tables }) {
    const quick = args["quick"] === true;
    const samples = numberFlag(args, "samples", quick ? 10 : 200, 4);
    const suffix = `${Date.now().toString(36)}${randomBytes(2).toString("hex")}`;
    const queueService = queues.QueueServiceClient.fromConnectionString(connectionString);
    const claimQueue = queueService.getQueueClient(`bench-claim-${suffix}`);
    const rawQueue = queueService.getQueueClient(`bench-raw-${suffix}`);
    const expiring = queueService.getQueueClient(`bench-expire-${suffix}`);
    const container = blobs.BlobServiceClient.fromConnectionString(connectionString).getContainerClient(
      `bench-payloads-${suffix}`,
    );
    const created = [claimQueue, rawQueue, expiring];
    await Promise.all([...created.map((q) => q.create()), container.create()]);
    const claimCheck = new ClaimCheck(container);
    try {
      const sizes: SizePoint[] = [];
      const plan = [
        { bytes: KiB, cycles: samples },
        { bytes: 48 * KiB, cycles: Math.max(4, Math.round(samples / 2)) },
        { bytes: MiB, cycles: Math.max(4, Math.round(samples / 10)) },
        { bytes: 16 * MiB, cycles: quick ? 2 : Math.max(3, Math.round(samples / 50)) },
      ];
      // A warm-up, not counted: connections, the container's and the queues' first requests.
      for (let i = 0; i < 10; i++)
        await Promise.all([claimCheckCycle(claimCheck, claimQueue, "w"), rawCycle(rawQueue, "w")]);
      for (const { bytes, cycles } of plan) {
        const payload = "abcdefghijklmnopqrstuvwxyz".repeat(Math.ceil(bytes / 26)).slice(0, bytes);
        const fits = bytes <= claimCheck.thresholdInBytes;
        const claimMs: number[] = [];
        const rawMs: number[] = [];
        for (let i = 0; i < cycles; i++) {
          const claim = () => time(() => claimCheckCycle(claimCheck, claimQueue, payload));
          const raw = () => time(() => rawCycle(rawQueue, payload));
          // Alternate which goes first, so that neither always follows the other.
          if (i % 2 === 0 || !fits) {
            claimMs.push(await claim());
            if (fits) rawMs.push(await raw());
          } else {
            rawMs.push(await raw());
            claimMs.push(await claim());
          }
        }
        const claimMedian = median(claimMs);
        const rawMedian = fits ? median(rawMs) : null;
        const point: SizePoint = {
          bytes,
          cycles,
          claimCheckMedianMs: round(claimMedian, 2),
          rawMedianMs: rawMedian === null ? null : round(rawMedian, 2),
          ratio: rawMedian === null ? null : round(rawMedian / claimMedian, 3),
          ratioSpread: fits ? ratioSpread(pairRatios(rawMs, claimMs)) : null,
          claimCheckBytesPerSec: round(bytes / (claimMedian / 1000), 0),
        };
        sizes.push(point);
        log(
          `${bytes} bytes: claim-check ${point.claimCheckMedianMs} ms per cycle${rawMedian === null ? " (no raw: it does not fit in a message)" : `, raw ${point.rawMedianMs} ms (ratio ${point.ratio})`}`,
        );
      }

      const outbox = await measureOutbox(
        { connectionString, samples, quick, log, claimCheck, lockContainer: container },
        { queues, tables },
      );
      const orphanBlobs = await orphans(container, expiring, queueService.getQueueClient(`bench-missing-${suffix}`));
      let leftover = 0;
      for await (const blob of container.listBlobsFlat({ prefix: "claim-check/" })) if (blob.name) leftover += 1;
      log(`orphans after the sweep: ${orphanBlobs}; payloads of settled messages left: ${leftover}`);
      const at = (bytes: number) => sizes.find((s) => s.bytes === bytes)!;
      return {
        samples,
        claimCheckSmallRatio: at(KiB).ratio,
        claimCheckSmallRatioSpread: at(KiB).ratioSpread,
        claimCheckRatio48KiB: at(48 * KiB).ratio,
        claimCheckBytesPerSec1MiB: at(MiB).claimCheckBytesPerSec,
        claimCheckBytesPerSec16MiB: at(16 * MiB).claimCheckBytesPerSec,
        sizes,
        ...outbox.figures,
        lost: outbox.lost,
        doubled: outbox.doubled,
        orphanBlobs: orphanBlobs + leftover,
      };
    } finally {
      await Promise.all([...created.map((q) => q.deleteIfExists()), container.deleteIfExists()]);
    }
  },
};
