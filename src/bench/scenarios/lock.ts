/**
 * `lock`: lease lock contention. P processes run C contenders each (8 in all by default) taking one
 * blob lock in a loop: wait, hold, release, rest. Reported:
 *
 * - `overlaps`: critical sections (acquire resolved .. release called) that overlap: must be 0;
 * - `handoffMedianMs`: for each release while another contender was waiting, from the release call
 *   to the next holder's acquire() resolving (fencing token written); goal <= 100;
 * - `waitMedianMs`: how long acquire() took;
 * - `requestsPerWaiterPerSec`: the cost of waiting: every request made inside `acquire()` except
 *   the two that take the lock once it is free (the granted acquire and the record write): HEAD
 *   polls, acquires answered 409, the release of an unused lease id. Per second spent waiting;
 *   goal <= 20;
 * - `requestsPerAcquisition`: those two (more when the record write has to fall back), per acquisition;
 * - `allRequestsPerWaiterPerSec`: both together, per second spent in `acquire()`;
 * - `anchor`: the same measures for the anchor's loop on raw SDK calls (DistributedLock: try to
 *   acquire, on 409 sleep 250-1000 ms), in the same run;
 * - `acquisitionsPerSec` under contention, and uncontended cycles (acquire + release) per second:
 *   `rawCyclePerSec` on raw SDK calls (2 requests) and `libraryCyclePerSec` (4: a HEAD that reads
 *   the lease state and the lock record, acquire, record write, release), in the same run.
 *
 * Holding 50 ms and resting 50 ms (the defaults), 8 contenders want the lock about four times as much
 * as it can give: there is always someone waiting, which is what handoffs measure.
 */
import { randomUUID } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { blobLock } from "../../index.js";
import { numberFlag, UsageError } from "../../internal/args.js";
import { importSdk } from "../../internal/sdk.js";
import { median, round, type BenchScenario } from "../harness.js";
import { spawnBenchWorker } from "../workers.js";

interface Acquisition {
  id: string;
  waitStart: number;
  acquiredAt: number;
  releaseStart: number;
  releasedAt: number;
  token: number | undefined;
  waitKinds: Record<string, number>;
}
interface UnfinishedWait {
  id: string;
  waitStart: number;
  waitEnd: number;
  waitKinds: Record<string, number>;
}

/** The requests that take a lock once it is free: the granted acquire and the lock record's write. */
const ACQUISITION_KINDS = /^(acquire-201|metadata-\d+)$/;

async function cyclesPerSec(seconds: number, cycle: () => Promise<void>): Promise<number> {
  const end = performance.now() + seconds * 1000;
  const started = performance.now();
  let cycles = 0;
  while (performance.now() < end) {
    await cycle();
    cycles += 1;
  }
  return round(cycles / ((performance.now() - started) / 1000), 1);
}

/**
 * Counts overlapping critical sections and measures handoffs: for each release while another
 * contender was already waiting, the time from the release call to the next acquisition by anyone
 * else (the lock's idle gap while there was demand for it).
 */
function analyse(acquisitions: readonly Acquisition[], unfinished: readonly UnfinishedWait[] = []) {
  const sorted = [...acquisitions].sort((a, b) => a.acquiredAt - b.acquiredAt);
  const waits = [
    ...acquisitions.map((a) => ({ id: a.id, from: a.waitStart, to: a.acquiredAt })),
    ...unfinished.map((w) => ({ id: w.id, from: w.waitStart, to: w.waitEnd })),
  ];
  let overlaps = 0;
  let selfReacquisitions = 0;
  const handoffs: number[] = [];
  for (let i = 0; i < sorted.length; i++) {
    const held = sorted[i]!;
    const next = sorted.slice(i + 1).find((a) => a.id !== held.id);
    if (sorted[i + 1]?.id === held.id) selfReacquisitions += 1;
    if (sorted[i + 1] && sorted[i + 1]!.acquiredAt < held.releaseStart) overlaps += 1;
    const someoneWaiting = waits.some(
      (w) => w.id !== held.id && w.from <= held.releaseStart && w.to > held.releaseStart,
    );
    if (next && someoneWaiting) handoffs.push(next.acquiredAt - held.releaseStart);
  }
  return { overlaps, handoffs, selfReacquisitions };
}

