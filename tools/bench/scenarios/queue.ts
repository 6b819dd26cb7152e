/**
 * `queue`: the queue consumer against a hand-written loop, on the same queue service in the same run.
 *
 * - raw: `loops` loops of receiveMessages(32) then deleteMessage of each received message in
 *   parallel, until the queue is empty; with `--concurrency 32` that is one loop with 32 deletes in
 *   flight, the same number of messages in flight as the consumer.
 * - consumer: QueueConsumer with batchSize 32 (at most `--concurrency`), concurrency `--concurrency`,
 *   a no-op handler, no idempotency.
 * - idempotent: the same with a TableIdempotencyStore and the default key, the message id (a first
 *   delivery writes its inbox row once, with the done mark: one table request per message).
 * - idempotentKeyed: keys derived from the body (`key` option), which catch producer duplicates too
 *   and need a claim before the handler: two table requests per message.
 * - idempotentKeyedTablesOnly: the same keys with `effects: "tables-only"` (issue 27; the handler's
 *   only effects would be `addEffects` rows): no claim before a first delivery's handler, the done
 *   record inserted with the effects, one table request per message as with the message id.
 *
 * Each round fills the queue with `--messages` messages (not timed) before each run and times from
 * start to the last message settled; the runs of a round are adjacent and their order rotates, and
 * the ratios are taken within a round, then the median over rounds is reported (other work on the
 * machine moves absolute numbers between rounds). `duplicates` counts messages handled (or, for
 * the raw loop, deleted) more than once, `lost` those never handled; both must be 0.
 *
 * Then the scale curves of ./queue-scale.ts: the consumer against the raw loop over 1, 2 and 4
 * processes at 16 and 32 in flight each, and the memory of 1,000 messages in flight.
 *
 * With `--latency-ms N` every queue and table request goes through a fault proxy that delays it by
 * N ms, to see the latency-bound case of a real account (where the service does not run on the
 * benchmark's CPUs).
 */
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { readdirSync, readFileSync } from "node:fs";
import type { ClientRequest } from "node:http";
import type { TableClient } from "@azure/data-tables";
import type { QueueClient } from "@azure/storage-queue";
import { numberFlag } from "../../internal/args.js";
import { importSdk } from "../../internal/sdk.js";
import { QueueConsumer } from "azure-storage-concurrency/queue";
import { TableIdempotencyStore } from "azure-storage-concurrency/idempotency";
import { buildConnectionString, createFaultProxy, type FaultProxy } from "azure-storage-concurrency/testing";
import { median, round, type BenchScenario } from "../harness.js";
import { growthOf, ratioSpread } from "../stats.js";
import { inFlightMemory, queueScale, rawDrain } from "./queue-scale.js";
import { describeError } from "azure-storage-concurrency/errors";

/** Messages a consumer holds at once for the memory figure. */
const IN_FLIGHT = 1_000;

/**
 * CPU time (user + system, ms) used so far by the embedded Azurite child of this process, read from
 * /proc on Linux; undefined elsewhere or against a real account. Azurite serves every request on one
 * event loop, so its CPU per message is what bounds throughput on a small machine.
 */
function azuriteCpuMs(): number | undefined {
  try {
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[1]) !== process.pid) continue;
      if (!readFileSync(`/proc/${entry}/cmdline`, "utf8").includes("azurite")) continue;
      return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, in USER_HZ (100/s)
    }
  } catch {
    // not Linux
  }
  return undefined;
}

interface Run {
  perSec: number;
  duplicates: number;
  lost: number;
  seconds: number;
  /** CPU time of this (client) process per message, user + system. */
  clientCpuMsPerMessage: number;
  /** CPU time of the embedded Azurite per message (undefined against an account). */
  serverCpuMsPerMessage: number | undefined;
  /** HTTP requests of this process per message, by kind. */
  requestsPerMessage: RequestCounts & { total: number };
}

