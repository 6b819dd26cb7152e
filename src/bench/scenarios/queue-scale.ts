/**
 * The `queue` scenario's scale curves (issue 15):
 * - the consumer against the raw receive(32) + delete loop at 16 and 32 messages in flight per
 *   process, over 1, 2 and 4 processes of ../workers/queue-consumer.ts draining one queue: messages
 *   per second, `ratio` (consumer / raw) at each point, and the client and Azurite CPU time per
 *   message that bound it;
 * - memory: the resident set of a consumer holding 1,000 messages in flight (in this process).
 */
import { randomUUID } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { QueueClient } from "@azure/storage-queue";
import { QueueConsumer } from "../../index.js";
import { round } from "../harness.js";
import { spawnBenchWorker } from "../workers.js";

/** How a worker of the scale curve is started. */
export interface QueueWorkerConfig {
  readonly queue: string;
  readonly mode: "raw" | "consumer";
  /** Messages in flight in the worker. */
  readonly concurrency: number;
  readonly goFile: string;
}

/** What a worker prints when the queue is drained. */
export interface QueueWorkerReport {
  /** The bodies it handled (raw: deleted), one entry per handling. */
  readonly handled: readonly string[];
  /** When it handled its last message (epoch ms). */
  readonly lastAt: number;
  /** Its CPU time (user + system) while draining. */
  readonly cpuMs: number;
}

/**
 * The hand-written baseline: receive up to 32, delete them all in parallel, repeat until a receive
 * finds the queue empty; `concurrency` messages in flight (in loops of 32). `deleted` is called with
 * each message's body once its delete succeeded.
 */
export async function rawDrain(
  queue: QueueClient,
  concurrency: number,
  deleted: (body: string) => void,
): Promise<void> {
  const batch = Math.min(32, concurrency);
  const loops = Math.max(1, Math.round(concurrency / batch));
  await Promise.all(
    Array.from({ length: loops }, async () => {
      for (;;) {
        const { receivedMessageItems } = await queue.receiveMessages({
          numberOfMessages: batch,
          visibilityTimeout: 30,
        });
        if (receivedMessageItems.length === 0) return;
        await Promise.all(
          receivedMessageItems.map(async (m) => {
            await queue.deleteMessage(m.messageId, m.popReceipt);
            deleted(m.messageText);
          }),
        );
      }
    }),
  );
}

const PROCESSES = [1, 2, 4];
/** How long the memory figure waits for the consumer to hold every message. */
const HOLD_LIMIT_IN_MS = 30_000;
const CONCURRENCIES = [16, 32];

interface Options {
  readonly connectionString: string;
  readonly queue: QueueClient;
  readonly messages: number;
  readonly fill: (queue: QueueClient, messages: number) => Promise<void>;
  /** CPU time of the embedded Azurite so far (undefined on an account). */
  readonly serverCpuMs: () => number | undefined;
  readonly log: (message: string) => void;
  readonly abortSignal: AbortSignal;
}

/** One drain of `messages` by `processes` workers in `mode`. */
async function drain(options: Options, mode: QueueWorkerConfig["mode"], processes: number, concurrency: number) {
  const { connectionString, queue, messages } = options;
  await options.fill(queue, messages);
  const goFile = join(tmpdir(), `asc-bench-queue-go-${randomUUID()}`);
  const config: QueueWorkerConfig = { queue: queue.name, mode, concurrency, goFile };
  const workers = Array.from({ length: processes }, () =>
    spawnBenchWorker("queue-consumer", [JSON.stringify(config)], connectionString),
  );
  const stop = () => void Promise.all(workers.map((w) => w.kill()));
  options.abortSignal.addEventListener("abort", stop, { once: true });
  try {
    await Promise.all(workers.map((w) => w.waitFor((m: { ready?: boolean }) => m?.ready === true, 60_000)));
    const server = options.serverCpuMs();
    const go = Date.now();
    writeFileSync(goFile, "go");
    const reports = await Promise.all(
      workers.map((w) =>
        w.waitFor<QueueWorkerReport>((m) => typeof m === "object" && m !== null && "lastAt" in m, 120_000),
      ),
    );
    const serverMs = server === undefined ? undefined : options.serverCpuMs()! - server;
    const counts = new Map<string, number>();
    for (const body of reports.flatMap((r) => r.handled)) counts.set(body, (counts.get(body) ?? 0) + 1);
    let duplicates = 0;
    for (const n of counts.values()) duplicates += n - 1;
    const seconds = (Math.max(...reports.map((r) => r.lastAt)) - go) / 1000;
    return {
      perSec: messages / seconds,
      duplicates,
      lost: messages - counts.size,
      clientCpuMsPerMessage: reports.reduce((sum, r) => sum + r.cpuMs, 0) / messages,
      serverCpuMsPerMessage: serverMs === undefined ? null : serverMs / messages,
    };
  } finally {
    options.abortSignal.removeEventListener("abort", stop);
    await Promise.all(workers.map((w) => w.kill()));
    rmSync(goFile, { force: true });
  }
}

