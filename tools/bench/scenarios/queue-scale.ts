/**
 * The `queue` scenario's scale curves (issue 15):
 * - the consumer against the raw receive(32) + delete loop at 16 and 32 messages in flight per
 *   process, over 1, 2 and 4 processes of ../workers/queue-consumer.ts draining one queue. The
 *   processes of a point are started once and drain run after run (after one unmeasured warm-up
 *   drain of each way); raw and consumer runs alternate
 *   (raw first, then consumer first, …), each drains `messagesPerProcess` messages per process (so
 *   that every process has as many batches to do at each point), and each figure is the
 *   median over `repetitions` pairs, the ratio taken within each pair (and within blocks of two
 *   pairs in opposite orders): a change of the machine's load between runs moves both sides alike.
 *   Per point and way: messages per second, the requests per message (receives, empty receives,
 *   deletes, visibility updates) and the CPU time per message of the client processes and of
 *   Azurite, which together bound the rate;
 * - fair to both sides (issue 27): each way's code is warmed up by an unmeasured drain of
 *   `WARM_UP_MESSAGES_PER_PROCESS` messages per process first, and a run drains 300 messages per
 *   process by default (150 before): the CPU figures are the steady state a long-running consumer
 *   sees, and the consumer's once-per-run costs (its start-up checks, two Get Queue Properties on
 *   the client and on Azurite, and its stop) weigh half as much per message, as does the noise of
 *   a single run. Both sides drain the same messages with the same requests per message (the
 *   `requestsPerMessage` figures show it); the goal's figure is the smallest point's CPU ratio, a
 *   minimum over six medians of four pairs, so it stays biased low by their noise;
 * - memory: the resident set of a consumer holding 1,000 messages in flight (in this process).
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { QueueClient } from "@azure/storage-queue";
import { QueueConsumer } from "azure-storage-concurrency/queue";
import { median, round } from "../harness.js";
import { describeSpread, ratioSpread } from "../stats.js";
import { spawnBenchWorker } from "../workers.js";

/** How a worker of the scale curve is started. */
export interface QueueWorkerConfig {
  readonly queue: string;
  /** Messages in flight in the worker. */
  readonly concurrency: number;
  /** Where the scenario writes `run-<n>` with `raw`, `consumer` or `exit` (see ../workers/queue-consumer.ts). */
  readonly goDir: string;
}

/** The calls a worker made on its queue during one run. */
export interface QueueRequestCounts {
  receives: number;
  /** Receives that found no message (counted in `receives` too). */
  emptyReceives: number;
  deletes: number;
  /** Update Message calls: visibility heartbeats, releases, retry delays. */
  updates: number;
}

