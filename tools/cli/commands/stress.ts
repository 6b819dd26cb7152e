/**
 * `azure-storage-concurrency stress`: the partition stress test of the partitioning guide, from the
 * command line. Creates a test table per key design, loads it, drives a peak load at it from
 * several workers with live progress on stderr, prints a summary (or the JSON with --json), writes
 * the JSON result and an SVG chart when asked, and deletes the tables unless --keep. A load test:
 * it runs on an embedded Azurite unless an account is named on the command line (../target.ts).
 */
import { readFile, writeFile } from "node:fs/promises";
import { numberFlag, shownArgument, stringFlag, UsageError, type FlagSpec, didYouMean } from "../../internal/args.js";
import { importSdk } from "../../internal/sdk.js";
import { SDK_SINGLE_ATTEMPT } from "azure-storage-concurrency/retry";
import { stressDesigns, type BuiltInStressDesign } from "../../stress/designs.js";
import { AdaptiveRateLimiter } from "azure-storage-concurrency/throttling";
import {
  PARTITION_TARGET_ENTITIES_PER_SEC,
  HOT_PARTITION_SHARE,
  runPartitionStressTest,
  type PartitionStressResult,
} from "../../stress/engine.js";
import type { Command } from "../command.js";
import { renderStressChart } from "../stress-chart.js";
import {
  accountConnection,
  checkReachable,
  chooseLoadTarget,
  LOAD_TARGET_FLAGS,
  openEmbeddedAzurite,
} from "../target.js";

const help = `Usage: azure-storage-concurrency stress [options]
       azure-storage-concurrency stress --from <result.json> --svg <chart.svg>

The partition stress test of "Designing a Scalable Partitioning Strategy for Azure Table Storage":
for each key design, create a test table, load it, drive a peak load of point reads, inserts and
updates at it from several workers, and report GET and PUT throughput per second and the busiest
partition's rate. A design is judged by its busiest partition's share of the load (a hot partition
at ${HOT_PARTITION_SHARE * 100}% or more), and what it sustains in all before that partition reaches the
${PARTITION_TARGET_ENTITIES_PER_SEC} entities/s target of one partition: the keys decide it, not the speed of the target.

Options:
  --designs <list>        key designs to compare, comma-separated (default: single,append,bucketed)
                          ${Object.values(stressDesigns)
                            .map((d) => `${d.name}: ${d.description}`)
                            .join("\n                          ")}
  --duration <seconds>    load per design (default: 5)
  --workers <n>           concurrent workers (default: 4)
  --preload <n>           entities loaded before the load (default: 200)
  --mix <r,i,u>           shares of reads, inserts, updates (default: 50,25,25)
  --rate <ops/s>          cap on operations per second over all workers (default: no cap)
  --entity-bytes <n>      payload size of each entity (default: 256)
  --out <file>            write the JSON result there
  --svg <file>            write an SVG chart there: operations per second, and the busiest
                          partition against the target
  --from <file>           with --svg: draw the chart of a saved --out result, running nothing
  --json                  print the JSON result on stdout instead of the summary
  --keep                  keep the test tables (default: delete them)
  --model <per-sec>       put the throttling model in front of the embedded Azurite: each partition
                          serves this many requests per second and answers 503 ServerBusy past it,
                          as Azure does (Azurite never throttles)
  --limiter               send the load through an adaptive rate limiter per partition
                          (docs/throttling.md); compare runs with and without it

Target (the first line on stderr says which):
  (default)               an embedded Azurite started for this run (the azurite package must be
                          installed); AZURE_STORAGE_CONNECTION_STRING alone never sends a load
                          test to an account
  --use-env               the account in AZURE_STORAGE_CONNECTION_STRING
  --connection-string <cs>  that account (visible in the process list: prefer --use-env)
  --azurite               the embedded Azurite, said explicitly
Azurite has no partition servers: its figures show the load a design puts on its busiest
partition, not what Azure would sustain.

Example:
  azure-storage-concurrency stress --duration 20 --workers 4 --designs append,bucketed --out result.json --svg chart.svg`;

const flags: FlagSpec = {
  ...LOAD_TARGET_FLAGS,
  designs: { type: "string" },
  duration: { type: "string" },
  workers: { type: "string" },
  preload: { type: "string" },
  mix: { type: "string" },
  rate: { type: "string" },
  "entity-bytes": { type: "string" },
  out: { type: "string" },
  svg: { type: "string" },
  from: { type: "string" },
  json: { type: "boolean" },
  keep: { type: "boolean" },
  model: { type: "string" },
  limiter: { type: "boolean" },
};

