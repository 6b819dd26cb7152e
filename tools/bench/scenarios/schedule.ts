/**
 * `schedule`: a job scheduled every `--every` ms on `--instances` processes for `--seconds`, with the
 * library (`schedule()`, `catchUp: "all"`) and with the raw-SDK anchor (the lease-and-status-blob
 * loop a fleet writes by hand; see ../workers/schedule-instance.ts), in the same run. Half-way
 * through each round, every instance is paused (SIGSTOP) for `--pause` ms: the ticks that fall due
 * meanwhile are missed by everyone, and the library catches them up.
 *
 * Figures (the library's flat at the top level, the anchor's prefixed `anchor`):
 * - `ticks`: the ticks due in the measured window (from one second after the start to one second
 *   before the deadline, so that the start-up and the last ticks' catch-up are out of it);
 * - `runsPerTick`: job calls of those ticks over the ticks (exactly 1: each tick once, across every
 *   instance), and `maxRunsOfOneTick`;
 * - `missedTicks`: ticks of the window that never ran (0 with catch-up); the library's instances
 *   stop once the status has settled the window's last tick (at most 10 s after the deadline), so
 *   that a catch-up still under way at the deadline is not counted as missed;
 * - `requestsPerTick`: every request every instance made during the round (start-up, the lease,
 *   the status blob, the release, and the library's wait for the window to settle; the job makes
 *   none), over the ticks due in the round: the schedule's own cost per tick (for the library, a
 *   little over it when that wait ran further ticks);
 * - `lateMedianMs`, `lateP90Ms`: how late after its due time each run of a tick that was not missed
 *   started.
 */
