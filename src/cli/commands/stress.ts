/**
 * `azure-storage-concurrency stress`: the partition stress test of the partitioning guide, from the
 * command line. Creates a test table per key design, loads it, drives a peak load at it from
 * several workers with live progress on stderr, prints a summary (or the JSON with --json), writes
 * the JSON result and an SVG chart when asked, and deletes the tables unless --keep.
 */
import { writeFile } from "node:fs/promises";
import { SDK_SINGLE_ATTEMPT } from "../../retry/retry.js";
import { renderStressChart } from "../../tables/stress/chart.js";
import { stressDesigns, type BuiltInStressDesign } from "../../tables/stress/designs.js";
import {
  PARTITION_TARGET_ENTITIES_PER_SEC,
  runPartitionStressTest,
  type PartitionStressResult,
} from "../../tables/stress/engine.js";
import { numberFlag, stringFlag, UsageError } from "../args.js";
import type { Command } from "../command.js";
import { openConnection, openEmbeddedAzurite } from "../connection.js";
import { importSdk } from "../sdk.js";

const help = `Usage: azure-storage-concurrency stress [options]

The partition stress test of "Designing a Scalable Partitioning Strategy for Azure Table Storage":
for each key design, create a test table, load it, drive a peak load of point reads, inserts and
updates at it from several workers, and report GET and PUT throughput per second, and the busiest
partition's rate against the ${PARTITION_TARGET_ENTITIES_PER_SEC} entities/s target of one partition.

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
  --svg <file>            write an SVG chart of throughput over time there
  --json                  print the JSON result on stdout instead of the summary
  --keep                  keep the test tables (default: delete them)

Connection: an embedded Azurite by default (and always with --azurite); a real account with
--connection-string <cs>, or AZURE_STORAGE_CONNECTION_STRING when --azurite is not given. Azurite
has no partition servers: its figures show the load a design puts on its busiest partition, not
what Azure would sustain.

Example:
  azure-storage-concurrency stress --azurite --duration 20 --workers 4 --designs append,bucketed --out result.json --svg chart.svg`;

function parseMix(text: string | undefined): { read: number; insert: number; update: number } | undefined {
  if (text === undefined) return undefined;
  const parts = text.split(",").map(Number);
  if (parts.length !== 3 || parts.some((n) => !Number.isFinite(n) || n < 0) || parts.every((n) => n === 0)) {
    throw new UsageError(`--mix takes three shares (reads, inserts, updates), e.g. 50,25,25; got ${text}`);
  }
  return { read: parts[0]!, insert: parts[1]!, update: parts[2]! };
}

function summary(result: PartitionStressResult): string {
  const lines = [
    `Partition stress test against ${result.emulator ? "an emulator" : result.endpoint}; target of one partition: ${result.targetEntitiesPerSecPerPartition} entities/s.`,
    "",
    `${"design".padEnd(10)} ${"GET/s".padStart(8)} ${"PUT/s".padStart(8)} ${"busiest partition/s".padStart(20)} ${"errors".padStart(7)}  verdict`,
  ];
  for (const d of result.designs) {
    lines.push(
      `${d.design.padEnd(10)} ${String(d.getPerSec).padStart(8)} ${String(d.putPerSec).padStart(8)} ${String(d.busiestPartition.entitiesPerSec).padStart(20)} ${String(d.operations.errors).padStart(7)}  ${d.overTarget ? "OVER TARGET" : "within target"}`,
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
  async run({ flags, out, progress }) {
    const designs = (stringFlag(flags, "designs", "single,append,bucketed") ?? "").split(",").filter(Boolean);
    for (const design of designs) {
      if (!(design in stressDesigns))
        throw new UsageError(`unknown design "${design}"; choose from ${Object.keys(stressDesigns).join(", ")}`);
    }
    if (designs.length === 0) throw new UsageError("--designs needs at least one design");
    const durationInSeconds = numberFlag(flags, "duration", 5, 0.5);
    const workers = numberFlag(flags, "workers", 4, 1);
    const preloadEntities = numberFlag(flags, "preload", 200, 1);
    const rate = flags["rate"] === undefined ? undefined : numberFlag(flags, "rate", 0, 1);
    const entityBytes = numberFlag(flags, "entity-bytes", 256, 0);
    const mix = parseMix(stringFlag(flags, "mix"));
    const outFile = stringFlag(flags, "out");
    const svgFile = stringFlag(flags, "svg");
    if (!Number.isInteger(workers) || !Number.isInteger(preloadEntities))
      throw new UsageError("--workers and --preload take whole numbers");

    // Azurite unless an account is given; an explicit --azurite wins over the environment, so that a
    // stress test never lands on a real account by accident.
    const { TableClient } = await importSdk(() => import("@azure/data-tables"), "@azure/data-tables");
    const connection =
      flags["azurite"] && flags["connection-string"] === undefined
        ? await openEmbeddedAzurite()
        : await openConnection({ ...flags, azurite: true });
    const abort = new AbortController();
    const onSignal = () => {
      progress("stopping: finishing the measurements and deleting the test tables (Ctrl-C again to quit at once)");
      abort.abort(new Error("interrupted"));
      process.off("SIGINT", onSignal);
    };
    process.on("SIGINT", onSignal);
    try {
      const account =
        /AccountName=([^;]+)/i.exec(connection.connectionString)?.[1] ??
        /https?:\/\/([^/;]+)/.exec(connection.connectionString)?.[1] ??
        "the given account";
      progress(
        `stress test on ${connection.embedded ? "an embedded Azurite" : `account ${account}`}: designs ${designs.join(", ")}, ${durationInSeconds} s each, ${workers} workers`,
      );
      const result = await runPartitionStressTest({
        createTableClient: (tableName) =>
          TableClient.fromConnectionString(connection.connectionString, tableName, {
            allowInsecureConnection: connection.connectionString.includes("http://"),
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
        onProgress: (p) =>
          progress(
            `[${p.design}] ${p.atSec.toFixed(1).padStart(5)}s / ${p.durationInSeconds}s  GET ${p.getPerSec.toFixed(0).padStart(6)}/s  PUT ${p.putPerSec.toFixed(0).padStart(6)}/s  busiest partition ${p.busiestPartitionPerSec.toFixed(0).padStart(6)}/s (target ${PARTITION_TARGET_ENTITIES_PER_SEC})  errors ${p.errorsPerSec.toFixed(0)}/s`,
          ),
      });
      const json = JSON.stringify(result, null, 2);
      if (outFile) {
        await writeFile(outFile, `${json}\n`);
        progress(`result written to ${outFile}`);
      }
      if (svgFile) {
        await writeFile(svgFile, renderStressChart(result));
        progress(`chart written to ${svgFile}`);
      }
      if (result.tablesKept) progress(`tables kept: ${result.designs.map((d) => d.table).join(", ")}`);
      out(flags["json"] ? JSON.stringify(result) : summary(result));
      return 0;
    } finally {
      process.off("SIGINT", onSignal);
      await connection.close();
    }
  },
};
