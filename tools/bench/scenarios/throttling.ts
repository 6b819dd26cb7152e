/**
 * `throttling`: plain exponential retries against the adaptive limiter and the retry budget, on a
 * throttling model of the service (the fault proxy's `throttling` mode in front of the embedded
 * Azurite: each partition served at a set rate, 503 ServerBusy past it, a share of the refusals
 * 500 OperationTimedOut after being applied). See `throttling-workload.ts` for the workload.
 *
 * In one run: 1, 8 and 64 writers on one hot partition (capacity C) and on 16 partitions (C/16
 * each: the same total), plain and adaptive; the same without throttling (the limiter's cost when
 * nothing is throttled); and 64 writers on one partition whose capacity drops to a quarter and
 * comes back, with a timeline of goodput, refusals and the limiter's rate.
 *
 * The top-level figures are the issue's: at 64 writers on one partition, goodput against capacity
 * and the share of requests throttled, plain and adaptive; updates that ran out of attempts; how
 * long after the capacity came back the goodput reached 90% of it; updates lost or doubled (over
 * every case).
 */
import { numberFlag, numberListFlag } from "../../internal/args.js";
import { importSdk } from "../../internal/sdk.js";
import { SDK_SINGLE_ATTEMPT } from "azure-storage-concurrency/retry";
import { createFaultProxy } from "azure-storage-concurrency/testing";
import { round, type BenchScenario } from "../harness.js";
import { runCase, type CaseResult, type CaseSpec, type Mode } from "./throttling-workload.js";

const MODES: readonly Mode[] = ["plain", "adaptive"];
/** The model's share of refusals answered 500 OperationTimedOut, after being applied. */
const TIMED_OUT_SHARE = 0.1;

/** Seconds from `fromSec` until goodput over a one-second window first reaches `share` of capacity. */
function secondsToReach(result: CaseResult, fromSec: number, share: number): number | null {
  const samples = result.timeline;
  for (let i = 0; i < samples.length; i++) {
    const s = samples[i]!;
    if (s.atSec < fromSec + 1) continue;
    const window = samples.filter((x) => x.atSec > s.atSec - 1 && x.atSec <= s.atSec);
    const goodput = window.reduce((sum, x) => sum + x.goodputPerSec, 0) / window.length;
    if (goodput >= share * s.capacityPerSec) return round(s.atSec - 1 - fromSec, 2);
  }
  return null;
}

/** Seconds from `fromSec` until the limiter's rate is within `factor` of `target` (below it when dropping). */
function limiterFollows(result: CaseResult, fromSec: number, target: number, up: boolean): number | null {
  const hit = result.timeline.find(
    (s) =>
      s.atSec >= fromSec &&
      s.limiterPerSec !== null &&
      (up ? s.limiterPerSec >= 0.9 * target : s.limiterPerSec <= 1.2 * target),
  );
  return hit ? round(hit.atSec - fromSec, 2) : null;
}

