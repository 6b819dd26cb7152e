/**
 * `optimistic`: the optimistic-update loop against raw SDK calls, on JSON counter blobs.
 *
 * Every figure comes from worker processes started the same way (warmed up, then released
 * together), and every ratio is taken within one round, against the baseline measured in that round:
 * - serialPerSec: 1 writer, raw SDK read + If-Match write; measured interleaved, update by update,
 *   with the single-writer ways below, just before and just after the round's races;
 * - singleWriterPerSec / singleWriterRatio: 1 writer using the library, which skips the read when it
 *   wrote last (interleaved with the raw writer, so noise hits both alike);
 * - overheadRatio: median time per update of the library with write-skipping off (the same two calls
 *   as raw) over the raw loop's, interleaved likewise; historyHeaderOnlyRatio: the raw loop also
 *   sending a metadata header the size of the library's write history, over the raw loop: the part
 *   that is the service storing and returning that header;
 * - coalescedPerSec / coalescedRatio: 1 process, batches of 64 concurrent updates;
 * - contendedPerSec / contendedRatio: 8 writers over 4 processes using the library with its defaults
 *   (the writers of one process coalesce; the processes take turns, src/optimistic/turns.ts);
 *   requestsPerUpdate: HTTP requests per successful contended update; fairnessIndex, minShareOfFair
 *   and the latency percentiles: how evenly the writers were served. The same for 64 writers over
 *   8 processes (`...64`). Beside it the same race
 *   without write-skipping (contendedNoSkip*) and with the raw naive loop (rawContended*).
 *
 * Each figure is the median over `--rounds`. Requests are counted in code with SDK retries off (see
 * ../workers/optimistic-writer.ts). A contended race lasts `--seconds`: the updates completed within
 * it are counted, so that no writer's last backoff stretches the measurement.
 */
import { randomUUID } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ContainerClient } from "@azure/storage-blob";
import { numberFlag, numberListFlag, UsageError } from "../../internal/args.js";
import { importSdk } from "../../internal/sdk.js";
import { blobJsonCell, optimisticUpdate } from "azure-storage-concurrency/optimistic";
import { SDK_SINGLE_ATTEMPT } from "azure-storage-concurrency/retry";
import { OPTIMISTIC_LOG_KEY } from "azure-storage-concurrency/optimistic";
import { median, round, type BenchScenario } from "../harness.js";
import { withRoundTrip } from "../round-trip.js";
import { growthOf, jainIndex, minShareOfFair, percentile } from "../stats.js";
import { spawnBenchWorker } from "../workers.js";
import { BACKOFFS, type InterleavedReport, type WorkerConfig, type WorkerReport } from "./optimistic-protocol.js";
const COALESCED_BATCH = 64;

interface Context {
  readonly connectionString: string;
  readonly container: ContainerClient;
  /** Progress: a line when a race is over. */
  readonly log: (message: string) => void;
  /** The scenario's time limit. */
  readonly abortSignal: AbortSignal;
}

/** A race, in a few words, for the progress lines. */
function describeRace({ mode, processes, writers, skipReadAfterOwnWrite }: RaceOptions): string {
  if (mode === "interleaved") return "single writers, interleaved";
  if (mode === "coalesced") return `coalesced batches of ${writers}`;
  const who = `${processes * writers} writers in ${processes} processes`;
  return mode === "raw"
    ? `raw SDK loop, ${who}`
    : `library${skipReadAfterOwnWrite ? "" : " without write-skipping"}, ${who}`;
}

interface Run {
  readonly perSec: number;
  /** Per-update latency (call to success) of the updates counted, and its tail. */
  readonly p50LatencyMs: number;
  readonly p99LatencyMs: number;
  readonly maxLatencyMs: number;
  /** Jain's fairness index over the writers' successes, and the smallest writer's share of the fair share. */
  readonly fairnessIndex: number;
  readonly minShareOfFair: number;
  /** The length of the write history stored with the last version (library ways), in bytes. */
  readonly historyHeaderBytes: number;
  readonly requestsPerUpdate: number;
  readonly conflicts: number;
  /** The most rounds one update needed, and the share of updates that needed more than 10. */
  readonly maxAttempts: number;
  readonly overTenAttemptsShare: number;
  readonly interleaved?: InterleavedReport | undefined;
}

interface RaceOptions {
  readonly backoff?: string | undefined;
  readonly durationInMs?: number | undefined;
  readonly processes: number;
  readonly mode: WorkerConfig["mode"];
  readonly writers: number;
  readonly updatesPerWriter: number;
  readonly skipReadAfterOwnWrite: boolean;
}