/** The throttling model (the fault proxy's throttling mode) in front of the table endpoint of `connectionString`. */
async function throttlingModel(connectionString: string, partitionRatePerSec: number) {
  const endpoint = /(?:^|;)TableEndpoint=([^;]+)/.exec(connectionString)?.[1];
  if (endpoint === undefined) throw new UsageError("--model needs a table endpoint in the connection string");
  const { createFaultProxy } = await import("azure-storage-concurrency/testing");
  const proxy = await createFaultProxy({ target: endpoint, throttling: { partitionRatePerSec, service: "table" } });
  setInterval(() => proxy.clearLog(), 1_000).unref(); // its figures are in its model's stats
  return { proxy, connectionString: connectionString.replace(endpoint, proxy.endpoint) };
}

function parseMix(text: string | undefined): { read: number; insert: number; update: number } | undefined {
  if (text === undefined) return undefined;
  const parts = text.split(",").map(Number);
  if (parts.length !== 3 || parts.some((n) => !Number.isFinite(n) || n < 0) || parts.every((n) => n === 0)) {
    throw new UsageError(
      `--mix takes three shares (reads, inserts, updates), e.g. 50,25,25; got ${shownArgument(text)}`,
    );
  }
  return { read: parts[0]!, insert: parts[1]!, update: parts[2]! };
}

function summary(result: PartitionStressResult): string {
  const lines = [
    `Partition stress test against ${result.emulator ? "an emulator" : result.endpoint}; target of one partition: ${result.targetEntitiesPerSecPerPartition} entities/s.`,
    "",
    `${"design".padEnd(10)} ${"GET/s".padStart(8)} ${"PUT/s".padStart(8)} ${"busiest partition/s".padStart(20)} ${"share".padStart(6)} ${"errors".padStart(7)}  verdict`,
  ];
  for (const d of result.designs) {
    lines.push(
      `${d.design.padEnd(10)} ${String(d.getPerSec).padStart(8)} ${String(d.putPerSec).padStart(8)} ${String(d.busiestPartition.entitiesPerSec).padStart(20)} ${`${Math.round(d.busiestPartition.share * 100)}%`.padStart(6)} ${String(d.operations.errors).padStart(7)}  ${d.hotPartition ? `HOT PARTITION (at most ${d.sustainableEntitiesPerSec} entities/s in all)` : d.sustainableEntitiesPerSec === null ? "nothing succeeded" : `spreads (about ${d.sustainableEntitiesPerSec} entities/s in all)`}`,
    );
  }
  lines.push("");
  for (const d of result.designs) lines.push(`${d.design}: ${d.verdict}`);
  lines.push("", result.note);
  return lines.join("\n");
}

