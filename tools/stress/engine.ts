/**
 * The partition stress test of "Designing a Scalable Partitioning Strategy for Azure Table Storage",
 * as a function. For each key design, the document's four steps:
 *
 * 1. create a test table;
 * 2. load it so that the target partition(s) hold entities (through {@link writeBatch});
 * 3. drive a peak load (point reads, inserts, updates) from several concurrent workers;
 * 4. measure GET and PUT throughput, per second and per partition, against the scalability target
 *    of one partition: 500 entities per second.
 *
 * "If one partition's throughput is over 500 entities/s, the server may run overloaded in
 * production: the PartitionKey is too coarse." The test reports the busiest partition's rate for
 * each design, and how many answers were ServerBusy or timeouts.
 *
 * An emulator says nothing about Azure's partition limits: Azurite has no partition servers, so on
 * it the figures show the load a design would put on one partition, not what Azure would sustain.
 */
import type { TableClient } from "@azure/data-tables";
import { describeError, redactSecrets, statusOf } from "azure-storage-concurrency/errors";
import { checkNumber, checkOptionalFunction, checkOptionalInstance, checkOptionalSignal } from "../internal/check.js";
import { setTimeout as sleep } from "node:timers/promises";
import { classifyError } from "azure-storage-concurrency/retry";
import { writeBatch } from "azure-storage-concurrency/tables";
import { resolveDesign, type BuiltInStressDesign, type StressKeyDesign } from "./designs.js";
import { runThrottled, throttleScopeOf, type AdaptiveRateLimiter } from "azure-storage-concurrency/throttling";

/** The scalability target of one partition, in entities per second (the design guide). */
export const PARTITION_TARGET_ENTITIES_PER_SEC = 500;

/**
 * The busiest partition's share of the load from which a design is judged to concentrate its load
 * ("hot partition"): at half the load or more on one partition, the whole design takes at most twice
 * one partition's target, however many partitions the account has. The verdict is judged by this
 * share, which depends on the keys only, not by the rate the target happened to reach (on an emulator
 * that rate is the machine's speed, and it changes from run to run).
 */
export const HOT_PARTITION_SHARE = 0.5;

/** The part of a `TableClient` the stress test uses. */
export type StressTableClient = Pick<
  TableClient,
  | "createTable"
  | "deleteTable"
  | "getEntity"
  | "createEntity"
  | "updateEntity"
  | "submitTransaction"
  | "url"
  | "tableName"
>;

/** The share of each operation in the load (normalised; they need not add up to 1). */
export interface StressMix {
  /** Point reads (GET) of loaded entities. @default 0.5 */
  readonly read?: number;
  /** Inserts (PUT) of new entities, keyed by the design. @default 0.25 */
  readonly insert?: number;
  /** Merge updates (PUT) of loaded entities. @default 0.25 */
  readonly update?: number;
}

/** Options for {@link runPartitionStressTest}. */
export interface PartitionStressOptions {
  /** Gives a client for a table name. Build it with the SDK's retries off (`SDK_SINGLE_ATTEMPT.tables`) to see ServerBusy answers. */
  readonly createTableClient: (tableName: string) => StressTableClient;
  /**
   * The key designs to compare, one after another.
   * @default ["single"]
   */
  readonly designs?: readonly (BuiltInStressDesign | StressKeyDesign)[];
  /** How long the load (step 3) runs for each design, in seconds (0.5 to 86,400). @default 10 */
  readonly durationInSeconds?: number;
  /** Concurrent workers driving the load. @default 4 */
  readonly workers?: number;
  /** Entities loaded before the load starts (step 2). @default 200 */
  readonly preloadEntities?: number;
  /** The share of reads, inserts and updates in the load. @default { read: 0.5, insert: 0.25, update: 0.25 } */
  readonly mix?: StressMix;
  /** Cap on operations per second over all workers; unlimited drives the peak the workers reach. @default Infinity */
  readonly targetOpsPerSec?: number;
  /** Size of each entity's payload property, in bytes (characters of an ASCII string; 0 to 32,768). @default 256 */
  readonly entityBytes?: number;
  /** Keep the test tables instead of deleting them. @default false */
  readonly keepTables?: boolean;
  /** Prefix of the test tables' names (letters and digits). @default "stress" */
  readonly tablePrefix?: string;
  /** How often a sample (and a progress report) is taken, in milliseconds (50 to 60,000). @default 1000 */
  readonly sampleIntervalInMs?: number;
  /** Whether the target is an emulator; by default guessed from the endpoint (loopback or devstoreaccount1). */
  readonly emulator?: boolean;
  /** Called after each sample, for live progress. */
  readonly onProgress?: (progress: StressProgress) => void;
  /** Stops the load early; the result holds what was measured and the tables are still cleaned up. */
  readonly abortSignal?: AbortSignal;
  /**
   * Send the load's operations through this limiter (docs/throttling.md): a partition the service
   * throttles is slowed down instead of hammered. Compare runs with and without it.
   * @default undefined
   */
  readonly rateLimiter?: AdaptiveRateLimiter;
  /**
   * Called before each design's preload (step 2) and before its load (step 3), awaited. The CLI's
   * `--model` uses it to serve the preload unthrottled: a preload sent through the throttling model
   * would leave the partition paying it off when the load starts, and the run would measure that.
   */
  readonly onPhase?: (phase: "preload" | "load", design: string) => void | Promise<void>;
}