/**
 * HTTP requests by kind: queue receives, deletes and updates (visibility), and everything else
 * (`other`: the idempotency store's table requests, the consumer's start-up checks).
 */
interface RequestCounts {
  receives: number;
  deletes: number;
  updates: number;
  other: number;
}

/** Counts this process's HTTP requests from now on (Node's `http.client.request.start` channel), until `stop()`. */
function requestMeter() {
  const counts: RequestCounts = { receives: 0, deletes: 0, updates: 0, other: 0 };
  const onRequest = (message: unknown) => {
    const { method, path } = (message as { request: ClientRequest }).request;
    const onMessages = /\/messages(\/|\?|$)/.test(path);
    if (onMessages && method === "GET" && !path.includes("peekonly=true")) counts.receives++;
    else if (onMessages && method === "DELETE" && path.includes("popreceipt=")) counts.deletes++;
    else if (onMessages && method === "PUT") counts.updates++;
    else counts.other++;
  };
  subscribe("http.client.request.start", onRequest);
  return {
    stop(): RequestCounts {
      unsubscribe("http.client.request.start", onRequest);
      return counts;
    },
  };
}

async function fill(queue: QueueClient, messages: number): Promise<void> {
  for (let i = 0; i < messages; i += 64) {
    await Promise.all(Array.from({ length: Math.min(64, messages - i) }, (_, j) => queue.sendMessage(`msg-${i + j}`)));
  }
}

function tally(
  counts: Map<string, number>,
  messages: number,
  seconds: number,
  cpu: NodeJS.CpuUsage,
  serverCpuMs: number | undefined,
  requests: RequestCounts,
): Run {
  let duplicates = 0;
  for (const n of counts.values()) duplicates += n - 1;
  const per = (n: number) => n / messages;
  const total = requests.receives + requests.deletes + requests.updates + requests.other;
  return {
    requestsPerMessage: {
      total: per(total),
      receives: per(requests.receives),
      deletes: per(requests.deletes),
      updates: per(requests.updates),
      other: per(requests.other),
    },
    perSec: messages / seconds,
    duplicates,
    lost: messages - counts.size,
    seconds,
    clientCpuMsPerMessage: (cpu.user + cpu.system) / 1000 / messages,
    serverCpuMsPerMessage: serverCpuMs === undefined ? undefined : serverCpuMs / messages,
  };
}

/** Measures client and Azurite CPU, and this process's requests, from now on. */
function cpuMeter() {
  const client = process.cpuUsage();
  const server = azuriteCpuMs();
  const requests = requestMeter();
  return {
    client: () => process.cpuUsage(client),
    server: () => (server === undefined ? undefined : azuriteCpuMs()! - server),
    requests: () => requests.stop(),
  };
}

/** The hand-written baseline (queue-scale.ts's `rawDrain`), in this process. */
async function rawRun(queue: QueueClient, messages: number, concurrency: number): Promise<Run> {
  const counts = new Map<string, number>();
  const cpu = cpuMeter();
  const started = performance.now();
  await rawDrain(queue, concurrency, (body) => counts.set(body, (counts.get(body) ?? 0) + 1));
  return tally(counts, messages, (performance.now() - started) / 1000, cpu.client(), cpu.server(), cpu.requests());
}

