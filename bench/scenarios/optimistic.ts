/**
 * `optimistic`: the optimistic-update loop against raw SDK calls, on one JSON counter blob.
 *
 * Every throughput figure comes from worker processes started the same way (warmed up, then
 * released together), so that the ratios compare like with like:
 * - serialPerSec: 1 process, 1 writer, raw SDK read + If-Match write: the baseline of every ratio;
 * - contendedPerSec / contendedRatio: 8 writers over 4 processes using the library, coalescing off;
 *   requestsPerUpdate: HTTP requests per successful contended update. The same race without
 *   write-skipping (contendedNoSkip*) and with the raw naive loop (rawContended*) is run beside it;
 * - singleWriterPerSec / singleWriterRatio: 1 process, 1 writer using the library, which skips the
 *   read when it wrote last;
 * - coalescedPerSec / coalescedRatio: 1 process, batches of 64 concurrent updates;
 * - overheadRatio: library time / raw time for the same requests (one writer, write-skipping off),
 *   measured in this process with the two interleaved update by update, as the ratio of their
 *   median times, so that machine noise hits both alike. historyHeaderOnlyRatio: the raw loop also
 *   sending a metadata header the size of the library's write history, the same way: the part of
 *   the overhead that is the service storing and returning that header.
 *
 * Each figure is the median over `--rounds`; each ratio is the median of the per-round ratios (the
 * baseline measured in the same round). Requests are counted in code with SDK retries off (see
 * optimistic-worker.ts). Flags: --rounds 3, --updates 150 (serial and single-writer updates),
 * --contended 25 (updates per contended writer), --pairs 300 (overhead rotations).
 */
import { randomUUID } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BlobServiceClient, type ContainerClient } from "@azure/storage-blob";
import { numberFlag } from "../../src/cli/args.js";
import { SDK_SINGLE_ATTEMPT } from "../../src/index.js";
import { spawnWorker } from "../../tests/support/processes.js";
import { median, round, type BenchScenario } from "../harness.js";
import { countingBlob, libraryIncrement, newTally, rawIncrement, type WorkerConfig, type WorkerReport } from "./optimistic-worker.js";

const WORKER = "bench/scenarios/optimistic-worker.ts";
const COALESCED_BATCH = 64;

interface Context {
  readonly connectionString: string;
  readonly container: ContainerClient;
}

interface Run {
  readonly perSec: number;
  readonly requestsPerUpdate: number;
  readonly conflicts: number;
}

interface RaceOptions {
  readonly processes: number;
  readonly mode: WorkerConfig["mode"];
  readonly writers: number;
  readonly updatesPerWriter: number;
  readonly skipReadAfterOwnWrite: boolean;
}

/** Runs workers on one fresh counter; the time is from "go" to the last worker done. */
async function race({ connectionString, container }: Context, options: RaceOptions): Promise<Run> {
  const name = `counter-${randomUUID()}.json`;
  await container.getBlockBlobClient(name).upload("0", 1);
  const goFile = join(tmpdir(), `asc-bench-go-${randomUUID()}`);
  const config: WorkerConfig = { connectionString, container: container.containerName, blob: name, goFile, ...options };
  const workers = Array.from({ length: options.processes }, () => spawnWorker(WORKER, [JSON.stringify(config)]));
  try {
    await Promise.all(workers.map((w) => w.waitFor((m: { ready?: boolean }) => m?.ready === true, 120_000)));
    const go = Date.now();
    writeFileSync(goFile, "go");
    const reports = await Promise.all(
      workers.map((w) => w.waitFor<WorkerReport>((m) => typeof m === "object" && m !== null && "finishedAt" in m, 300_000)),
    );
    const seconds = (Math.max(...reports.map((r) => r.finishedAt)) - go) / 1000;
    const sum = (key: "successes" | "requests" | "conflicts") => reports.reduce((total, r) => total + r[key], 0);
    const final = Number((await container.getBlockBlobClient(name).downloadToBuffer()).toString("utf8"));
    if (final !== sum("successes")) throw new Error(`${options.mode}: the counter holds ${final} for ${sum("successes")} successes`);
    return { perSec: sum("successes") / seconds, requestsPerUpdate: sum("requests") / sum("successes"), conflicts: sum("conflicts") };
  } finally {
    await Promise.all(workers.map((w) => w.kill()));
    rmSync(goFile, { force: true });
  }
}

/** A write history of the size the library stores for a cell with one writer. */
const HISTORY_LIKE = { asc_optimistic: "1;Kx9_aB3c;57;r;0;AbCdEf0.Gh1jKl2m.57" };

/**
 * One writer each, interleaved update by update in rotating order: the raw SDK loop, the raw loop
 * also sending a write-history-sized metadata header, and the library with write-skipping off (the
 * same two calls per update). Ratios of the median times to the raw loop's.
 */