export const lockScenario: BenchScenario<typeof import("@azure/storage-blob")> = {
  name: "lock",
  description: "lease lock contention: handoff latency, waiting cost, exclusion, across processes",
  flags: {
    "--processes <n>": "contender processes (default 4)",
    "--contenders <n>": "contenders in all, a multiple of --processes (default 8)",
    "--seconds <n>": "length of each contention round, library and raw SDK (default 10)",
    "--hold <ms>": "how long a contender holds the lock (default 50)",
    "--rest <ms>": "how long it rests before wanting it again (default 50)",
    "--poll <ms>": "the lock's poll interval while waiting (default 100)",
  },
  services: ["blob"],
  loadSdks: () => importSdk(() => import("@azure/storage-blob"), "@azure/storage-blob"),
  async run({ connectionString, args, log }, { BlobServiceClient }) {
    const processes = numberFlag(args, "processes", 4, 1);
    const contenders = numberFlag(args, "contenders", 8, 1);
    const seconds = numberFlag(args, "seconds", 10, 1);
    const holdMs = numberFlag(args, "hold", 50, 0);
    const restMs = numberFlag(args, "rest", 50, 0);
    const pollIntervalInMs = numberFlag(args, "poll", 100, 10);
    if (contenders % processes !== 0) throw new UsageError("--contenders must be a multiple of --processes");

    const client = BlobServiceClient.fromConnectionString(connectionString);
    const container = client.getContainerClient(`bench-lock-${Date.now()}`);
    await container.create();
    try {
      // Uncontended cycles first: raw SDK (acquire + release) and the library (plus its lock record).
      const raw = container.getBlockBlobClient("raw");
      await raw.upload("", 0);
      const rawCyclePerSec = await cyclesPerSec(2, async () => {
        const lease = raw.getBlobLeaseClient(randomUUID());
        await lease.acquireLease(15);
        await lease.releaseLease();
      });
      const uncontended = blobLock(container, "library", { durationInSeconds: 15 });
      const libraryCyclePerSec = await cyclesPerSec(2, async () => (await uncontended.acquire()).release());
      log(`uncontended: raw SDK ${rawCyclePerSec} cycles/s, library ${libraryCyclePerSec} cycles/s`);

      for (const mode of ["library", "anchor"]) await container.getBlockBlobClient(`contended-${mode}`).upload("", 0);
      const settings = { processes, contenders, seconds, holdMs, restMs, pollIntervalInMs };
      log(
        `${contenders} contenders in ${processes} processes for ${seconds} s (hold ${holdMs} ms, rest ${restMs} ms, poll ${pollIntervalInMs} ms)`,
      );
      const library = await contend("library", connectionString, container.containerName, settings);
      log(`library: ${summarise(library)}, overlaps ${library.overlaps}`);
      const anchor = await contend("anchor", connectionString, container.containerName, settings);
      log(`anchor (raw SDK, retry every 250-1000 ms): ${summarise(anchor)}`);
      return {
        contenders,
        processes,
        ...library,
        rawCyclePerSec,
        libraryCyclePerSec,
        holdMs,
        restMs,
        pollIntervalInMs,
        goals: {
          overlaps: library.overlaps === 0,
          handoffMedianMs: library.handoffMedianMs !== null && library.handoffMedianMs <= 100,
          requestsPerWaiterPerSec: library.requestsPerWaiterPerSec !== null && library.requestsPerWaiterPerSec <= 20,
        },
        anchor,
      };
    } finally {
      await container.delete().catch(() => undefined);
    }
  },
};

/** `count / over`, rounded; null when `over` is 0 (nothing to divide by). */
function per(count: number, over: number, digits: number): number | null {
  return over > 0 ? round(count / over, digits) : null;
}

/** A contention round in a few words, for the progress lines ("n/a" for what could not be measured). */
function summarise(round: {
  handoffMedianMs: number | null;
  handoffs: number;
  requestsPerWaiterPerSec: number | null;
}) {
  const handoff =
    round.handoffMedianMs === null
      ? "no handoffs (no release while another contender waited)"
      : `handoff median ${round.handoffMedianMs} ms over ${round.handoffs}`;
  return `${handoff}, ${round.requestsPerWaiterPerSec ?? "n/a"} req/waiter/s`;
}

