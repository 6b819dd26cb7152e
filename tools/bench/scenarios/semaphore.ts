/**
 * `semaphore`: the blob-lease semaphore's cost, waiting and fairness, against raw SDK calls and the
 * lease lock in the same run.
 *
 * - Uncontended: acquire + release cycles per second of a raw lease (2 requests: the anchor), of a
 *   permit (`blobSemaphore`, 3 once warm: the slot's acquire, its record write on the ETag this
 *   object wrote last, the release) and of the lock (`blobLock`, the same 3), in alternating slices
 *   so that a busy moment of the machine hits all alike: `uncontendedRatio` = permit / raw,
 *   `permitToLockRatio` = permit / lock (cycles per second: 1 is as fast), each the median of the
 *   eight slices' pairs, with its spread (`…Spread`).
 * - Contention (./semaphore-contention.ts): `--contenders` (8) in `--processes` (4) take one of
 *   `--permits` (2) in a loop, with the library and with the raw SDK loop one writes without it (try
 *   each slot, then sleep 250-1000 ms). The library's figures are at the top level
 *   (`overlapsAboveMax`, `requestsPerWaiterPerSec`, `longestWaitToMeanWait`, …), the raw loop's in
 *   `anchor`, with the ones to compare repeated flat (`anchorRequestsPerWaiterPerSec`, …).
 * - Matrix: the library at 8 and 32 contenders for 2 and 4 permits (`matrix`, an array; the main
 *   round is its 8 x 2 point): the waiting cost and fairness as contenders and permits grow.
 *
 * Holding 50 ms and resting 50 ms (the defaults), each contender wants a permit half of the time:
 * 8 contenders want 4 permits' worth of 2, so there is always someone waiting.
 */
import { randomUUID } from "node:crypto";
import { blobLock } from "azure-storage-concurrency/lease";
import { blobSemaphore } from "azure-storage-concurrency/semaphore";
import { numberFlag, stringFlag, UsageError } from "../../internal/args.js";
import { importSdk } from "../../internal/sdk.js";
import { median, round, type BenchScenario } from "../harness.js";
import { pairRatios, ratioSpread } from "../stats.js";
import { contendForPermits, type PermitRoundSettings } from "./semaphore-contention.js";

/** Cycles per second of `cycle`, run back to back for `seconds`. */
async function cyclesPerSec(seconds: number, cycle: () => Promise<void>): Promise<number> {
  const end = performance.now() + seconds * 1000;
  const started = performance.now();
  let cycles = 0;
  while (performance.now() < end) {
    await cycle();
    cycles += 1;
  }
  return cycles / ((performance.now() - started) / 1000);
}

/** `contenders x permits` pairs, from `8x2,32x4`. */
function parseMatrix(text: string): { contenders: number; permits: number }[] {
  if (text === "0") return [];
  return text.split(",").map((pair) => {
    const match = /^(\d+)x(\d+)$/.exec(pair.trim());
    if (!match || Number(match[1]) < 1 || Number(match[2]) < 1)
      throw new UsageError(
        `--matrix lists <contenders>x<permits> pairs, such as 8x2,32x4; got ${JSON.stringify(pair)}`,
      );
    return { contenders: Number(match[1]), permits: Number(match[2]) };
  });
}

/** The figures of a round that the matrix keeps. */
function matrixPoint(r: Awaited<ReturnType<typeof contendForPermits>>) {
  return {
    contenders: r.contenders,
    permits: r.permits,
    processes: r.processes,
    requestsPerWaiterPerSec: r.requestsPerWaiterPerSec,
    longestWaitToMeanWait: r.longestWaitToMeanWait,
    waitMedianMs: r.waitMedianMs,
    handoffMedianMs: r.handoffMedianMs,
    acquisitionsPerSec: r.acquisitionsPerSec,
    permitUtilisation: r.permitUtilisation,
    overlapsAboveMax: r.overlapsAboveMax,
    slotOverlaps: r.slotOverlaps,
  };
}