async function overheadRatios({ connectionString, container }: Context, rounds: number) {
  const tallies = [newTally(), newTally(), newTally()] as const;
  const blobs = tallies.map((tally) => countingBlob(connectionString, container.containerName, `overhead-${randomUUID()}.json`, tally));
  for (const blob of blobs) await blob.upload("0", 1);
  const times: [number[], number[], number[]] = [[], [], []];
  const run = [
    () => rawIncrement(blobs[0]!, tallies[0]),
    () => rawIncrement(blobs[1]!, tallies[1], undefined, HISTORY_LIKE),
    () => libraryIncrement(blobs[2]!, tallies[2], { skipReadAfterOwnWrite: false }),
  ];
  for (let i = 0; i < rounds; i++) {
    for (let k = 0; k < 3; k++) {
      const which = (i + k) % 3;
      const started = performance.now();
      await run[which]!();
      times[which]!.push(performance.now() - started);
    }
  }
  return {
    library: median(times[2]) / median(times[0]),
    historyHeaderOnly: median(times[1]) / median(times[0]),
    requests: tallies.map((t) => (t.requests - 1) / rounds),
  };
}

export const optimisticScenario: BenchScenario = {
  name: "optimistic",
  description: "optimistic updates of one blob: raw SDK loop vs the library, serial, contended (4 processes), coalesced",
  async run({ connectionString, args, log }) {
    const rounds = numberFlag(args, "rounds", 3, 1);
    const updates = numberFlag(args, "updates", 150, 10);
    const contendedUpdates = numberFlag(args, "contended", 25, 1);
    const pairs = numberFlag(args, "pairs", 300, 10);
    const blobs = BlobServiceClient.fromConnectionString(connectionString, { retryOptions: SDK_SINGLE_ATTEMPT.storage });
    const container = blobs.getContainerClient(`bench-optimistic-${Date.now()}`);
    await container.create();
    const context: Context = { connectionString, container };
    const one = { processes: 1, writers: 1, updatesPerWriter: updates };
    const eight = { processes: 4, writers: 2, updatesPerWriter: contendedUpdates };
    try {
      await overheadRatios(context, 30); // warm up this process
      const rows: Record<string, Run>[] = [];
      const overheads: number[] = [];
      const headerOnly: number[] = [];
      let requests: number[] = [];
      for (let r = 0; r < rounds; r++) {
        const measured = await overheadRatios(context, pairs);
        overheads.push(measured.library);
        headerOnly.push(measured.historyHeaderOnly);
        requests = measured.requests;
        const row = {
          serial: await race(context, { ...one, mode: "raw", skipReadAfterOwnWrite: false }),
          singleWriter: await race(context, { ...one, mode: "library", skipReadAfterOwnWrite: true }),
          coalesced: await race(context, {
            processes: 1,
            mode: "coalesced",
            writers: COALESCED_BATCH,
            updatesPerWriter: Math.max(2, Math.round(updates / 20)),
            skipReadAfterOwnWrite: true,
          }),
          contended: await race(context, { ...eight, mode: "library", skipReadAfterOwnWrite: true }),
          contendedNoSkip: await race(context, { ...eight, mode: "library", skipReadAfterOwnWrite: false }),
          rawContended: await race(context, { ...eight, mode: "raw", skipReadAfterOwnWrite: false }),
        };
        rows.push(row);
        log(
          `round ${r + 1}: ${Object.entries(row)
            .map(([name, run]) => `${name} ${round(run.perSec, 1)}/s (${round(run.requestsPerUpdate, 2)} req/update)`)
            .join(", ")}; overhead ${round(measured.library, 3)} (raw loop with the history header: ${round(measured.historyHeaderOnly, 3)})`,
        );
      }
      const perSec = (name: string) => median(rows.map((row) => row[name]!.perSec));
      const ratio = (name: string) => median(rows.map((row) => row[name]!.perSec / row["serial"]!.perSec));
      const perUpdate = (name: string) => median(rows.map((row) => row[name]!.requestsPerUpdate));
      const result = {
        serialPerSec: round(perSec("serial"), 1),
        contendedPerSec: round(perSec("contended"), 1),
        contendedRatio: round(ratio("contended"), 2),
        requestsPerUpdate: round(perUpdate("contended"), 2),
        singleWriterPerSec: round(perSec("singleWriter"), 1),
        singleWriterRatio: round(ratio("singleWriter"), 2),
        coalescedPerSec: round(perSec("coalesced"), 1),
        coalescedRatio: round(ratio("coalesced"), 2),
        overheadRatio: round(median(overheads), 3),
        historyHeaderOnlyRatio: round(median(headerOnly), 3),
        contendedNoSkipPerSec: round(perSec("contendedNoSkip"), 1),
        contendedNoSkipRatio: round(ratio("contendedNoSkip"), 2),
        contendedNoSkipRequestsPerUpdate: round(perUpdate("contendedNoSkip"), 2),
        rawContendedPerSec: round(perSec("rawContended"), 1),
        rawContendedRatio: round(ratio("rawContended"), 2),
        rawRequestsPerUpdate: round(perUpdate("rawContended"), 2),
        singleWriterRequestsPerUpdate: round(perUpdate("singleWriter"), 2),
        overheadRequestsPerUpdate: { raw: round(requests[0]!, 2), library: round(requests[2]!, 2) },
        contendedWriters: eight.processes * eight.writers,
        contendedProcesses: eight.processes,
        rounds,
      };
      return {
        ...result,
        goals: {
          contendedRatio: result.contendedRatio >= 0.7,
          requestsPerUpdate: result.requestsPerUpdate <= 3,
          singleWriterRatio: result.singleWriterRatio >= 1.6,
          coalescedRatio: result.coalescedRatio >= 10,
          overheadRatio: result.overheadRatio <= 1.05,
        },
      };
    } finally {
      await container.delete();
    }
  },
};