const NO_FIGURES = {
  perSec: 0,
  requestsPerUpdate: 0,
  conflicts: 0,
  maxAttempts: 0,
  overTenAttemptsShare: 0,
  p50LatencyMs: 0,
  p99LatencyMs: 0,
  maxLatencyMs: 0,
  fairnessIndex: 0,
  minShareOfFair: 0,
  historyHeaderBytes: 0,
};

/** Runs workers on one fresh counter; the time is from "go" to the last worker done. */
async function race({ connectionString, container, log, abortSignal }: Context, options: RaceOptions): Promise<Run> {
  const name = `counter-${randomUUID()}.json`;
  // Created through the library, as a shared counter usually is: its history names this process.
  if (options.mode !== "interleaved")
    await optimisticUpdate(blobJsonCell<number>(container.getBlockBlobClient(name)), () => 0);
  const goFile = join(tmpdir(), `asc-bench-go-${randomUUID()}`);
  const config: WorkerConfig = { container: container.containerName, blob: name, goFile, ...options };
  const workers = Array.from({ length: options.processes }, () =>
    spawnBenchWorker("optimistic-writer", [JSON.stringify(config)], connectionString),
  );
  // Past the scenario's time limit, the workers are stopped (waiting for them then fails).
  const stop = () => void Promise.all(workers.map((w) => w.kill()));
  abortSignal.addEventListener("abort", stop, { once: true });
  try {
    abortSignal.throwIfAborted();
    await Promise.all(workers.map((w) => w.waitFor((m: { ready?: boolean }) => m?.ready === true, 300_000)));
    const go = Date.now();
    writeFileSync(goFile, "go");
    const reports = await Promise.all(
      workers.map((w) =>
        w.waitFor<WorkerReport>((m) => typeof m === "object" && m !== null && "finishedAt" in m, 300_000),
      ),
    );
    const seconds = (Math.max(...reports.map((r) => r.finishedAt)) - go) / 1000;
    log(`${describeRace(options)}: ${seconds.toFixed(1)} s measured, after the workers warmed up`);
    const sum = (key: "successes" | "requests" | "conflicts" | "successesInWindow" | "overTenAttempts" | "cancelled") =>
      reports.reduce((total, r) => total + r[key], 0);
    const final =
      options.mode === "interleaved"
        ? 0
        : Number((await container.getBlockBlobClient(name).downloadToBuffer()).toString("utf8"));
    // An update cancelled after the race may or may not have landed; none may be lost or doubled.
    if (options.mode !== "interleaved" && (final < sum("successes") || final > sum("successes") + sum("cancelled")))
      throw new Error(
        `${options.mode}: the counter holds ${final} for ${sum("successes")} successes and ${sum("cancelled")} cancelled updates`,
      );
    if (options.mode === "interleaved") return { ...NO_FIGURES, interleaved: reports[0]!.interleaved };
    const latencies = reports.flatMap((r) => r.latenciesMs ?? []);
    const shares = reports.flatMap((r) => r.writerSuccesses ?? []);
    const history = (await container.getBlockBlobClient(name).getProperties()).metadata?.[OPTIMISTIC_LOG_KEY];
    const perSec =
      options.durationInMs === undefined
        ? sum("successes") / seconds
        : sum("successesInWindow") / (options.durationInMs / 1000);
    return {
      perSec,
      requestsPerUpdate: sum("requests") / sum("successes"),
      conflicts: sum("conflicts"),
      maxAttempts: Math.max(...reports.map((r) => r.maxAttempts)),
      overTenAttemptsShare: sum("overTenAttempts") / sum("successes"),
      p50LatencyMs: percentile(latencies, 50),
      p99LatencyMs: percentile(latencies, 99),
      maxLatencyMs: Math.max(...latencies),
      fairnessIndex: jainIndex(shares),
      minShareOfFair: minShareOfFair(shares),
      historyHeaderBytes: history?.length ?? 0,
    };
  } finally {
    abortSignal.removeEventListener("abort", stop);
    await Promise.all(workers.map((w) => w.kill()));
    rmSync(goFile, { force: true });
  }
}