/** What a worker prints when the queue is drained. */
export interface QueueWorkerReport {
  readonly run: number;
  /** The bodies it handled (raw: deleted), one entry per handling. */
  readonly handled: readonly string[];
  /** When it handled its last message (epoch ms). */
  readonly lastAt: number;
  /** Its CPU time (user + system) while draining. */
  readonly cpuMs: number;
  readonly requests: QueueRequestCounts;
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
/**
 * Messages per process of the unmeasured first drain of each way at each point. The consumer runs
 * far more JavaScript of its own than the raw loop (whose work is the SDK's, which both share), so
 * its code takes more calls to be optimised: after 50 messages it was still paying for that in the
 * first measured pairs, which counted against it (issue 27).
 */
const WARM_UP_MESSAGES_PER_PROCESS = 300;
type Way = "raw" | "consumer";

interface Options {
  readonly connectionString: string;
  readonly queue: QueueClient;
  /** Messages per run and worker process (a run of 4 processes drains 4 times as many as a run of 1). */
  readonly messagesPerProcess: number;
  /** Pairs of runs (one raw, one consumer) per point. */
  readonly repetitions: number;
  readonly fill: (queue: QueueClient, messages: number) => Promise<void>;
  /** CPU time of the embedded Azurite so far (undefined on an account). */
  readonly serverCpuMs: () => number | undefined;
  readonly log: (message: string) => void;
  readonly abortSignal: AbortSignal;
}

/** One drain, as the point's figures need it. */
interface Drain {
  readonly perSec: number;
  readonly duplicates: number;
  readonly lost: number;
  readonly clientCpuMsPerMessage: number;
  readonly serverCpuMsPerMessage: number | null;
  /** Requests per message, by kind. */
  readonly requestsPerMessage: QueueRequestCounts & { total: number };
}

/** The worker processes of one point: started once, told to drain run after run. */
async function startWorkers(options: Options, processes: number, concurrency: number) {
  const goDir = join(tmpdir(), `asc-bench-queue-${randomUUID()}`);
  mkdirSync(goDir);
  const config: QueueWorkerConfig = { queue: options.queue.name, concurrency, goDir };
  const workers = Array.from({ length: processes }, () =>
    spawnBenchWorker("queue-consumer", [JSON.stringify(config)], options.connectionString),
  );
  const kill = () => void Promise.all(workers.map((w) => w.kill()));
  options.abortSignal.addEventListener("abort", kill, { once: true });
  let run = 0;
  const tell = (what: Way | "exit") => {
    const file = join(goDir, `run-${run++}`);
    writeFileSync(`${file}.tmp`, what);
    renameSync(`${file}.tmp`, file);
  };
  await Promise.all(workers.map((w) => w.waitFor((m: { ready?: boolean }) => m?.ready === true, 60_000)));
  return {
    /** Fills the queue, has every worker drain it the `way` given, and measures it. */
    async drain(way: Way, messagesPerProcess = options.messagesPerProcess): Promise<Drain> {
      const { queue } = options;
      const messages = messagesPerProcess * processes;
      await options.fill(queue, messages);
      const thisRun = run;
      const server = options.serverCpuMs();
      const go = Date.now();
      tell(way);
      const reports = await Promise.all(
        workers.map((w) =>
          w.waitFor<QueueWorkerReport>((m) => typeof m === "object" && m !== null && m.run === thisRun, 120_000),
        ),
      );
      const serverMs = server === undefined ? undefined : options.serverCpuMs()! - server;
      await queue.clearMessages(); // a run that left messages behind does not feed the next
      const counts = new Map<string, number>();
      for (const body of reports.flatMap((r) => r.handled)) counts.set(body, (counts.get(body) ?? 0) + 1);
      let duplicates = 0;
      for (const n of counts.values()) duplicates += n - 1;
      const seconds = (Math.max(...reports.map((r) => r.lastAt)) - go) / 1000;
      const sum = (pick: (r: QueueWorkerReport) => number) => reports.reduce((total, r) => total + pick(r), 0);
      const perMessage = (pick: (r: QueueWorkerReport) => number) => sum(pick) / messages;
      const requests = {
        receives: perMessage((r) => r.requests.receives),
        emptyReceives: perMessage((r) => r.requests.emptyReceives),
        deletes: perMessage((r) => r.requests.deletes),
        updates: perMessage((r) => r.requests.updates),
      };
      return {
        perSec: messages / seconds,
        duplicates,
        lost: messages - counts.size,
        clientCpuMsPerMessage: perMessage((r) => r.cpuMs),
        serverCpuMsPerMessage: serverMs === undefined ? null : serverMs / messages,
        requestsPerMessage: { ...requests, total: requests.receives + requests.deletes + requests.updates },
      };
    },
    async stop() {
      options.abortSignal.removeEventListener("abort", kill);
      try {
        tell("exit");
        await Promise.race([
          Promise.all(workers.map((w) => w.exited)),
          new Promise((resolve) => setTimeout(resolve, 5_000).unref()),
        ]);
      } finally {
        await Promise.all(workers.map((w) => w.kill()));
        rmSync(goDir, { recursive: true, force: true });
      }
    },
  };
}

/** The medians of one way's drains at a point. */
function summary(drains: readonly Drain[]) {
  const m = (pick: (d: Drain) => number) => median(drains.map(pick));
  const requests = (kind: keyof Drain["requestsPerMessage"]) =>
    round(
      m((d) => d.requestsPerMessage[kind]),
      4,
    );
  const server = drains.map((d) => d.serverCpuMsPerMessage);
  return {
    perSec: round(
      m((d) => d.perSec),
      1,
    ),
    clientCpuMsPerMessage: round(
      m((d) => d.clientCpuMsPerMessage),
      3,
    ),
    serverCpuMsPerMessage: server.includes(null) ? null : round(median(server as number[]), 3),
    requestsPerMessage: {
      total: requests("total"),
      receives: requests("receives"),
      emptyReceives: requests("emptyReceives"),
      deletes: requests("deletes"),
      updates: requests("updates"),
    },
  };
}

/**
 * One point: `repetitions` pairs of drains by the same `processes` workers, raw and consumer
 * alternating which goes first.
 */
async function measurePoint(options: Options, processes: number, concurrency: number) {
  const workers = await startWorkers(options, processes, concurrency);
  const pairs: { raw: Drain; consumer: Drain }[] = [];
  try {
    // Not measured: the first drain of each way compiles its code (it used twice the CPU per message of the next).
    for (const way of ["raw", "consumer"] as const) await workers.drain(way, WARM_UP_MESSAGES_PER_PROCESS);
    for (let r = 0; r < options.repetitions; r++) {
      const order: Way[] = r % 2 === 0 ? ["raw", "consumer"] : ["consumer", "raw"];
      const pair: Partial<Record<Way, Drain>> = {};
      for (const way of order) pair[way] = await workers.drain(way);
      pairs.push(pair as { raw: Drain; consumer: Drain });
    }
  } finally {
    await workers.stop();
  }
  const raw = summary(pairs.map((p) => p.raw));
  const consumer = summary(pairs.map((p) => p.consumer));
  const ratios = pairs.map((p) => round(p.consumer.perSec / p.raw.perSec, 3));
  // Two pairs in opposite orders make a block; the geometric mean of their ratios cancels whatever
  // favours the first or the second run of a pair (on Azurite, a disk save every 5 s can fall on
  // every other run).
  const blocks = [];
  for (let i = 0; i < ratios.length; i += 2) {
    blocks.push(i + 1 < ratios.length ? Math.sqrt(ratios[i]! * ratios[i + 1]!) : ratios[i]!);
  }
  // The same pairs on CPU per message (clients + Azurite): other work on a shared machine stretches
  // a run's wall clock, not the CPU it takes, so these ratios spread far less (issue 27).
  const cpuOf = (d: Drain) =>
    d.serverCpuMsPerMessage === null ? Number.NaN : d.clientCpuMsPerMessage + d.serverCpuMsPerMessage;
  const cpuRatios = pairs.map((p) => round(cpuOf(p.raw) / cpuOf(p.consumer), 3));
  return {
    processes,
    concurrency,
    rawPerSec: raw.perSec,
    perSec: consumer.perSec,
    /** The median over blocks of two pairs (raw first, consumer first) of the geometric mean of their ratios. */
    ratio: round(median(blocks), 3),
    /** The ratio of each pair, in order: how far a single pair can be trusted. */
    ratios,
    /** The pairs' ratios as a median with their interquartile range and extremes. */
    ratioSpread: ratioSpread(ratios),
    /** Messages per second of each pair's runs, in the order they ran. */
    pairs: pairs.map((p, r) =>
      (r % 2 === 0 ? [p.raw, p.consumer] : [p.consumer, p.raw]).map((d) => round(d.perSec, 1)),
    ),
    duplicates: pairs.reduce((sum, p) => sum + p.raw.duplicates + p.consumer.duplicates, 0),
    lost: pairs.reduce((sum, p) => sum + p.raw.lost + p.consumer.lost, 0),
    /**
     * The raw loop's CPU per message (clients + Azurite) over the consumer's: the ratio a CPU-bound
     * machine allows, steadier than `ratio` when other work comes and goes (null on an account).
     */
    cpuRatio:
      raw.serverCpuMsPerMessage === null || consumer.serverCpuMsPerMessage === null
        ? null
        : round(
            (raw.clientCpuMsPerMessage + raw.serverCpuMsPerMessage) /
              (consumer.clientCpuMsPerMessage + consumer.serverCpuMsPerMessage),
            3,
          ),
    /** Each pair's raw CPU per message over the consumer's (null on an account), with their spread. */
    cpuRatios: cpuRatios.some((r) => Number.isNaN(r)) ? null : cpuRatios,
    cpuRatioSpread: cpuRatios.some((r) => Number.isNaN(r)) ? null : ratioSpread(cpuRatios),
    clientCpuMsPerMessage: { raw: raw.clientCpuMsPerMessage, consumer: consumer.clientCpuMsPerMessage },
    serverCpuMsPerMessage: { raw: raw.serverCpuMsPerMessage, consumer: consumer.serverCpuMsPerMessage },
    requestsPerMessage: { raw: raw.requestsPerMessage, consumer: consumer.requestsPerMessage },
  };
}

/** The consumer against the raw loop over 1, 2 and 4 processes, at 16 and 32 in flight each. */
export async function queueScale(options: Options) {
  const points = [];
  for (const concurrency of CONCURRENCIES) {
    for (const processes of PROCESSES) {
      const point = await measurePoint(options, processes, concurrency);
      points.push(point);
      const requests = (way: Way) => {
        const r = point.requestsPerMessage[way];
        return `${r.total} req/msg (${r.receives} receive, ${r.emptyReceives} empty, ${r.deletes} delete, ${r.updates} update)`;
      };
      options.log(
        `scale: ${processes} process${processes === 1 ? "" : "es"} × ${concurrency} in flight: raw ${point.rawPerSec} msg/s, ` +
          `consumer ${point.perSec} msg/s, ratio ${point.ratio} (pairs ${describeSpread(point.ratioSpread)}; CPU ratio ${point.cpuRatio ?? "n/a"}, ` +
          `pairs ${point.cpuRatioSpread ? describeSpread(point.cpuRatioSpread) : "n/a"}); ` +
          `raw ${requests("raw")}, CPU ms/msg client ${point.clientCpuMsPerMessage.raw} Azurite ${point.serverCpuMsPerMessage.raw ?? "n/a"}; ` +
          `consumer ${requests("consumer")}, CPU ms/msg client ${point.clientCpuMsPerMessage.consumer} Azurite ${point.serverCpuMsPerMessage.consumer ?? "n/a"}`,
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
    // Receiving until all are held: the default threshold (half the concurrency) would stop at about half.
    { batchSize: 32, concurrency: inFlight, newBatchThreshold: inFlight - 1, visibilityTimeoutInSeconds: 120 },
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