async function consumerRun(
  queue: QueueClient,
  messages: number,
  concurrency: number,
  inbox: TableClient | undefined,
  keyed = false,
  tablesOnly = false,
): Promise<Run> {
  const counts = new Map<string, number>();
  let settled = 0;
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const consumer = new QueueConsumer(
    queue,
    async (body: string) => {
      counts.set(body, (counts.get(body) ?? 0) + 1);
    },
    {
      batchSize: Math.min(32, concurrency),
      concurrency,
      visibilityTimeoutInSeconds: 30,
      ...(inbox
        ? {
            idempotency: {
              store: new TableIdempotencyStore(inbox),
              ...(keyed ? { key: (body: string) => body } : {}),
              ...(tablesOnly ? { effects: "tables-only" as const } : {}),
            },
          }
        : {}),
    },
  );
  const settle = () => {
    settled += 1;
    if (settled === messages) done();
  };
  consumer.on("processed", settle);
  consumer.on("duplicate", settle);
  consumer.on("error", ({ error, operation }) =>
    process.stderr.write(`[queue] consumer could not ${operation}: ${describeError(error)}\n`),
  );
  const cpu = cpuMeter();
  const started = performance.now();
  await consumer.start();
  await finished;
  const seconds = (performance.now() - started) / 1000;
  const client = cpu.client();
  const server = cpu.server();
  const requests = cpu.requests();
  await consumer.stop();
  return tally(counts, messages, seconds, client, server, requests);
}

interface Round {
  raw: Run;
  consumer: Run;
  idempotent: Run;
  idempotentKeyed: Run;
  idempotentKeyedTablesOnly: Run;
}

const KINDS = ["raw", "consumer", "idempotent", "idempotentKeyed", "idempotentKeyedTablesOnly"] as const;

function medians(runs: readonly Round[], pick: (run: Run) => number) {
  return Object.fromEntries(KINDS.map((kind) => [kind, round(median(runs.map((x) => pick(x[kind]))), 3)]));
}