export const throttlingScenario: BenchScenario<typeof import("@azure/data-tables")> = {
  name: "throttling",
  description:
    "plain retries vs the adaptive limiter and retry budget on a throttling model: 1-64 writers, 1 and 16 partitions, a capacity drop",
  flags: {
    "--capacity <n>":
      "the modelled capacity, requests per second over all partitions (default: 60% of what the machine served unthrottled in the warm-up, at most 200)",
    "--duration <s>":
      "seconds per case (default 10); the figures are measured from 2 s in (the steady state), and over the whole case too",
    "--writers <list>": "writer counts, comma-separated (default 1,8,64)",
    "--partitions <list>": "partition counts, comma-separated (default 1,16)",
    "--phase <s>": "the drop run: seconds at full capacity, at a quarter, and back (default 6)",
  },
  services: ["table"],
  timeLimitInSec: 900,
  loadSdks: () => importSdk(() => import("@azure/data-tables"), "@azure/data-tables"),
  async run({ connectionString, embedded, args, log, abortSignal }, { TableClient }) {
    if (!embedded)
      throw new Error(
        "the throttling scenario runs on the embedded Azurite only: its throttling model stands in for the service's limits",
      );
    const capacityFlag = args["capacity"] === undefined ? undefined : numberFlag(args, "capacity", 100, 1);
    const durationInMs = numberFlag(args, "duration", 10, 2) * 1000;
    const learningInMs = Math.min(2_000, durationInMs / 4);
    const writerCounts = numberListFlag(args, "writers", [1, 8, 64]).map(Math.floor);
    const partitionCounts = numberListFlag(args, "partitions", [1, 16]).map(Math.floor);
    const phaseInMs = numberFlag(args, "phase", 6, 1) * 1000;
    const tableEndpoint = /(?:^|;)TableEndpoint=([^;]+)/.exec(connectionString)?.[1];
    if (!tableEndpoint) throw new Error("the connection string names no TableEndpoint");

    await using proxy = await createFaultProxy({
      target: tableEndpoint,
      throttling: {
        partitionRatePerSec: 1e6, // each case sets its own
        accountRatePerSec: 1e9,
        service: "table",
        operationTimedOutShare: TIMED_OUT_SHARE,
        timedOutAfterApply: true,
      },
    });
    const logCleaner = setInterval(() => proxy.clearLog(), 1_000).unref();
    const model = proxy.throttling!;
    const client = (cs: string) => (table: string) =>
      TableClient.fromConnectionString(cs, table, {
        allowInsecureConnection: true,
        retryOptions: SDK_SINGLE_ATTEMPT.tables, // retry() is the one place that retries
      });
    const clients = {
      through: client(connectionString.replace(tableEndpoint, proxy.endpoint)),
      direct: client(connectionString),
      model,
    };
    const runId = Date.now().toString(36);
    let n = 0;
    const run = async (spec: CaseSpec) => {
      const result = await runCase(spec, `throttle${runId}n${n++}`, clients, abortSignal);
      log(
        `${spec.mode.padEnd(8)} ${String(spec.writers).padStart(2)} writers, ${String(spec.partitions).padStart(2)} partition(s): ` +
          `goodput ${result.goodputPerSec}/s (${Math.round(result.goodputToCapacity * 100)}% of ${spec.capacityPerSec}), ` +
          `throttled ${(result.throttledShare * 100).toFixed(1)}%, gave up ${result.gaveUp}, lost ${result.lost}, doubled ${result.doubled}`,
      );
      return result;
    };

    try {
      // Warm-up (not measured): the JIT, the connections, Azurite's tables; and what this machine
      // serves unthrottled, so that the model, not a loaded machine, is the bottleneck.
      const most = Math.max(...writerCounts);
      await run({ mode: "plain", writers: most, partitions: 1, capacityPerSec: 1e6, durationInMs: 2_000 });
      const warm = await run({ mode: "plain", writers: most, partitions: 1, capacityPerSec: 1e6, durationInMs: 3_000 });
      const capacity = capacityFlag ?? Math.max(10, Math.min(200, Math.round((warm.goodputPerSec * 0.6) / 10) * 10));
      log(
        `modelled capacity: ${capacity} requests per second${capacityFlag === undefined ? ` (60% of the ${warm.goodputPerSec}/s served unthrottled in the warm-up)` : ""}`,
      );
      const cases: CaseResult[] = [];
      for (const partitions of partitionCounts)
        for (const writers of writerCounts)
          for (const mode of MODES)
            cases.push(await run({ mode, writers, partitions, capacityPerSec: capacity, durationInMs, learningInMs }));

      // The limiter's cost when nothing is throttled: 64 writers, a capacity nobody reaches.
      const free = [];
      for (const mode of MODES)
        free.push(
          await run({ mode, writers: most, partitions: 1, capacityPerSec: 1e6, durationInMs: durationInMs / 2 }),
        );

      // The capacity drops to a quarter and comes back.
      const drops = [];
      for (const mode of MODES) {
        drops.push(
          await run({
            mode,
            writers: most,
            partitions: 1,
            capacityPerSec: capacity,
            durationInMs: phaseInMs * 3 + 2_000,
            changes: [
              { atMs: phaseInMs, capacityPerSec: capacity / 4 },
              { atMs: phaseInMs * 2, capacityPerSec: capacity },
            ],
            sampleEveryInMs: 250,
          }),
        );
      }
      const [plainDrop, adaptiveDrop] = drops as [CaseResult, CaseResult];
      const at = (mode: Mode) => cases.find((c) => c.mode === mode && c.writers === most && c.partitions === 1);
      const plain = at("plain");
      const adaptive = at("adaptive");
      const everything = [...cases, ...free, ...drops];
      return {
        capacityPerSec: capacity,
        warmUpGoodputPerSec: warm.goodputPerSec,
        writers: most,
        adaptiveGoodputToCapacity: adaptive?.goodputToCapacity ?? null,
        adaptiveThrottledShare: adaptive?.throttledShare ?? null,
        plainGoodputToCapacity: plain?.goodputToCapacity ?? null,
        plainThrottledShare: plain?.throttledShare ?? null,
        adaptiveWholeCase: adaptive?.wholeCase ?? null,
        plainWholeCase: plain?.wholeCase ?? null,
        learningSec: learningInMs / 1000,
        plainGaveUp: plain?.gaveUp ?? null,
        adaptiveGaveUp: adaptive?.gaveUp ?? null,
        recoverySeconds: secondsToReach(adaptiveDrop, (phaseInMs * 2) / 1000, 0.9),
        plainRecoverySeconds: secondsToReach(plainDrop, (phaseInMs * 2) / 1000, 0.9),
        limiterDropSeconds: limiterFollows(adaptiveDrop, phaseInMs / 1000, capacity / 4, false),
        limiterRecoverySeconds: limiterFollows(adaptiveDrop, (phaseInMs * 2) / 1000, capacity, true),
        unthrottledGoodputRatio: round(free[1]!.goodputPerSec / Math.max(1, free[0]!.goodputPerSec), 3),
        lost: everything.reduce((sum, c) => sum + c.lost, 0),
        doubled: everything.reduce((sum, c) => sum + c.doubled, 0),
        unknown: everything.reduce((sum, c) => sum + c.unknown, 0),
        durationSecPerCase: durationInMs / 1000,
        phaseSec: phaseInMs / 1000,
        operationTimedOutShare: TIMED_OUT_SHARE,
        cases: cases.map(({ timeline: _, ...c }) => c),
        unthrottled: free.map(({ timeline: _, ...c }) => c),
        drop: drops.map(({ timeline, ...c }) => ({ ...c, timeline })),
      };
    } finally {
      clearInterval(logCleaner);
    }
  },
};