/** The consumer against the raw loop over 1, 2 and 4 processes, at 16 and 32 in flight each. */
export async function queueScale(options: Options) {
  const points = [];
  for (const concurrency of CONCURRENCIES) {
    for (const processes of PROCESSES) {
      const raw = await drain(options, "raw", processes, concurrency);
      const consumer = await drain(options, "consumer", processes, concurrency);
      const point = {
        processes,
        concurrency,
        rawPerSec: round(raw.perSec, 1),
        perSec: round(consumer.perSec, 1),
        ratio: round(consumer.perSec / raw.perSec, 3),
        duplicates: raw.duplicates + consumer.duplicates,
        lost: raw.lost + consumer.lost,
        clientCpuMsPerMessage: {
          raw: round(raw.clientCpuMsPerMessage, 3),
          consumer: round(consumer.clientCpuMsPerMessage, 3),
        },
        serverCpuMsPerMessage: {
          raw: raw.serverCpuMsPerMessage === null ? null : round(raw.serverCpuMsPerMessage, 3),
          consumer: consumer.serverCpuMsPerMessage === null ? null : round(consumer.serverCpuMsPerMessage, 3),
        },
      };
      points.push(point);
      options.log(
        `scale: ${processes} process${processes === 1 ? "" : "es"} × ${concurrency} in flight: raw ${point.rawPerSec} msg/s, consumer ${point.perSec} msg/s, ratio ${point.ratio}`,
      );
    }
  }
  return points;
}

/**
 * The resident set of this process with a consumer holding `inFlight` messages at once (its handler
 * waits until that many have arrived), against before it started: what each message in flight costs.
 */
export async function inFlightMemory(queue: QueueClient, inFlight: number, fill: Options["fill"]) {
  await fill(queue, inFlight);
  globalThis.gc?.();
  const before = process.memoryUsage();
  let held = 0;
  let peak = before;
  let release!: () => void;
  const all = new Promise<void>((resolve) => (release = resolve));
  const consumer = new QueueConsumer(
    queue,
    async () => {
      held++;
      if (held === inFlight) {
        peak = process.memoryUsage();
        release();
      }
      await all;
    },
    { batchSize: 32, concurrency: inFlight, visibilityTimeoutInSeconds: 120 },
  );
  await consumer.start();
  // On a slow machine the consumer may not hold them all within the limit: then what it holds is measured.
  const limit = setTimeout(() => {
    peak = process.memoryUsage();
    release();
  }, HOLD_LIMIT_IN_MS);
  await all;
  clearTimeout(limit);
  const measuredHeld = held;
  await consumer.stop();
  const mib = (bytes: number) => round(bytes / 2 ** 20, 1);
  return {
    messagesInFlight: measuredHeld,
    rssBeforeMiB: mib(before.rss),
    rssInFlightMiB: mib(peak.rss),
    rssPerMessageKiB: measuredHeld === 0 ? null : round((peak.rss - before.rss) / 1024 / measuredHeld, 2),
    heapPerMessageKiB: measuredHeld === 0 ? null : round((peak.heapUsed - before.heapUsed) / 1024 / measuredHeld, 2),
  };
}