/** The Azure-like pass at 8 writers over 4 processes (issue 27): the least served writer's share and p99 over p50, or null when not run. */
function azureLikeAtEight(
  points: readonly { writers: number; p50LatencyMs: number; p99LatencyMs: number; minShareOfFair: number }[] | null,
) {
  const eight = points?.find((p) => p.writers === 8);
  return {
    azureLikeMinShareOfFair8: eight ? eight.minShareOfFair : null,
    azureLikeP99ToP50_8: eight && eight.p50LatencyMs > 0 ? round(eight.p99LatencyMs / eight.p50LatencyMs, 2) : null,
  };
}

export const optimisticScenario: BenchScenario<typeof import("@azure/storage-blob")> = {
  name: "optimistic",
  description:
    "optimistic updates of one blob: raw SDK loop vs the library, serial, contended (4 processes), coalesced",
  flags: {
    "--rounds <n>": "rounds; each figure is the median over them (default 3)",
    "--updates <n>": "single-writer updates per way and round (default 200)",
    "--seconds <n>": "length of each contended race (default 3)",
    "--scale-writers <list>": "writer counts of the scale curve (default 1,2,4,8,16,32,64; up to 8 processes)",
    "--scale-seconds <n>": "length of each race of the scale curve (default 1.5)",
    "--round-trip-ms <n>":
      "on Azurite, the scale curve again through a proxy adding this round trip, ± 30% jitter (default 10; 0: not run)",
    "--backoff <name>": `another backoff than the library's default on the contended races: ${Object.keys(BACKOFFS).join(", ")}`,
  },
  services: ["blob"],
  timeLimitInSec: 900,
  loadSdks: () => importSdk(() => import("@azure/storage-blob"), "@azure/storage-blob"),
  async run({ connectionString, embedded, args, log, abortSignal }, { BlobServiceClient }) {
    const rounds = numberFlag(args, "rounds", 3, 1);
    const updates = numberFlag(args, "updates", 200, 10);
    const contendedSeconds = numberFlag(args, "seconds", 3, 0.5);
    const scaleWriters = numberListFlag(args, "scale-writers", [1, 2, 4, 8, 16, 32, 64]).map(Math.floor);
    const scaleSeconds = numberFlag(args, "scale-seconds", 1.5, 0.2);
    const roundTripMs = numberFlag(args, "round-trip-ms", 10, 0);
    const backoff = typeof args["backoff"] === "string" ? args["backoff"] : undefined;
    if (backoff !== undefined && !(backoff in BACKOFFS))
      throw new UsageError(`--backoff must be one of ${Object.keys(BACKOFFS).join(", ")}`);
    const blobs = BlobServiceClient.fromConnectionString(connectionString, {
      retryOptions: SDK_SINGLE_ATTEMPT.storage,
    });
    const container = blobs.getContainerClient(`bench-optimistic-${Date.now()}`);
    await container.create();

    const one = { processes: 1, writers: 1, updatesPerWriter: updates };
    const eight = { processes: 4, writers: 2, updatesPerWriter: 0, durationInMs: contendedSeconds * 1000, backoff };
    const sixtyFour = { ...eight, processes: 8, writers: 8 };
    try {
      const rows: Record<string, number>[] = [];
      for (let r = 0; r < rounds; r++) {
        const context: Context = {
          connectionString,
          container,
          abortSignal,
          log: (m) => log(`round ${r + 1}/${rounds}: ${m}`),
        };
        const before = (await race(context, { ...one, mode: "interleaved", skipReadAfterOwnWrite: false }))
          .interleaved!;
        const coalesced = await race(context, {
          processes: 1,
          mode: "coalesced",
          writers: COALESCED_BATCH,
          updatesPerWriter: Math.max(2, Math.round(updates / 20)),
          skipReadAfterOwnWrite: true,
        });
        const contended = await race(context, { ...eight, mode: "library", skipReadAfterOwnWrite: true });
        const contendedNoSkip = await race(context, { ...eight, mode: "library", skipReadAfterOwnWrite: false });
        const rawContended = await race(context, { ...eight, mode: "raw", skipReadAfterOwnWrite: false });
        const contended64 = await race(context, { ...sixtyFour, mode: "library", skipReadAfterOwnWrite: true });
        const after = (await race(context, { ...one, mode: "interleaved", skipReadAfterOwnWrite: false })).interleaved!;
        // The baseline of this round: the raw serial writer, measured just before and just after.
        const both = (f: (x: InterleavedReport) => number) => (f(before) + f(after)) / 2;
        const serialPerSec = both((x) => updates / x.raw.seconds);
        const row = {
          serialPerSec,
          singleWriterPerSec: both((x) => updates / x.librarySkippingReads.seconds),
          singleWriterRatio: both((x) => x.raw.seconds / x.librarySkippingReads.seconds),
          singleWriterRequestsPerUpdate: both((x) => x.librarySkippingReads.requestsPerUpdate),
          overheadRatio: both((x) => x.library.medianMs / x.raw.medianMs),
          historyHeaderOnlyRatio: both((x) => x.rawWithHistoryHeader.medianMs / x.raw.medianMs),
          overheadRequestsRatio: both((x) => x.library.requestsPerUpdate / x.raw.requestsPerUpdate),
          coalescedPerSec: coalesced.perSec,
          coalescedRatio: coalesced.perSec / serialPerSec,
          contendedPerSec: contended.perSec,
          contendedRatio: contended.perSec / serialPerSec,
          requestsPerUpdate: contended.requestsPerUpdate,
          contendedMaxAttempts: contended.maxAttempts,
          contendedOverTenAttemptsShare: contended.overTenAttemptsShare,
          fairnessIndex: contended.fairnessIndex,
          minShareOfFair: contended.minShareOfFair,
          p50LatencyMs: contended.p50LatencyMs,
          p99LatencyMs: contended.p99LatencyMs,
          maxLatencyMs: contended.maxLatencyMs,
          p99ToP50: contended.p99LatencyMs / contended.p50LatencyMs,
          contendedNoSkipPerSec: contendedNoSkip.perSec,
          contendedNoSkipRatio: contendedNoSkip.perSec / serialPerSec,
          contendedNoSkipRequestsPerUpdate: contendedNoSkip.requestsPerUpdate,
          contendedNoSkipFairnessIndex: contendedNoSkip.fairnessIndex,
          contendedNoSkipP99ToP50: contendedNoSkip.p99LatencyMs / contendedNoSkip.p50LatencyMs,
          rawContendedPerSec: rawContended.perSec,
          rawContendedRatio: rawContended.perSec / serialPerSec,
          rawRequestsPerUpdate: rawContended.requestsPerUpdate,
          rawMaxAttempts: rawContended.maxAttempts,
          rawFairnessIndex: rawContended.fairnessIndex,
          rawP99ToP50: rawContended.p99LatencyMs / rawContended.p50LatencyMs,
          perSec64: contended64.perSec,
          ratio64: contended64.perSec / serialPerSec,
          requestsPerUpdate64: contended64.requestsPerUpdate,
          minShareOfFair64: contended64.minShareOfFair,
          fairnessIndex64: contended64.fairnessIndex,
          p50LatencyMs64: contended64.p50LatencyMs,
          p99LatencyMs64: contended64.p99LatencyMs,
          maxLatencyMs64: contended64.maxLatencyMs,
        };
        rows.push(row);
        log(
          `round ${r + 1}: ${Object.entries(row)
            .map(([k, v]) => `${k} ${round(v, 3)}`)
            .join(", ")}`,
        );
      }
      const sweep = async (label: string, through: string) => {
        const points = [];
        for (const writers of scaleWriters) {
          const processes = Math.min(8, Math.max(1, Math.floor(writers / 2)));
          const context: Context = {
            connectionString: through,
            container,
            abortSignal,
            log: (m) => log(`${label}: ${m}`),
          };
          const run = await race(context, {
            processes,
            writers: Math.ceil(writers / processes),
            updatesPerWriter: 0,
            durationInMs: scaleSeconds * 1000,
            backoff,
            mode: "library",
            skipReadAfterOwnWrite: true,
          });
          points.push({
            writers: processes * Math.ceil(writers / processes),
            processes,
            perSec: round(run.perSec, 1),
            requestsPerUpdate: round(run.requestsPerUpdate),
            p50LatencyMs: round(run.p50LatencyMs),
            p99LatencyMs: round(run.p99LatencyMs),
            fairnessIndex: round(run.fairnessIndex, 3),
            minShareOfFair: round(run.minShareOfFair, 3),
            historyHeaderBytes: run.historyHeaderBytes,
          });
        }
        return points;
      };
      const scale = await sweep("scale", connectionString);
      const azureLike =
        embedded && roundTripMs > 0
          ? await withRoundTrip(connectionString, roundTripMs, (through) => sweep("Azure-like round trip", through))
          : null;
      const figure = (name: string, digits = 2) => round(median(rows.map((row) => row[name]!)), digits);
      const result = {
        serialPerSec: figure("serialPerSec", 1),
        contendedPerSec: figure("contendedPerSec", 1),
        contendedRatio: figure("contendedRatio"),
        requestsPerUpdate: figure("requestsPerUpdate"),
        contendedMaxAttempts: Math.max(...rows.map((row) => row["contendedMaxAttempts"]!)),
        contendedOverTenAttemptsShare: figure("contendedOverTenAttemptsShare", 4),
        singleWriterPerSec: figure("singleWriterPerSec", 1),
        singleWriterRatio: figure("singleWriterRatio"),
        coalescedPerSec: figure("coalescedPerSec", 1),
        coalescedRatio: figure("coalescedRatio"),
        overheadRatio: figure("overheadRatio", 3),
        historyHeaderOnlyRatio: figure("historyHeaderOnlyRatio", 3),
        overheadRequestsRatio: figure("overheadRequestsRatio", 3),
        singleWriterRequestsPerUpdate: figure("singleWriterRequestsPerUpdate"),
        contendedNoSkipPerSec: figure("contendedNoSkipPerSec", 1),
        contendedNoSkipRatio: figure("contendedNoSkipRatio"),
        contendedNoSkipRequestsPerUpdate: figure("contendedNoSkipRequestsPerUpdate"),
        contendedNoSkipFairnessIndex: figure("contendedNoSkipFairnessIndex", 3),
        contendedNoSkipP99ToP50: figure("contendedNoSkipP99ToP50"),
        rawContendedPerSec: figure("rawContendedPerSec", 1),
        rawContendedRatio: figure("rawContendedRatio"),
        rawRequestsPerUpdate: figure("rawRequestsPerUpdate"),
        rawMaxAttempts: Math.max(...rows.map((row) => row["rawMaxAttempts"]!)),
        fairnessIndex: figure("fairnessIndex", 3),
        minShareOfFair: figure("minShareOfFair", 3),
        p50LatencyMs: figure("p50LatencyMs"),
        p99LatencyMs: figure("p99LatencyMs"),
        maxLatencyMs: figure("maxLatencyMs"),
        p99ToP50: figure("p99ToP50"),
        rawFairnessIndex: figure("rawFairnessIndex", 3),
        rawP99ToP50: figure("rawP99ToP50"),
        perSec64: figure("perSec64", 1),
        ratio64: figure("ratio64"),
        requestsPerUpdate64: figure("requestsPerUpdate64"),
        minShareOfFair64: figure("minShareOfFair64", 3),
        fairnessIndex64: figure("fairnessIndex64", 3),
        p50LatencyMs64: figure("p50LatencyMs64"),
        p99LatencyMs64: figure("p99LatencyMs64"),
        maxLatencyMs64: figure("maxLatencyMs64"),
        scale,
        scaleGrowth: {
          requestsPerUpdate: growthOf(scale.map((p) => ({ x: p.writers, y: p.requestsPerUpdate }))),
          p50LatencyMs: growthOf(scale.map((p) => ({ x: p.writers, y: p.p50LatencyMs }))),
          historyHeaderBytes: growthOf(scale.map((p) => ({ x: p.writers, y: p.historyHeaderBytes }))),
        },
        azureLike,
        azureLikeRoundTripMs: azureLike ? roundTripMs : null,
        ...azureLikeAtEight(azureLike),
        scaleSeconds,
        perRound: rows.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, round(v, 3)]))),
        contendedWriters: eight.processes * eight.writers,
        contendedProcesses: eight.processes,
        rounds,
      };
      return {
        ...result,
        goals: {
          contendedRatio: result.contendedRatio >= 1.5,
          requestsPerUpdate: result.requestsPerUpdate <= 2,
          singleWriterRatio: result.singleWriterRatio >= 1.6,
          coalescedRatio: result.coalescedRatio >= 10,
          overheadRatio: result.overheadRatio <= 1.05,
          fairnessIndex: result.fairnessIndex >= 0.95,
          p99ToP50: result.p99ToP50 <= 10,
          requestsPerUpdate64: result.requestsPerUpdate64 <= 3,
          minShareOfFair64: result.minShareOfFair64 >= 0.5,
          contendedMaxAttempts: result.contendedMaxAttempts <= 10,
          ...(result.azureLikeP99ToP50_8 === null
            ? {}
            : {
                azureLikeP99ToP50_8: result.azureLikeP99ToP50_8 <= 10,
                azureLikeMinShareOfFair8: (result.azureLikeMinShareOfFair8 ?? 0) >= 0.5,
              }),
        },
      };
    } finally {
      await container.delete();
    }
  },
};