export const semaphoreScenario: BenchScenario<typeof import("@azure/storage-blob")> = {
  name: "semaphore",
  description: "blob-lease semaphore: permit cycle against raw leases and the lock, waiting cost and fairness",
  flags: {
    "--processes <n>": "contender processes (default 4; fewer for fewer contenders)",
    "--contenders <n>": "contenders in all in the main round, a multiple of --processes (default 8)",
    "--permits <n>": "the semaphore's maxCount in the main round (default 2)",
    "--seconds <n>": "length of the main contention rounds, library and raw loop (default 10)",
    "--hold <ms>": "how long a contender holds its permit (default 50)",
    "--rest <ms>": "how long it rests before wanting one again (default 50)",
    "--poll <ms>": "the semaphore's poll interval while waiting (default: the library's)",
    "--matrix <list>": "contenders x permits of the matrix rounds (default 8x2,8x4,32x2,32x4; 0 to skip)",
    "--matrix-seconds <n>": "length of each matrix round (default 5)",
    "--cycle-seconds <n>": "length of each uncontended measure, in eight slices (default 3)",
  },
  services: ["blob"],
  loadSdks: () => importSdk(() => import("@azure/storage-blob"), "@azure/storage-blob"),
  async run({ connectionString, args, log }, { BlobServiceClient }) {
    const processes = numberFlag(args, "processes", 4, 1);
    const contenders = numberFlag(args, "contenders", 8, 1);
    const permits = numberFlag(args, "permits", 2, 1);
    const seconds = numberFlag(args, "seconds", 10, 1);
    const holdMs = numberFlag(args, "hold", 50, 0);
    const restMs = numberFlag(args, "rest", 50, 0);
    const pollIntervalInMs = args["poll"] === undefined ? undefined : numberFlag(args, "poll", 0, 10);
    const matrix = parseMatrix(stringFlag(args, "matrix") ?? "8x2,8x4,32x2,32x4");
    const matrixSeconds = numberFlag(args, "matrix-seconds", 5, 1);
    const cycleSeconds = numberFlag(args, "cycle-seconds", 3, 0.4);
    if (contenders % processes !== 0) throw new UsageError("--contenders must be a multiple of --processes");

    const client = BlobServiceClient.fromConnectionString(connectionString);
    const container = client.getContainerClient(`bench-semaphore-${Date.now()}`);
    await container.create();
    try {
      // Uncontended cycles: raw SDK lease, permit, lock, in alternating slices.
      const raw = container.getBlockBlobClient("raw");
      await raw.upload("", 0);
      const semaphore = blobSemaphore(container, "uncontended", { maxCount: 2, durationInSeconds: 15 });
      const lock = blobLock(container, "uncontended-lock", { durationInSeconds: 15 });
      // Eight slices, the three ways in a rotating order in each: the ratios are medians of the
      // slices' pairs, reported with their spread (issue 27).
      const rates = { raw: [] as number[], permit: [] as number[], lock: [] as number[] };
      const cycles = {
        raw: async () => {
          const lease = raw.getBlobLeaseClient(randomUUID());
          await lease.acquireLease(15);
          await lease.releaseLease();
        },
        permit: async () => (await semaphore.acquire()).release(),
        lock: async () => (await lock.acquire()).release(),
      };
      const ways = ["raw", "permit", "lock"] as const;
      const slice = cycleSeconds / 8;
      for (let i = 0; i < 8; i++) {
        for (let k = 0; k < ways.length; k++) {
          const way = ways[(i + k) % ways.length]!;
          rates[way].push(await cyclesPerSec(slice, cycles[way]));
        }
      }
      const rawCyclePerSec = round(median(rates.raw), 1);
      const permitCyclePerSec = round(median(rates.permit), 1);
      const lockCyclePerSec = round(median(rates.lock), 1);
      const uncontendedRatioSpread = ratioSpread(pairRatios(rates.permit, rates.raw));
      const permitToLockRatioSpread = ratioSpread(pairRatios(rates.permit, rates.lock));
      const uncontendedRatio = round(uncontendedRatioSpread.median, 2);
      const permitToLockRatio = round(permitToLockRatioSpread.median, 2);
      log(
        `uncontended: raw lease ${rawCyclePerSec} cycles/s, permit ${permitCyclePerSec}/s (${uncontendedRatio}x raw), ` +
          `lock ${lockCyclePerSec}/s (permit ${permitToLockRatio}x lock)`,
      );

      let rounds = 0;
      const contention = async (mode: "library" | "anchor", n: number, k: number, secs: number) => {
        const settings: PermitRoundSettings = {
          processes: n % processes === 0 ? processes : Math.min(n, 2),
          contenders: n,
          permits: k,
          seconds: secs,
          holdMs,
          restMs,
          pollIntervalInMs,
        };
        const name = `contended-${(rounds += 1)}`;
        // The raw loop leases slot blobs that must exist; the library creates its own on first use.
        if (mode === "anchor") {
          for (let slot = 0; slot < k; slot++) await container.getBlockBlobClient(`${name}/slot-${slot}`).upload("", 0);
        }
        const result = await contendForPermits(mode, connectionString, container.containerName, name, settings);
        log(
          `${mode === "library" ? "library" : "raw SDK loop (try every slot, then sleep 250-1000 ms)"}: ` +
            `${n} contenders in ${settings.processes} processes for ${k} permits, ${secs} s: ` +
            `${result.requestsPerWaiterPerSec ?? "n/a"} req/waiter/s, longest/mean wait ${result.longestWaitToMeanWait ?? "n/a"}, ` +
            `median wait ${result.waitMedianMs ?? "n/a"} ms, ${result.acquisitionsPerSec} acquisitions/s, ` +
            `${result.overlapsAboveMax} overlaps above ${k}, ${result.slotOverlaps} slot overlaps`,
        );
        return result;
      };

      log(
        `${contenders} contenders in ${processes} processes for ${permits} permits (hold ${holdMs} ms, rest ${restMs} ms)`,
      );
      const library = await contention("library", contenders, permits, seconds);
      const anchor = await contention("anchor", contenders, permits, seconds);
      const points = [];
      for (const point of matrix) {
        const same = point.contenders === contenders && point.permits === permits;
        points.push(
          matrixPoint(same ? library : await contention("library", point.contenders, point.permits, matrixSeconds)),
        );
      }
      const { requestKinds: _, ...figures } = library;
      return {
        ...figures,
        uncontendedRatio,
        uncontendedRatioSpread,
        rawCyclePerSec,
        permitCyclePerSec,
        lockCyclePerSec,
        permitToLockRatio,
        permitToLockRatioSpread,
        anchorRequestsPerWaiterPerSec: anchor.requestsPerWaiterPerSec,
        anchorLongestWaitToMeanWait: anchor.longestWaitToMeanWait,
        anchorWaitMedianMs: anchor.waitMedianMs,
        requestsToAnchor:
          library.requestsPerWaiterPerSec !== null && anchor.requestsPerWaiterPerSec
            ? round(library.requestsPerWaiterPerSec / anchor.requestsPerWaiterPerSec, 2)
            : null,
        holdMs,
        restMs,
        pollIntervalInMs: pollIntervalInMs ?? "default",
        goals: {
          overlapsAboveMax: library.overlapsAboveMax === 0 && library.slotOverlaps === 0,
          longestWaitToMeanWait: library.longestWaitToMeanWait !== null && library.longestWaitToMeanWait <= 4,
          tokensIncreasePerSlot: library.tokensIncreasePerSlot !== false,
          requestsVsAnchor:
            library.requestsPerWaiterPerSec !== null &&
            anchor.requestsPerWaiterPerSec !== null &&
            library.requestsPerWaiterPerSec <= anchor.requestsPerWaiterPerSec,
        },
        requestKinds: library.requestKinds,
        anchor,
        matrix: points,
      };
    } finally {
      await container.delete().catch(() => undefined);
    }
  },
};