/** One sample of throughput. */
export interface StressSample {
  /** Seconds since the load started, at the end of the sample. */
  readonly atSec: number;
  /** Point reads (GET) that succeeded, per second, over this sample. */
  readonly getPerSec: number;
  /** Inserts and updates (PUT) that succeeded, per second, over this sample. */
  readonly putPerSec: number;
  /** The busiest partition's entities per second in this sample. */
  readonly busiestPartitionPerSec: number;
  /** Failed operations (any error, ServerBusy and timeouts included), per second, over this sample. */
  readonly errorsPerSec: number;
}

/** A live progress report. */
export interface StressProgress extends StressSample {
  /** The name of the design under load. */
  readonly design: string;
  /** The step of the test: progress is reported during the load (step 3) only. */
  readonly phase: "load";
  /** How long the load of this design lasts, in seconds (compare with `atSec`). */
  readonly durationInSeconds: number;
}

/** Latency percentiles, in milliseconds. */
export interface LatencySummary {
  /** The median (0 when nothing succeeded). */
  readonly p50: number;
  /** The 95th percentile. */
  readonly p95: number;
  /** The 99th percentile. */
  readonly p99: number;
}

/** What one design measured. */
export interface StressDesignResult {
  /** The design's name ({@link StressKeyDesign.name}). */
  readonly design: string;
  /** What the design does ({@link StressKeyDesign.description}). */
  readonly description: string;
  /** The test table's name (deleted after the run unless `keepTables`). */
  readonly table: string;
  /** Entities loaded before the load started (step 2). */
  readonly preloaded: number;
  /** How long the load really ran, in seconds (shorter than asked when aborted). */
  readonly durationSec: number;
  /** What the load did, counted over the whole run. */
  readonly operations: {
    /** Point reads that succeeded. */
    readonly reads: number;
    /** Inserts that succeeded. */
    readonly inserts: number;
    /** Updates that succeeded. */
    readonly updates: number;
    /** Operations that failed, for any reason. */
    readonly errors: number;
    /** Of `errors`, those that were throttling (503 ServerBusy) or timeouts. */
    readonly throttled: number;
  };
  /** Successful point reads per second over the run. */
  readonly getPerSec: number;
  /** Successful inserts and updates per second over the run. */
  readonly putPerSec: number;
  /** Successful operations of every kind per second over the run. */
  readonly entitiesPerSec: number;
  /** Distinct PartitionKeys the load touched. */
  readonly partitionKeysTouched: number;
  /** Distinct partitions the load touched, as the design counts them (append-only keys share one range partition). */
  readonly partitionsTouched: number;
  /** The partition that took the most entities per second over the run. */
  readonly busiestPartition: {
    /** The partition, as {@link StressKeyDesign.partitionOf} names it; `""` when nothing succeeded. */
    readonly partition: string;
    /** Its successful operations per second over the run. */
    readonly entitiesPerSec: number;
    /** Its share of the successful operations (0 to 1; 0 when nothing succeeded). */
    readonly share: number;
  };
  /**
   * The total load the design takes before its busiest partition reaches the 500 entities/s target
   * (the target divided by the busiest partition's share), in entities per second; `null` when
   * nothing succeeded. Judged by the keys, not by the speed of the target.
   */
  readonly sustainableEntitiesPerSec: number | null;
  /** Whether the busiest partition took {@link HOT_PARTITION_SHARE} of the load or more: the verdict. */
  readonly hotPartition: boolean;
  /**
   * Whether the busiest partition's measured rate went over the 500 entities/s target in this run.
   * Meaningful against a real account; on an emulator it is the machine's speed (see `hotPartition`).
   */
  readonly overTarget: boolean;
  /** Latency percentiles of the operations that succeeded, in milliseconds. */
  readonly latencyMs: {
    /** Of successful point reads. */
    readonly get: LatencySummary;
    /** Of successful inserts and updates. */
    readonly put: LatencySummary;
  };
  /** The first few distinct error messages. */
  readonly errorSamples: readonly string[];
  /**
   * A few sentences: the busiest partition's share of the load and what the design therefore
   * sustains, the design's advice when one partition takes too much, the measured rate against the
   * target on a real account, throttling seen.
   */
  readonly verdict: string;
  /** Throughput over time, one sample per `sampleIntervalInMs`. */
  readonly samples: readonly StressSample[];
}