interface ContendSettings {
  processes: number;
  contenders: number;
  seconds: number;
  holdMs: number;
  restMs: number;
  pollIntervalInMs: number;
}

/** Runs one contention round in child processes and measures it from their logs. */
async function contend(
  mode: "library" | "anchor",
  connectionString: string,
  containerName: string,
  settings: ContendSettings,
) {
  const blobName = `contended-${mode}`;
  const goFile = join(tmpdir(), `asc-bench-go-${randomUUID()}`);
  const workers = Array.from({ length: settings.processes }, () =>
    spawnBenchWorker(
      "lock-contender",
      [
        mode,
        containerName,
        blobName,
        String(settings.contenders / settings.processes),
        goFile,
        String(settings.holdMs),
        String(settings.restMs),
        String(settings.pollIntervalInMs),
      ],
      connectionString,
    ),
  );
  try {
    // The processes load first (seconds on a busy machine), then start together.
    await Promise.all(workers.map((w) => w.waitFor((m: { ready?: boolean }) => m?.ready === true, 120_000)));
    const startAt = Date.now() + 200;
    writeFileSync(goFile, JSON.stringify({ startAt, deadline: startAt + settings.seconds * 1000 }));
    const exits = await Promise.all(workers.map((w) => w.exited));
    exits.forEach(({ code }, i) => {
      if (code !== 0) throw new Error(`contender process ${i} exited with ${code}: ${workers[i]!.stderr()}`);
    });
  } finally {
    await Promise.all(workers.map((w) => w.kill()));
    rmSync(goFile, { force: true });
  }
  const messages = workers
    .flatMap((w) => w.messages)
    .filter((m): m is Acquisition | UnfinishedWait => typeof m === "object" && m !== null && "waitKinds" in m);
  const acquisitions = messages.filter((m): m is Acquisition => "acquiredAt" in m);
  const unfinished = messages.filter((m): m is UnfinishedWait => "waitEnd" in m);
  const { overlaps, handoffs, selfReacquisitions } = analyse(acquisitions, unfinished);
  const waitTimes = acquisitions.map((a) => a.acquiredAt - a.waitStart);
  const waitMs =
    acquisitions.reduce((sum, a) => sum + (a.acquiredAt - a.waitStart), 0) +
    unfinished.reduce((sum, w) => sum + (w.waitEnd - w.waitStart), 0);
  const requestKinds: Record<string, number> = {};
  for (const m of messages) {
    for (const [kind, n] of Object.entries(m.waitKinds)) requestKinds[kind] = (requestKinds[kind] ?? 0) + n;
  }
  const all = Object.values(requestKinds).reduce((sum, n) => sum + n, 0);
  const acquiring = Object.entries(requestKinds)
    .filter(([kind]) => ACQUISITION_KINDS.test(kind))
    .reduce((sum, [, n]) => sum + n, 0);
  const first = Math.min(...acquisitions.map((a) => a.waitStart));
  const last = Math.max(...acquisitions.map((a) => a.releasedAt));
  const tokens = acquisitions.map((a) => a.token).filter((t) => t !== undefined);
  const sorted = [...handoffs].sort((a, b) => a - b);
  return {
    acquisitions: acquisitions.length,
    acquisitionsPerSec: acquisitions.length === 0 ? 0 : per(acquisitions.length, (last - first) / 1000, 1),
    // null, not NaN, when there was nothing to measure (no handoff, no waiting): JSON has no NaN.
    handoffMedianMs: handoffs.length === 0 ? null : round(median(handoffs), 1),
    handoffP90Ms: handoffs.length === 0 ? null : round(sorted[Math.floor(sorted.length * 0.9)]!, 1),
    handoffs: handoffs.length,
    waitMedianMs: waitTimes.length === 0 ? null : round(median(waitTimes), 1),
    selfReacquisitions,
    requestsPerWaiterPerSec: per(all - acquiring, waitMs / 1000, 1),
    requestsPerAcquisition: per(acquiring, acquisitions.length, 2),
    allRequestsPerWaiterPerSec: per(all, waitMs / 1000, 1),
    waitingSeconds: round(waitMs / 1000, 1),
    requestKinds,
    overlaps,
    fencingTokensUnique: new Set(tokens).size === tokens.length,
  };
}