import { randomUUID } from "node:crypto";
import { renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { numberFlag } from "../../internal/args.js";
import { importSdk } from "../../internal/sdk.js";
import { median, round, type BenchScenario } from "../harness.js";
import { spawnBenchWorker } from "../workers.js";

interface RoundSettings {
  readonly instances: number;
  readonly seconds: number;
  readonly everyMs: number;
  readonly pauseMs: number;
}

/** Runs one round in child processes and measures it from their logs. */
async function measure(
  mode: "library" | "anchor",
  connectionString: string,
  containerName: string,
  settings: RoundSettings,
) {
  const goFile = join(tmpdir(), `asc-bench-go-${randomUUID()}`);
  const name = `every-${settings.everyMs}-${mode}`;
  const workers = Array.from({ length: settings.instances }, () =>
    spawnBenchWorker(
      "schedule-instance",
      [mode, containerName, name, String(settings.everyMs), goFile],
      connectionString,
    ),
  );
  const startAt = { value: 0 };
  const deadline = { value: 0 };
  try {
    await Promise.all(workers.map((w) => w.waitFor((m: { ready?: boolean }) => m?.ready === true, 120_000)));
    startAt.value = Date.now() + 200;
    deadline.value = startAt.value + settings.seconds * 1000;
    writeFileSync(`${goFile}.tmp`, JSON.stringify({ startAt: startAt.value, deadline: deadline.value }));
    renameSync(`${goFile}.tmp`, goFile); // workers poll for it: never let them read a half-written file
    if (settings.pauseMs > 0) {
      await new Promise((resolve) => setTimeout(resolve, startAt.value + (settings.seconds * 1000) / 2 - Date.now()));
      for (const w of workers) w.child.kill("SIGSTOP");
      await new Promise((resolve) => setTimeout(resolve, settings.pauseMs));
      for (const w of workers) w.child.kill("SIGCONT");
    }
    const exits = await Promise.all(workers.map((w) => w.exited));
    exits.forEach(({ code }, i) => {
      if (code !== 0) throw new Error(`schedule instance ${i} exited with ${code}: ${workers[i]!.stderr()}`);
    });
  } finally {
    for (const w of workers) w.child.kill("SIGCONT");
    await Promise.all(workers.map((w) => w.kill()));
    rmSync(goFile, { force: true });
  }
  const messages = workers.flatMap((w) => w.messages as { run?: number; at?: number; requests?: number }[]);
  const runs = messages.filter((m) => m.run !== undefined) as { run: number; at: number }[];
  const requests = messages.reduce((sum, m) => sum + (m.requests ?? 0), 0);
  const kinds: Record<string, number> = {};
  for (const m of messages as { kinds?: Record<string, number> }[]) {
    for (const [kind, n] of Object.entries(m.kinds ?? {})) kinds[kind] = (kinds[kind] ?? 0) + n;
  }
  const every = settings.everyMs;
  const windowFirst = Math.ceil((startAt.value + 1_000) / every) * every;
  const windowLast = Math.floor((deadline.value - 1_000) / every) * every;
  const ticks = Math.max(0, (windowLast - windowFirst) / every + 1);
  const perTick = new Map<number, number>();
  for (const r of runs)
    if (r.run >= windowFirst && r.run <= windowLast) perTick.set(r.run, (perTick.get(r.run) ?? 0) + 1);
  const late = runs.filter((r) => r.run >= windowFirst && r.run <= windowLast).map((r) => r.at - r.run);
  const sorted = [...late].sort((a, b) => a - b);
  const ticksInRound = Math.max(1, Math.floor((deadline.value - startAt.value) / every));
  return {
    ticks,
    runsPerTick: ticks === 0 ? null : round([...perTick.values()].reduce((a, b) => a + b, 0) / ticks, 3),
    maxRunsOfOneTick: Math.max(0, ...perTick.values()),
    missedTicks: ticks - perTick.size,
    requestsPerTick: round(requests / ticksInRound, 2),
    lateMedianMs: late.length === 0 ? null : round(median(late), 1),
    lateP90Ms: sorted.length === 0 ? null : round(sorted[Math.floor(sorted.length * 0.9)]!, 1),
    requests,
    requestKinds: kinds,
  };
}

export const scheduleScenario: BenchScenario<typeof import("@azure/storage-blob")> = {
  name: "schedule",
  description:
    "scheduled jobs across instances: runs per tick, missed ticks, requests per tick, against a raw-SDK loop",
  flags: {
    "--instances <n>": "instance processes scheduling the same job (default 4)",
    "--seconds <n>": "length of each round, library and anchor (default 12)",
    "--every <ms>": "the schedule's period (default 200)",
    "--pause <ms>": "every instance paused half-way through each round for this long (default 1000; 0 to skip)",
  },
  services: ["blob"],
  timeLimitInSec: 240,
  loadSdks: () => importSdk(() => import("@azure/storage-blob"), "@azure/storage-blob"),
  async run({ connectionString, args, log }, { BlobServiceClient }) {
    const settings: RoundSettings = {
      instances: numberFlag(args, "instances", 4, 1),
      seconds: numberFlag(args, "seconds", 12, 3),
      everyMs: numberFlag(args, "every", 200, 100),
      pauseMs: numberFlag(args, "pause", 1_000, 0),
    };
    const container = BlobServiceClient.fromConnectionString(connectionString).getContainerClient(
      `bench-schedule-${Date.now()}`,
    );
    await container.create();
    try {
      const describe = `${settings.instances} instances, every ${settings.everyMs} ms for ${settings.seconds} s, all paused ${settings.pauseMs} ms half-way`;
      log(describe);
      const library = await measure("library", connectionString, container.containerName, settings);
      log(
        `library: ${library.ticks} ticks, ${library.runsPerTick} runs per tick, ${library.missedTicks} missed, ${library.requestsPerTick} requests per tick`,
      );
      const anchor = await measure("anchor", connectionString, container.containerName, settings);
      log(
        `anchor (raw SDK lease + status blob, no catch-up): ${anchor.ticks} ticks, ${anchor.runsPerTick} runs per tick, ` +
          `${anchor.missedTicks} missed, ${anchor.requestsPerTick} requests per tick`,
      );
      return {
        instances: settings.instances,
        everyInMs: settings.everyMs,
        seconds: settings.seconds,
        pauseMs: settings.pauseMs,
        ticks: library.ticks,
        runsPerTick: library.runsPerTick,
        maxRunsOfOneTick: library.maxRunsOfOneTick,
        missedTicks: library.missedTicks,
        requestsPerTick: library.requestsPerTick,
        lateMedianMs: library.lateMedianMs,
        lateP90Ms: library.lateP90Ms,
        anchorRunsPerTick: anchor.runsPerTick,
        anchorMissedTicks: anchor.missedTicks,
        anchorRequestsPerTick: anchor.requestsPerTick,
        requestsToAnchor:
          anchor.requestsPerTick > 0 ? round(library.requestsPerTick / anchor.requestsPerTick, 2) : null,
        goals: {
          runsPerTick: library.runsPerTick === 1 && library.maxRunsOfOneTick === 1,
          missedTicks: library.missedTicks === 0,
        },
        library,
        anchor,
      };
    } finally {
      await container.delete().catch(() => undefined);
    }
  },
};