/** The whole test's result: what the JSON file holds. */
export interface PartitionStressResult {
  /** Always `"partition-stress-test"`: says what wrote a saved JSON file. */
  readonly tool: "partition-stress-test";
  /** The table endpoint the test ran against (the last test table's URL, without its query: no SAS). */
  readonly endpoint: string;
  /** Whether the target was taken to be an emulator (see {@link PartitionStressOptions.emulator}). */
  readonly emulator: boolean;
  /** One paragraph on how to read the figures, for an emulator or for a real account. */
  readonly note: string;
  /** The scalability target of one partition the verdicts compare with: {@link PARTITION_TARGET_ENTITIES_PER_SEC}. */
  readonly targetEntitiesPerSecPerPartition: number;
  /** The settings the test ran with, defaults filled in. */
  readonly settings: {
    /** Load duration per design, in seconds. */
    readonly durationInSeconds: number;
    /** Concurrent workers. */
    readonly workers: number;
    /** Entities loaded per design before the load. */
    readonly preloadEntities: number;
    /** The operation mix as given (before normalisation), defaults filled in. */
    readonly mix: Required<StressMix>;
    /** The cap on operations per second; `null` for none. */
    readonly targetOpsPerSec: number | null;
    /** Payload bytes per entity. */
    readonly entityBytes: number;
  };
  /** When the test started, ISO 8601. */
  readonly startedAt: string;
  /** When it finished, ISO 8601. */
  readonly finishedAt: string;
  /** Whether `abortSignal` stopped it early (designs not started are missing from `designs`). */
  readonly aborted: boolean;
  /** Whether the test tables were kept (`keepTables`). */
  readonly tablesKept: boolean;
  /** One result per design, in the order they ran. */
  readonly designs: readonly StressDesignResult[];
}

const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits;

function percentiles(values: number[]): LatencySummary {
  if (values.length === 0) return { p50: 0, p95: 0, p99: 0 };
  values.sort((a, b) => a - b);
  const at = (q: number) => round(values[Math.min(values.length - 1, Math.floor(q * values.length))]!, 2);
  return { p50: at(0.5), p95: at(0.95), p99: at(0.99) };
}

/** A client's URL without its query: a SAS client's URL carries the signature, which must not reach the result. */
function withoutQuery(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return redactSecrets(url.split("?")[0]!);
  }
}

function guessEmulator(url: string): boolean {
  return /\/\/(127\.0\.0\.1|localhost|\[::1\]|0\.0\.0\.0)[:/]/i.test(url) || url.includes("devstoreaccount1");
}

