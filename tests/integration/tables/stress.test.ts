/**
 * The partition stress test on short runs against a real Azurite: as a function (sane figures,
 * tables cleaned up or kept) and as the command line tool a user runs (progress on stderr, JSON on
 * stdout, the JSON file and a well-formed SVG chart).
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TableServiceClient } from "@azure/data-tables";
import { XMLValidator } from "fast-xml-parser";
import { AdaptiveRateLimiter } from "../../../src/throttling/index.js";
import {
  runPartitionStressTest,
  type PartitionStressResult,
  type StressKeyDesign,
  type StressProgress,
} from "../../../tools/index.js";
import { SDK_SINGLE_ATTEMPT } from "../../../src/retry/index.js";
import { spawnWorker } from "../../support/processes.js";
import { connectionString, faultProxyFor, tableClient } from "../../support/storage.js";

async function tableNames(): Promise<string[]> {
  const service = TableServiceClient.fromConnectionString(connectionString(), { allowInsecureConnection: true });
  const names: string[] = [];
  for await (const table of service.listTables()) names.push(table.name!);
  return names;
}

/** Equal within 2% (figures are rounded, durations to 10 ms). */
function near(actual: number, expected: number): void {
  expect(Math.abs(actual - expected)).toBeLessThanOrEqual(0.02 * expected + 0.2);
}

function checkSane(result: PartitionStressResult): void {
  expect(result.tool).toBe("partition-stress-test");
  expect(result.emulator).toBe(true);
  expect(result.note).toMatch(/emulator/i);
  expect(result.targetEntitiesPerSecPerPartition).toBe(500);
  for (const design of result.designs) {
    const { reads, inserts, updates, errors } = design.operations;
    expect(errors).toBe(0);
    expect(reads).toBeGreaterThan(0);
    expect(inserts + updates).toBeGreaterThan(0);
    expect(design.durationSec).toBeGreaterThan(0);
    near(design.getPerSec, reads / design.durationSec);
    near(design.putPerSec, (inserts + updates) / design.durationSec);
    near(design.entitiesPerSec, design.getPerSec + design.putPerSec);
    expect(design.busiestPartition.entitiesPerSec).toBeLessThanOrEqual(design.entitiesPerSec + 0.1);
    expect(design.overTarget).toBe(design.busiestPartition.entitiesPerSec > 500);
    // Judged by the busiest partition's share of the load, not by the emulator's speed.
    expect(design.busiestPartition.share).toBeGreaterThan(0);
    expect(design.busiestPartition.share).toBeLessThanOrEqual(1);
    expect(design.hotPartition).toBe(design.busiestPartition.share >= 0.5);
    expect(design.sustainableEntitiesPerSec).toBe(Math.round(500 / design.busiestPartition.share));
    expect(design.verdict).toContain(`${Math.round(design.busiestPartition.share * 1000) / 10}% of the load`);
    expect(design.samples.length).toBeGreaterThan(0);
    const times = design.samples.map((s) => s.atSec);
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect(design.latencyMs.get.p50).toBeGreaterThan(0);
    expect(design.latencyMs.get.p99).toBeGreaterThanOrEqual(design.latencyMs.get.p50);
  }
}