export const queueScenario: BenchScenario<{
  tables: typeof import("@azure/data-tables");
  queues: typeof import("@azure/storage-queue");
}> = {
  name: "queue",
  description: "QueueConsumer (plain and with the Table idempotency store) vs a raw receive(32)+delete loop",
  flags: {
    "--messages <n>": "messages per run (default 500)",
    "--concurrency <n>": "messages in flight (default 32)",
    "--rounds <n>": "rounds; each figure is the median over them (default 5: each way runs once in each position)",
    "--latency-ms <ms>": "delay every queue and table request by this much through a fault proxy (default 0)",
    "--scale-messages <n>": "messages per run and worker process of the scale curve (default 300)",
    "--scale-repetitions <n>": "raw/consumer pairs of runs per point of the scale curve (default 4)",
  },
  services: ["queue", "table"],
  timeLimitInSec: 480,
  loadSdks: async () => ({
    tables: await importSdk(() => import("@azure/data-tables"), "@azure/data-tables"),
    queues: await importSdk(() => import("@azure/storage-queue"), "@azure/storage-queue"),
  }),
  async run(
    { connectionString: direct, args, log, abortSignal },
    { tables: { TableClient }, queues: { QueueServiceClient } },
  ) {
    const messages = numberFlag(args, "messages", 500, 1);
    const concurrency = numberFlag(args, "concurrency", 32, 1);
    const rounds = numberFlag(args, "rounds", KINDS.length, 1);
    const latencyMs = numberFlag(args, "latency-ms", 0, 0);
    const scaleMessages = numberFlag(args, "scale-messages", 300, 1);
    const scaleRepetitions = numberFlag(args, "scale-repetitions", 4, 1);
    const proxies: FaultProxy[] = [];
    let connectionString = direct;
    if (latencyMs > 0) {
      const endpoint = (name: string) => new RegExp(`${name}=([^;]+)`).exec(direct)?.[1];
      const queueEndpoint = endpoint("QueueEndpoint");
      const tableEndpoint = endpoint("TableEndpoint");
      if (!queueEndpoint || !tableEndpoint)
        throw new Error("--latency-ms needs a connection string with QueueEndpoint and TableEndpoint.");
      const delay = { action: { type: "delay", delayInMs: latencyMs } } as const;
      proxies.push(
        await createFaultProxy({ target: queueEndpoint, rules: [delay] }),
        await createFaultProxy({ target: tableEndpoint, rules: [delay] }),
      );
      connectionString = buildConnectionString({
        queueEndpoint: proxies[0]!.endpoint,
        tableEndpoint: proxies[1]!.endpoint,
      });
      log(`every queue and table request delayed by ${latencyMs} ms`);
    }
    const queues = QueueServiceClient.fromConnectionString(connectionString);
    const tag = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
    const queue = queues.getQueueClient(`bench-queue-${tag}`);
    await queue.create();
    const inboxes: TableClient[] = [];
    const runs: Round[] = [];
    let scale: Awaited<ReturnType<typeof queueScale>>;
    let memory: Awaited<ReturnType<typeof inFlightMemory>>;
    try {
      for (let r = 0; r < rounds; r++) {
        const inbox = TableClient.fromConnectionString(connectionString, `benchinbox${tag}${r}`, {
          allowInsecureConnection: true,
        });
        // The keyed runs use the same bodies as keys: each gets an inbox of its own, or the second would
        // find every key done by the first.
        const tablesOnlyInbox = TableClient.fromConnectionString(connectionString, `benchinbox${tag}${r}t`, {
          allowInsecureConnection: true,
        });
        await inbox.createTable();
        await tablesOnlyInbox.createTable();
        inboxes.push(inbox, tablesOnlyInbox);
        const kinds: Record<keyof Round, () => Promise<Run>> = {
          raw: () => rawRun(queue, messages, concurrency),
          consumer: () => consumerRun(queue, messages, concurrency, undefined),
          idempotent: () => consumerRun(queue, messages, concurrency, inbox),
          idempotentKeyed: () => consumerRun(queue, messages, concurrency, inbox, true),
          idempotentKeyedTablesOnly: () => consumerRun(queue, messages, concurrency, tablesOnlyInbox, true, true),
        };
        const order = KINDS.map((_, i) => KINDS[(i + r) % KINDS.length]!);
        const round: Partial<Round> = {};
        for (const kind of order) {
          const filling = performance.now();
          await fill(queue, messages);
          log(`filled the queue with ${messages} messages in ${((performance.now() - filling) / 1000).toFixed(1)} s`);
          round[kind] = await kinds[kind]();
          const run = round[kind];
          log(
            `round ${r + 1} ${kind}: ${Math.round(run.perSec)} msg/s (${run.seconds.toFixed(1)} s; CPU per message: ` +
              `client ${run.clientCpuMsPerMessage.toFixed(2)} ms, Azurite ${run.serverCpuMsPerMessage?.toFixed(2) ?? "n/a"} ms)`,
          );
        }
        runs.push(round as Round);
      }
      scale = await queueScale({
        connectionString,
        queue,
        messagesPerProcess: scaleMessages,
        repetitions: scaleRepetitions,
        fill,
        serverCpuMs: azuriteCpuMs,
        log,
        abortSignal,
      });
      memory = await inFlightMemory(queue, IN_FLIGHT, fill);
      log(`memory: ${memory.rssPerMessageKiB} KiB of resident set per message in flight (${IN_FLIGHT} in flight)`);
    } finally {
      await queue.delete();
      await Promise.all(inboxes.map((t) => t.deleteTable()));
      await Promise.all(proxies.map((p) => p.close()));
    }
    const ratio = median(runs.map((x) => x.consumer.perSec / x.raw.perSec));
    const idempotentRatio = median(runs.map((x) => x.idempotent.perSec / x.raw.perSec));
    const idempotentKeyedRatio = median(runs.map((x) => x.idempotentKeyed.perSec / x.raw.perSec));
    const idempotentKeyedTablesOnlyRatio = median(runs.map((x) => x.idempotentKeyedTablesOnly.perSec / x.raw.perSec));
    const all = runs.flatMap((x) => KINDS.map((kind) => x[kind]));
    const duplicates = all.reduce((sum, x) => sum + x.duplicates, 0);
    const lost = all.reduce((sum, x) => sum + x.lost, 0);
    return {
      messages,
      concurrency,
      rounds,
      latencyMs,
      rawPerSec: round(median(runs.map((x) => x.raw.perSec)), 1),
      perSec: round(median(runs.map((x) => x.consumer.perSec)), 1),
      ratio: round(ratio, 3),
      ratioSpread: ratioSpread(runs.map((x) => x.consumer.perSec / x.raw.perSec)),
      idempotentRatioSpread: ratioSpread(runs.map((x) => x.idempotent.perSec / x.raw.perSec)),
      idempotentKeyedRatioSpread: ratioSpread(runs.map((x) => x.idempotentKeyed.perSec / x.raw.perSec)),
      // The same rounds on CPU per message (this process + Azurite), steadier on a shared machine.
      ...Object.fromEntries(
        (["consumer", "idempotent", "idempotentKeyed"] as const).map((kind) => {
          const cpu = (run: Run) =>
            run.serverCpuMsPerMessage === undefined
              ? Number.NaN
              : run.clientCpuMsPerMessage + run.serverCpuMsPerMessage;
          const name = kind === "consumer" ? "cpuRatioSpread" : `${kind}CpuRatioSpread`;
          return [name, ratioSpread(runs.map((x) => cpu(x.raw) / cpu(x[kind])))];
        }),
      ),
      idempotentPerSec: round(median(runs.map((x) => x.idempotent.perSec)), 1),
      idempotentRatio: round(idempotentRatio, 3),
      idempotentKeyedPerSec: round(median(runs.map((x) => x.idempotentKeyed.perSec)), 1),
      idempotentKeyedRatio: round(idempotentKeyedRatio, 3),
      idempotentKeyedTablesOnlyPerSec: round(median(runs.map((x) => x.idempotentKeyedTablesOnly.perSec)), 1),
      idempotentKeyedTablesOnlyRatio: round(idempotentKeyedTablesOnlyRatio, 3),
      duplicates,
      lost,
      clientCpuMsPerMessage: medians(runs, (x) => x.clientCpuMsPerMessage),
      serverCpuMsPerMessage: medians(runs, (x) => x.serverCpuMsPerMessage ?? Number.NaN),
      requestsPerMessage: Object.fromEntries(
        KINDS.map((kind) => [
          kind,
          Object.fromEntries(
            (["total", "receives", "deletes", "updates", "other"] as const).map((what) => [
              what,
              round(median(runs.map((x) => x[kind].requestsPerMessage[what])), 4),
            ]),
          ),
        ]),
      ),
      perRound: runs.map((x) => ({
        rawPerSec: round(x.raw.perSec, 1),
        perSec: round(x.consumer.perSec, 1),
        idempotentPerSec: round(x.idempotent.perSec, 1),
        idempotentKeyedPerSec: round(x.idempotentKeyed.perSec, 1),
        idempotentKeyedTablesOnlyPerSec: round(x.idempotentKeyedTablesOnly.perSec, 1),
      })),
      scaleMessagesPerProcess: scaleMessages,
      scaleRepetitions,
      scale,
      scaleMinRatio: Math.min(...scale.map((p) => p.ratio)),
      // The goal's figure (issue 27): the worst point on CPU per message, which a shared machine's
      // other work moves far less than the pairs' throughput ratios (see each point's spreads).
      scaleMinCpuRatio: scale.some((p) => p.cpuRatio === null) ? null : Math.min(...scale.map((p) => p.cpuRatio!)),
      scaleGrowth: growthOf(scale.filter((p) => p.concurrency === 32).map((p) => ({ x: p.processes, y: p.perSec }))),
      memory,
      goals: {
        ratio: { goal: ">= 0.95", met: ratio >= 0.95 },
        idempotentRatio: { goal: ">= 0.85", met: idempotentRatio >= 0.85 },
        idempotentKeyedTablesOnlyRatio: { goal: ">= 0.8", met: idempotentKeyedTablesOnlyRatio >= 0.8 },
        duplicates: { goal: "0", met: duplicates === 0 },
        lost: { goal: "0", met: lost === 0 },
      },
    };
  },
};