/**
 * Runs the partition stress test and returns its measurements; see the module documentation.
 *
 * @example
 * ```ts
 * import { writeFile } from "node:fs/promises";
 * import { TableClient } from "@azure/data-tables";
 * import { SDK_SINGLE_ATTEMPT } from "azure-storage-concurrency/retry";
 * import { runPartitionStressTest } from "azure-storage-concurrency-cli";
 *
 * const result = await runPartitionStressTest({
 *   createTableClient: (name) => TableClient.fromConnectionString(connectionString, name, { retryOptions: SDK_SINGLE_ATTEMPT.tables }),
 *   designs: ["single", "bucketed"],
 *   durationInSeconds: 20,
 *   onProgress: (p) => console.error(`${p.design} ${p.atSec}s GET ${p.getPerSec}/s PUT ${p.putPerSec}/s`),
 * });
 * for (const d of result.designs) console.log(d.design, d.verdict);
 * // The command line draws its chart: azure-storage-concurrency stress --from result.json --svg chart.svg
 * await writeFile("result.json", JSON.stringify(result));
 * ```
 */
export async function runPartitionStressTest(options: PartitionStressOptions): Promise<PartitionStressResult> {
  if (typeof options?.createTableClient !== "function")
    throw new TypeError("`createTableClient` must be a function of a table name.");
  const designs = (options.designs ?? ["single"]).map(resolveDesign);
  if (designs.length === 0) throw new RangeError("`designs` must name at least one key design.");
  const durationInSeconds = checkNumber("durationInSeconds", options.durationInSeconds ?? 10, {
    min: 0.5,
    max: 86_400,
  });
  const workers = checkNumber("workers", options.workers ?? 4, { min: 1, max: 1000, integer: true });
  const preloadEntities = checkNumber("preloadEntities", options.preloadEntities ?? 200, {
    min: 1,
    max: 1_000_000,
    integer: true,
  });
  const targetOpsPerSec = checkNumber("targetOpsPerSec", options.targetOpsPerSec ?? Infinity, {
    min: 1,
    allowInfinity: true,
  });
  const entityBytes = checkNumber("entityBytes", options.entityBytes ?? 256, { min: 0, max: 32_768, integer: true });
  const sampleIntervalInMs = checkNumber("sampleIntervalInMs", options.sampleIntervalInMs ?? 1000, {
    min: 50,
    max: 60_000,
  });
  const tablePrefix = options.tablePrefix ?? "stress";
  if (!/^[A-Za-z][A-Za-z0-9]{0,39}$/.test(tablePrefix))
    throw new RangeError("`tablePrefix` must be a letter then letters or digits, at most 40.");
  const mixIn = options.mix ?? {};
  const mix = {
    read: checkNumber("mix.read", mixIn.read ?? 0.5, { min: 0 }),
    insert: checkNumber("mix.insert", mixIn.insert ?? 0.25, { min: 0 }),
    update: checkNumber("mix.update", mixIn.update ?? 0.25, { min: 0 }),
  };
  const mixTotal = mix.read + mix.insert + mix.update;
  if (mixTotal <= 0) throw new RangeError("`mix` must give at least one operation a share above 0.");
  checkOptionalFunction("onProgress", options.onProgress);
  checkOptionalSignal("abortSignal", options.abortSignal);
  checkOptionalInstance("rateLimiter", options.rateLimiter, "run", "an AdaptiveRateLimiter");
  checkOptionalFunction("onPhase", options.onPhase);

  const runId = `${Date.now().toString(36)}${Math.floor(Math.random() * 36 ** 4).toString(36)}`;
  const startedAt = new Date().toISOString();
  const results: StressDesignResult[] = [];
  let endpoint = "";
  let emulator = options.emulator ?? false;
  for (const [i, design] of designs.entries()) {
    if (options.abortSignal?.aborted) break;
    const client = options.createTableClient(`${tablePrefix}${runId}${i}`.slice(0, 63));
    endpoint = withoutQuery(client.url);
    emulator = options.emulator ?? guessEmulator(client.url);
    results.push(
      await runDesign(client, design, {
        durationInSeconds,
        workers,
        preloadEntities,
        targetOpsPerSec,
        entityBytes,
        sampleIntervalInMs,
        keepTables: options.keepTables ?? false,
        mix: { read: mix.read / mixTotal, insert: mix.insert / mixTotal, update: mix.update / mixTotal },
        onProgress: options.onProgress,
        abortSignal: options.abortSignal,
        rateLimiter: options.rateLimiter,
        onPhase: options.onPhase,
        emulator,
      }),
    );
  }
  return {
    tool: "partition-stress-test",
    endpoint,
    emulator,
    note: emulator
      ? "Measured on an emulator: Azurite has no partition servers and no 500 entities/s limit, so these figures show the load each key design puts on its busiest partition, not what Azure would sustain. Run against a real account to measure Azure."
      : "Measured against a real account. Azure balances load by moving partitions after a few minutes above target; short runs show the first minutes only.",
    targetEntitiesPerSecPerPartition: PARTITION_TARGET_ENTITIES_PER_SEC,
    settings: {
      durationInSeconds,
      workers,
      preloadEntities,
      mix,
      targetOpsPerSec: Number.isFinite(targetOpsPerSec) ? targetOpsPerSec : null,
      entityBytes,
    },
    startedAt,
    finishedAt: new Date().toISOString(),
    aborted: options.abortSignal?.aborted ?? false,
    tablesKept: options.keepTables ?? false,
    designs: results,
  };
}