describe("partition stress test", () => {
  it("measures each key design and counts the busiest partition as the design guide models it", async () => {
    const progress: StressProgress[] = [];
    const everyOther: StressKeyDesign = {
      name: "two-partitions",
      description: "alternates between two partitions",
      keyOf: (n) => ({ partitionKey: `half-${n % 2}`, rowKey: String(n).padStart(8, "0") }),
    };
    const result = await runPartitionStressTest({
      createTableClient: (name) => tableClient(name, connectionString(), { retryOptions: SDK_SINGLE_ATTEMPT.tables }),
      designs: ["single", "append", "bucketed", everyOther],
      durationInSeconds: 1,
      sampleIntervalInMs: 250,
      workers: 3,
      preloadEntities: 40,
      keepTables: true,
      tablePrefix: "stresskept",
      onProgress: (p) => progress.push(p),
    });
    try {
      checkSane(result);
      const [single, append, bucketed, two] = result.designs;
      expect(single).toMatchObject({
        design: "single",
        partitionKeysTouched: 1,
        partitionsTouched: 1,
        busiestPartition: { partition: "target" },
      });
      near(single!.busiestPartition.entitiesPerSec, single!.entitiesPerSec);
      expect(single).toMatchObject({
        hotPartition: true,
        sustainableEntitiesPerSec: 500,
        busiestPartition: { share: 1 },
      });
      expect(single!.verdict).toMatch(/a hot partition.*at most 500 entities\/s in all/);
      // Append-only keys are all different, but the last range partition serves them all.
      expect(append!.partitionKeysTouched).toBeGreaterThan(10);
      expect(append).toMatchObject({
        partitionsTouched: 1,
        hotPartition: true,
        busiestPartition: { partition: "last range partition", share: 1 },
      });
      // 16 buckets; a one-second run on a busy machine may write too few entities to reach every one.
      expect(bucketed!.partitionsTouched).toBeGreaterThan(8);
      expect(bucketed!.partitionsTouched).toBeLessThanOrEqual(16);
      expect(bucketed!.busiestPartition.entitiesPerSec).toBeLessThan(bucketed!.entitiesPerSec / 3);
      expect(bucketed!.hotPartition).toBe(false);
      expect(bucketed!.verdict).toMatch(/the load spreads/);
      expect(two!.partitionsTouched).toBe(2);
      expect(progress.some((p) => p.design === "bucketed")).toBe(true);
      expect(result.tablesKept).toBe(true);

      // The kept table holds what was loaded and inserted.
      const table = tableClient(single!.table);
      let count = 0;
      for await (const _ of table.listEntities({ queryOptions: { filter: "PartitionKey eq 'target'" } })) count += 1;
      expect(count).toBe(single!.preloaded + single!.operations.inserts);
    } finally {
      await Promise.all(result.designs.map((d) => tableClient(d.table).deleteTable()));
    }
  }, 60_000);

  it("holds a rate cap, stops when cancelled, and deletes its tables", async () => {
    const capped = await runPartitionStressTest({
      createTableClient: (name) => tableClient(name),
      durationInSeconds: 1,
      workers: 2,
      preloadEntities: 10,
      targetOpsPerSec: 40,
      tablePrefix: "stresscap",
    });
    const { reads, inserts, updates } = capped.designs[0]!.operations;
    expect(reads + inserts + updates).toBeLessThanOrEqual(40 * capped.designs[0]!.durationSec + 2);
    expect(capped.settings.targetOpsPerSec).toBe(40);

    const controller = new AbortController();
    const aborted = await runPartitionStressTest({
      createTableClient: (name) => tableClient(name),
      designs: ["single", "bucketed"],
      durationInSeconds: 30,
      sampleIntervalInMs: 100,
      preloadEntities: 10,
      tablePrefix: "stressabort",
      onProgress: () => controller.abort(),
      abortSignal: controller.signal,
    });
    expect(aborted.aborted).toBe(true);
    expect(aborted.designs).toHaveLength(1);
    expect(aborted.designs[0]!.durationSec).toBeLessThan(30);
    const left = await tableNames();
    expect(left.filter((name) => name.startsWith("stresscap") || name.startsWith("stressabort"))).toEqual([]);
  }, 60_000);

  it("runs behind the throttling model with an adaptive limiter: the limiter learns the hot partition's 503s", async () => {
    // A partition that serves one request and then refuses everything but one request every 100 s.
    const { proxy, connectionString: throttled } = await faultProxyFor("table", {
      throttling: { partitionRatePerSec: 0.01, burstInMs: 1 },
    });
    await using _ = proxy;
    const rateLimiter = new AdaptiveRateLimiter({ name: "stress", minRatePerSec: 50 });
    const result = await runPartitionStressTest({
      // Everything goes through the model: the preload's one entity takes the partition's one token.
      createTableClient: (name) => tableClient(name, throttled, { retryOptions: SDK_SINGLE_ATTEMPT.tables }),
      designs: ["single"],
      durationInSeconds: 0.5,
      workers: 2,
      preloadEntities: 1,
      tablePrefix: "stressmodel",
      rateLimiter,
    });
    const stats = proxy.throttling!.stats();
    expect(stats.serverBusy).toBeGreaterThan(0);
    expect(result.designs[0]!.operations.errors).toBeGreaterThan(0); // the model's 503s, counted as errors
    const key = Object.keys(stats.partitions).find((k) => k.endsWith("/target"))!;
    expect(rateLimiter.stateOf(key)).toMatchObject({ limited: true });
  }, 60_000);

  it("calls onPhase before each design's preload and load, so a throttling model can serve the preload unthrottled", async () => {
    // A partition that refuses all but one request every 100 s, except while onPhase lifts it.
    const { proxy, connectionString: throttled } = await faultProxyFor("table", {
      throttling: { partitionRatePerSec: 0.01, burstInMs: 1 },
    });
    await using _ = proxy;
    const phases: string[] = [];
    const result = await runPartitionStressTest({
      createTableClient: (name) => tableClient(name, throttled, { retryOptions: SDK_SINGLE_ATTEMPT.tables }),
      designs: ["single", "bucketed"],
      durationInSeconds: 0.5,
      workers: 2,
      preloadEntities: 120, // two transactions of a single partition: refused had the model been on
      tablePrefix: "stressphase",
      onPhase: async (phase, design) => {
        phases.push(`${phase}:${design}`);
        proxy.throttling!.setRates({ partitionRatePerSec: phase === "preload" ? 1e9 : 0.01 });
      },
    });
    expect(phases).toEqual(["preload:single", "load:single", "preload:bucketed", "load:bucketed"]);
    expect(result.designs.map((d) => d.preloaded)).toEqual([120, 120]);
    expect(proxy.throttling!.stats().serverBusy).toBeGreaterThan(0); // the load met the model
    expect(result.designs[0]!.operations.errors).toBeGreaterThan(0);
    await expect(
      runPartitionStressTest({ createTableClient: (name) => tableClient(name), onPhase: "x" as never }),
    ).rejects.toThrow(/onPhase/);
  }, 60_000);

  it("runs as a command line tool: progress on stderr, JSON on stdout, a JSON file and an SVG chart", async () => {
    const dir = await mkdtemp(join(tmpdir(), "stress-"));
    try {
      const out = join(dir, "result.json");
      const svg = join(dir, "chart.svg");
      const run = spawnWorker("tools/cli/main.ts", [
        "stress",
        "--connection-string",
        connectionString(),
        "--designs",
        "single,bucketed",
        "--duration",
        "1.5",
        "--workers",
        "2",
        "--preload",
        "30",
        "--out",
        out,
        "--svg",
        svg,
        "--json",
      ]);
      const { code } = await run.exited;
      if (code !== 0) throw new Error(`stress exited with ${code}:\n${run.stderr()}`);
      expect(run.stderr()).toMatch(
        /\[single\] +\d+\.\ds \/ 1\.5s +GET +\d+\/s +PUT +\d+\/s +busiest partition +\d+\/s \(target 500\)/,
      );
      expect(run.stderr()).toMatch(/\[bucketed\]/);
      expect(run.messages).toHaveLength(1);
      const printed = run.messages[0] as PartitionStressResult;
      const written = JSON.parse(await readFile(out, "utf8")) as PartitionStressResult;
      expect(written).toEqual(printed);
      checkSane(written);
      expect(written.designs.map((d) => d.design)).toEqual(["single", "bucketed"]);
      const chart = await readFile(svg, "utf8");
      expect(XMLValidator.validate(chart)).toBe(true);
      expect(chart.match(/<polyline/g)).toHaveLength(6);
      const left = await tableNames();
      expect(written.designs.filter((d) => left.includes(d.table))).toEqual([]); // cleaned up
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("refuses bad options before creating anything", async () => {
    const run = spawnWorker("tools/cli/main.ts", [
      "stress",
      "--connection-string",
      connectionString(),
      "--designs",
      "single,zigzag",
    ]);
    expect((await run.exited).code).toBe(2);
    expect(run.stderr()).toMatch(/unknown design "zigzag"/);
    let clients = 0;
    const createTableClient = (name: string) => (clients++, tableClient(name));
    await expect(runPartitionStressTest({ createTableClient, workers: 0 })).rejects.toThrow(/`workers`/);
    await expect(runPartitionStressTest({ createTableClient, mix: { read: 0, insert: 0, update: 0 } })).rejects.toThrow(
      /`mix`/,
    );
    await expect(runPartitionStressTest({ createTableClient, designs: ["zigzag" as "single"] })).rejects.toThrow(
      /unknown key design/,
    );
    expect(clients).toBe(0);
  }, 30_000);
});