export const stressCommand: Command = {
  name: "stress",
  summary: "partition stress test: peak load on one partition per key design, GET/PUT per second vs 500/s",
  help,
  flags,
  async run({ positional, flags, out, progress }) {
    if (positional.length > 0) throw new UsageError(`unexpected argument ${shownArgument(positional[0]!)}`);
    const from = stringFlag(flags, "from");
    const svgFile = stringFlag(flags, "svg");
    if (from !== undefined) {
      if (svgFile === undefined) throw new UsageError("--from needs --svg <file>");
      const saved = JSON.parse(await readFile(from, "utf8")) as PartitionStressResult;
      if (saved?.tool !== "partition-stress-test")
        throw new UsageError(`${shownArgument(from)} is not a result of the stress test (written by stress --out)`);
      await writeFile(svgFile, renderStressChart(saved));
      progress(`chart written to ${svgFile}`);
      return 0;
    }
    const designs = (stringFlag(flags, "designs", "single,append,bucketed") ?? "").split(",").filter(Boolean);
    for (const design of designs) {
      if (!(design in stressDesigns))
        throw new UsageError(
          `unknown design ${shownArgument(design)}${didYouMean(design, Object.keys(stressDesigns))}; choose from ${Object.keys(stressDesigns).join(", ")}`,
        );
    }
    if (designs.length === 0) throw new UsageError("--designs needs at least one design");
    const durationInSeconds = numberFlag(flags, "duration", 5, 0.5);
    const workers = numberFlag(flags, "workers", 4, 1);
    const preloadEntities = numberFlag(flags, "preload", 200, 1);
    const rate = flags["rate"] === undefined ? undefined : numberFlag(flags, "rate", 0, 1);
    const entityBytes = numberFlag(flags, "entity-bytes", 256, 0);
    const mix = parseMix(stringFlag(flags, "mix"));
    const outFile = stringFlag(flags, "out");
    if (!Number.isInteger(workers) || !Number.isInteger(preloadEntities))
      throw new UsageError("--workers and --preload take whole numbers");
    const target = chooseLoadTarget(flags);
    const modelRate = flags["model"] === undefined ? undefined : numberFlag(flags, "model", 0, 0.01);
    if (modelRate !== undefined && target.kind === "account")
      throw new UsageError("--model stands in front of the embedded Azurite only: an account throttles for real");
    const rateLimiter = flags["limiter"] === true ? new AdaptiveRateLimiter({ name: "stress" }) : undefined;

    progress(target.describe("table"));
    const { TableClient } = await importSdk(() => import("@azure/data-tables"), "@azure/data-tables");
    if (target.kind === "account") await checkReachable(target.account, ["table"]);
    const connection = target.kind === "account" ? accountConnection(target.account) : await openEmbeddedAzurite();
    const model = modelRate === undefined ? undefined : await throttlingModel(connection.connectionString, modelRate);
    const connectionString = model?.connectionString ?? connection.connectionString;
    const abort = new AbortController();
    const onSignal = () => {
      progress("stopping: finishing the measurements and deleting the test tables (Ctrl-C again to quit at once)");
      abort.abort(new Error("interrupted"));
      process.off("SIGINT", onSignal);
    };
    process.on("SIGINT", onSignal);
    try {
      progress(`stress test: designs ${designs.join(", ")}, ${durationInSeconds} s each, ${workers} workers`);
      const result = await runPartitionStressTest({
        createTableClient: (tableName) =>
          TableClient.fromConnectionString(connectionString, tableName, {
            allowInsecureConnection: connectionString.includes("http://"),
            retryOptions: SDK_SINGLE_ATTEMPT.tables, // every ServerBusy is seen and counted
          }),
        designs: designs as BuiltInStressDesign[],
        durationInSeconds,
        workers,
        preloadEntities,
        entityBytes,
        keepTables: flags["keep"] === true,
        ...(rate === undefined ? {} : { targetOpsPerSec: rate }),
        ...(mix ? { mix } : {}),
        abortSignal: abort.signal,
        ...(rateLimiter ? { rateLimiter } : {}),
        // The model throttles the load only: a preload it throttled would leave the partition
        // paying off 200 entities' worth of tokens when the load starts (4 s at 50 a second).
        ...(model
          ? {
              onPhase: (phase: "preload" | "load") =>
                model.proxy.throttling!.setRates({ partitionRatePerSec: phase === "load" ? modelRate! : 1e9 }),
            }
          : {}),
        onProgress: (p) =>
          progress(
            `[${p.design}] ${p.atSec.toFixed(1).padStart(5)}s / ${p.durationInSeconds}s  GET ${p.getPerSec.toFixed(0).padStart(6)}/s  PUT ${p.putPerSec.toFixed(0).padStart(6)}/s  busiest partition ${p.busiestPartitionPerSec.toFixed(0).padStart(6)}/s (target ${PARTITION_TARGET_ENTITIES_PER_SEC})  errors ${p.errorsPerSec.toFixed(0)}/s`,
          ),
      });
      const stats = model?.proxy.throttling!.stats();
      const withModel = stats
        ? {
            ...result,
            throttlingModel: { partitionRatePerSec: modelRate, admitted: stats.admitted, serverBusy: stats.serverBusy },
            rateLimiter: rateLimiter !== undefined,
          }
        : result;
      const json = JSON.stringify(withModel, null, 2);
      if (outFile) {
        await writeFile(outFile, `${json}\n`);
        progress(`result written to ${outFile}`);
      }
      if (svgFile) {
        await writeFile(svgFile, renderStressChart(result));
        progress(`chart written to ${svgFile}`);
      }
      if (result.tablesKept) progress(`tables kept: ${result.designs.map((d) => d.table).join(", ")}`);
      const modelLine = stats
        ? `\nThrottling model: ${modelRate} requests/s per partition; ${stats.serverBusy} of ${stats.admitted + stats.serverBusy} requests answered 503 ServerBusy (${((100 * stats.serverBusy) / Math.max(1, stats.admitted + stats.serverBusy)).toFixed(1)}%); adaptive limiter ${rateLimiter ? "on" : "off"}.`
        : "";
      out(flags["json"] ? JSON.stringify(withModel) : summary(result) + modelLine);
      return 0;
    } finally {
      process.off("SIGINT", onSignal);
      await model?.proxy.close();
      await connection.close();
    }
  },
};