interface DesignSettings {
  durationInSeconds: number;
  workers: number;
  preloadEntities: number;
  targetOpsPerSec: number;
  entityBytes: number;
  sampleIntervalInMs: number;
  keepTables: boolean;
  mix: Required<StressMix>;
  onProgress: ((progress: StressProgress) => void) | undefined;
  abortSignal: AbortSignal | undefined;
  rateLimiter: AdaptiveRateLimiter | undefined;
  onPhase: PartitionStressOptions["onPhase"];
  emulator: boolean;
}

const percent = (share: number) => `${round(share * 100, 1)}%`;

/**
 * The verdict on a design from its busiest partition's share of the load (which the keys decide)
 * rather than from the rate this run reached (which, on an emulator, the machine decides). On a real
 * account the measured rate against the target is added: there it is Azure's answer.
 */
export function judge(
  design: Pick<StressKeyDesign, "advice">,
  busiest: { readonly partition: string; readonly entitiesPerSec: number; readonly share: number },
  anySucceeded: boolean,
  emulator: boolean,
): { verdict: string; hotPartition: boolean; overTarget: boolean; sustainableEntitiesPerSec: number | null } {
  const overTarget = busiest.entitiesPerSec > PARTITION_TARGET_ENTITIES_PER_SEC;
  if (!anySucceeded || busiest.share <= 0)
    return {
      verdict: "No operation succeeded: nothing to judge.",
      hotPartition: false,
      overTarget,
      sustainableEntitiesPerSec: null,
    };
  const hotPartition = busiest.share >= HOT_PARTITION_SHARE;
  const sustainable = Math.round(PARTITION_TARGET_ENTITIES_PER_SEC / busiest.share);
  const share = `The busiest partition (${busiest.partition}) took ${percent(busiest.share)} of the load`;
  const sentences = [
    hotPartition
      ? `${share}: a hot partition. The design takes at most ${sustainable} entities/s in all before that partition reaches the ${PARTITION_TARGET_ENTITIES_PER_SEC} entities/s target of one partition, however large the account. ${design.advice ?? "Spread the load over more partitions."}`
      : `${share}: the load spreads. The design takes about ${sustainable} entities/s in all before its busiest partition reaches the ${PARTITION_TARGET_ENTITIES_PER_SEC} entities/s target of one partition.`,
  ];
  if (emulator)
    sentences.push(`It ran at ${busiest.entitiesPerSec} entities/s here: the emulator's speed, not Azure's limit.`);
  else if (overTarget)
    sentences.push(
      `It took ${busiest.entitiesPerSec} entities/s, over the target: Azure throttles it (503 ServerBusy, timeouts) until the partition is rebalanced.`,
    );
  else sentences.push(`It took ${busiest.entitiesPerSec} entities/s, within the target.`);
  return { verdict: sentences.join(" "), hotPartition, overTarget, sustainableEntitiesPerSec: sustainable };
}

async function runDesign(
  client: StressTableClient,
  design: StressKeyDesign,
  settings: DesignSettings,
): Promise<StressDesignResult> {
  const payload = "x".repeat(settings.entityBytes);
  const signal = settings.abortSignal ? { abortSignal: settings.abortSignal } : {};
  // Step 1: a test table.
  await client.createTable(signal);
  try {
    // Step 2: load it.
    await settings.onPhase?.("preload", design.name);
    const loaded = Array.from({ length: settings.preloadEntities }, (_, sequence) => design.keyOf(sequence));
    // Transient failures (a throttled partition) are retried: the load, not the preload, is measured.
    const preload = await writeBatch(
      client,
      loaded.map((keys) => ["upsert", { ...keys, payload, counter: 0 }] as const),
      { maxConcurrency: 8, retry: { maxRetries: 8 }, ...signal },
    );
    if (!preload.ok && !settings.abortSignal?.aborted) {
      const failure = preload.transactions.find((t) => t.error)?.error;
      throw new Error(`loading the test table failed: ${failure?.message ?? "transactions were not sent"}`);
    }

    // Step 3: the peak load.
    await settings.onPhase?.("load", design.name);
    let nextSequence = settings.preloadEntities;
    const totals = { reads: 0, inserts: 0, updates: 0, errors: 0, throttled: 0 };
    const perPartition = new Map<string, number>();
    const partitionKeys = new Set<string>();
    const latency = { get: [] as number[], put: [] as number[] };
    const errorSamples = new Set<string>();
    const samples: StressSample[] = [];
    let interval = { gets: 0, puts: 0, errors: 0, partitions: new Map<string, number>() };
    const started = performance.now();
    const deadline = started + settings.durationInSeconds * 1000;
    const stop = new AbortController();
    const onAbort = () => stop.abort(settings.abortSignal?.reason);
    settings.abortSignal?.addEventListener("abort", onAbort, { once: true });

    let lastSampleAt = started;
    const takeSample = () => {
      const now = performance.now();
      const seconds = Math.max(0.001, (now - lastSampleAt) / 1000);
      lastSampleAt = now;
      const sample: StressSample = {
        atSec: round((now - started) / 1000, 2),
        getPerSec: round(interval.gets / seconds),
        putPerSec: round(interval.puts / seconds),
        busiestPartitionPerSec: round(Math.max(0, ...interval.partitions.values()) / seconds),
        errorsPerSec: round(interval.errors / seconds),
      };
      interval = { gets: 0, puts: 0, errors: 0, partitions: new Map() };
      samples.push(sample);
      settings.onProgress?.({
        ...sample,
        design: design.name,
        phase: "load",
        durationInSeconds: settings.durationInSeconds,
      });
    };
    const timer = setInterval(takeSample, settings.sampleIntervalInMs);
    timer.unref();

    const count = (partitionKey: string) => {
      partitionKeys.add(partitionKey);
      const partition = design.partitionOf ? design.partitionOf(partitionKey) : partitionKey;
      perPartition.set(partition, (perPartition.get(partition) ?? 0) + 1);
      interval.partitions.set(partition, (interval.partitions.get(partition) ?? 0) + 1);
    };
    const pick = () => loaded[Math.floor(Math.random() * loaded.length)]!;
    const table = `${client.url}/${client.tableName}`;
    const send = <T>(partitionKey: string, call: () => Promise<T>) =>
      runThrottled(settings.rateLimiter, () => throttleScopeOf(table, { service: "table", partitionKey }), call, stop.signal); // prettier-ignore
    const operation = async () => {
      const roll = Math.random();
      const t0 = performance.now();
      let kind: "get" | "insert" | "update";
      let keys: { partitionKey: string; rowKey: string };
      try {
        if (roll < settings.mix.read) {
          kind = "get";
          keys = pick();
          const { partitionKey, rowKey } = keys;
          await send(partitionKey, () => client.getEntity(partitionKey, rowKey, { abortSignal: stop.signal }));
        } else if (roll < settings.mix.read + settings.mix.insert) {
          kind = "insert";
          keys = design.keyOf(nextSequence++);
          const entity = { ...keys, payload, counter: 0 };
          await send(keys.partitionKey, () => client.createEntity(entity, { abortSignal: stop.signal }));
        } else {
          kind = "update";
          keys = pick();
          const entity = { ...keys, counter: Math.floor(Math.random() * 1e6) };
          await send(keys.partitionKey, () =>
            client.updateEntity(entity, "Merge", { etag: "*", abortSignal: stop.signal }),
          );
        }
      } catch (error) {
        if (stop.signal.aborted) return;
        totals.errors += 1;
        interval.errors += 1;
        const { kind: failure } = classifyError(error);
        if (failure === "throttled" || failure === "timeout") totals.throttled += 1;
        if (errorSamples.size < 5)
          errorSamples.add(redactSecrets(`${statusOf(error) ?? failure}: ${describeError(error).split("\n")[0]}`));
        return;
      }
      const ms = performance.now() - t0;
      if (kind === "get") {
        totals.reads += 1;
        interval.gets += 1;
        latency.get.push(ms);
      } else {
        if (kind === "insert") totals.inserts += 1;
        else totals.updates += 1;
        interval.puts += 1;
        latency.put.push(ms);
      }
      count(keys.partitionKey);
    };
    const perWorkerGapInMs = Number.isFinite(settings.targetOpsPerSec)
      ? (1000 * settings.workers) / settings.targetOpsPerSec
      : 0;
    const worker = async (w: number) => {
      let due = started + (perWorkerGapInMs * w) / settings.workers;
      while (!stop.signal.aborted && performance.now() < deadline) {
        if (perWorkerGapInMs > 0) {
          const wait = due - performance.now();
          if (wait > 0)
            await sleep(Math.min(wait, deadline - performance.now()), undefined, { signal: stop.signal }).catch(
              () => undefined,
            );
          due += perWorkerGapInMs;
          if (stop.signal.aborted || performance.now() >= deadline) break;
        }
        await operation();
      }
    };
    // With a limiter, workers may wait for tokens past the end: their waits stop at the end.
    const ending = settings.rateLimiter ? setTimeout(() => stop.abort(), deadline - performance.now()) : undefined;
    try {
      await Promise.all(Array.from({ length: settings.workers }, (_, w) => worker(w)));
    } finally {
      clearTimeout(ending);
      clearInterval(timer);
      settings.abortSignal?.removeEventListener("abort", onAbort);
      stop.abort();
    }
    const elapsedSec = Math.max(0.001, (performance.now() - started) / 1000);
    // The last, partial interval: kept when it is long enough for its rates to mean something.
    if (performance.now() - lastSampleAt >= settings.sampleIntervalInMs / 4) takeSample();

    // Step 4: throughput against the target, judged by the busiest partition's share of the load.
    const succeeded = [...perPartition.values()].reduce((a, b) => a + b, 0);
    let busiest = { partition: "", entitiesPerSec: 0, share: 0 };
    for (const [partition, n] of perPartition) {
      if (n / elapsedSec > busiest.entitiesPerSec)
        busiest = { partition, entitiesPerSec: round(n / elapsedSec), share: round(n / succeeded, 3) };
    }
    const puts = totals.inserts + totals.updates;
    const judged = judge(design, busiest, succeeded > 0, settings.emulator);
    const verdict = [
      judged.verdict,
      totals.throttled > 0
        ? `${totals.throttled} answers were ServerBusy or timeouts: the service was at a limit.`
        : "",
    ]
      .filter(Boolean)
      .join(" ");
    return {
      design: design.name,
      description: design.description,
      table: client.tableName,
      preloaded: settings.preloadEntities,
      durationSec: round(elapsedSec, 2),
      operations: totals,
      getPerSec: round(totals.reads / elapsedSec),
      putPerSec: round(puts / elapsedSec),
      entitiesPerSec: round((totals.reads + puts) / elapsedSec),
      partitionKeysTouched: partitionKeys.size,
      partitionsTouched: perPartition.size,
      busiestPartition: busiest,
      sustainableEntitiesPerSec: judged.sustainableEntitiesPerSec,
      hotPartition: judged.hotPartition,
      overTarget: judged.overTarget,
      latencyMs: { get: percentiles(latency.get), put: percentiles(latency.put) },
      errorSamples: [...errorSamples],
      verdict,
      samples,
    };
  } finally {
    if (!settings.keepTables) {
      await client.deleteTable().catch((error: unknown) => {
        if (statusOf(error) !== 404) throw error;
      });
    }
  }
}
