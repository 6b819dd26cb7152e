/**
 * Fault-placement explorer over the scheduled jobs (tests/support/explorer.ts): every fault kind (the
 * four, and with SDK retries off the two hangs) at every request of an instance's whole handling of
 * a tick, SDK retries on and off, and a seeded sample of pairs. The requests: reading the status at
 * start, taking the lease (acquire, the lock's record), claiming the tick in the status blob (read,
 * write `If-Match`), recording its end (write `If-Match`), releasing the lease.
 *
 * Operations, each a fresh schedule on a fresh status blob, on a clock shifted to one second after
 * an hour's tick (everyInMs one hour: the next tick is an hour away, so exactly one is due):
 * - a due tick: claimed, run, recorded;
 * - taking over: the status holds a claim of a run that never ended (its instance died; the lease is
 *   free again), on the due tick;
 * - catching up: two due ticks (`catchUp: "all"`), the second claimed under the same lease.
 *
 * The contract, judged on the status blob and the lease read directly:
 * - each tick's job completes at most once with its signal not aborted;
 * - a tick is recorded done exactly once, by the run that completed (its fencing token and attempt),
 *   and only once the run completed; a takeover's run has a higher attempt than the claim it took over;
 * - when the schedule reached its next wait (the op's success), every due tick is recorded and
 *   nothing is left `running`; when start() failed, the status is as it was and no job ran;
 * - the lease is released at the end: left to expire only under a pair of faults.
 */
import type { ContainerClient } from "@azure/storage-blob";
import { LOCK_METADATA, readLockRecord, schedule, type ScheduleOptions } from "../../../src/index.js";
import { SCHEDULE_CLOCK } from "../../../src/schedule/schedule.js";
import type { ScheduleStatusRecord } from "../../../src/schedule/status.js";
import {
  ALL_FAULT_KINDS,
  createExplorer,
  describeError,
  TIMEOUT_FAULT_KINDS,
  violationsOf,
  type ExploredOperation,
  type ExplorerRun,
  type Settled,
  type Verdict,
  type Via,
} from "../../support/explorer.js";
import { blobService, uniqueName } from "../../support/storage.js";

const HOUR = 3_600_000;
/** The tick due in every run: an hour's start (its instances' clocks are shifted to one second after it). */
const T = Date.UTC(2031, 0, 1, 10);
const START_TOKEN = 4;
/** Short time limits, so that a hang costs little; long enough for a busy machine (as the lock explorer's). */
const REQUEST_TIMEOUT_IN_MS = 250;
/**
 * Which faults each operation is explored with (the file must stay within tens of seconds): the due
 * tick and the takeover get every kind at every position with the SDK's retries off (each fault
 * reaches the library), and the due tick, with them on, the kinds the SDK's own resend turns into a
 * conflict (an applied request whose answer was lost); the catch-up, whose second claim is the only
 * new request shape (a write on the version this instance wrote last, without a read), the lost answers.
 */
const EVERY_FAULT = { sdkRetries: ["off"] as const, kinds: [...ALL_FAULT_KINDS, ...TIMEOUT_FAULT_KINDS], pairs: 3 };
const RESENT = { sdkRetries: ["on"] as const, kinds: ["drop", "applied500"] as const, pairs: 1 };
const LOST_ANSWERS = { sdkRetries: ["off"] as const, kinds: ["drop", "applied500"] as const };
const TIME_LIMIT_IN_MS = process.env.ASC_EXPLORE_PAIRS === "all" ? 3_600_000 : 300_000;

let explorer: Awaited<ReturnType<typeof createExplorer>>;
let container: ContainerClient;
let serial = 0;

beforeAll(async () => {
  explorer = await createExplorer("Scheduled jobs: claiming, running, recording, taking over", ["blob"]);
  container = blobService().getContainerClient(uniqueName("exploresch"));
  await container.create();
});
afterAll(async () => {
  await explorer.close("schedule");
  await container.delete();
});

const iso = (ms: number) => new Date(ms).toISOString();

interface ScheduleState {
  readonly name: string;
  /** The status as set up. */
  readonly start: ScheduleStatusRecord;
  /** The ticks that must run, in order, and the attempt the first must have at least. */
  readonly due: readonly number[];
  readonly firstAttempt: number;
  readonly options: ScheduleOptions;
}

/** What one instance did: each job call, and how the schedule ended its work. */
interface Observed {
  readonly calls: {
    readonly tick: string;
    readonly attempt: number;
    readonly token: number | undefined;
    readonly ok: boolean;
  }[];
}

/** A status whose last settled tick is `lastTick`, and, with `dead`, a claim of `T` by a run that never ended. */
function statusState(lastTick: number, { dead = false, catchUp = false } = {}) {
  return async (): Promise<ScheduleState> => {
    const name = `s${(serial += 1)}`;
    const start: ScheduleStatusRecord = {
      version: 1,
      schedule: `every ${HOUR} ms`,
      createdAt: iso(lastTick - 1_000),
      lastTick: iso(lastTick),
      lastOutcome: "succeeded",
      lastRun: null,
      running: dead
        ? {
            tick: iso(T),
            runId: "a-run-that-died",
            attempt: 1,
            fencingToken: START_TOKEN,
            holder: { host: "gone", pid: 1 },
            startedAt: iso(T),
          }
        : null,
      nextDue: iso(lastTick + HOUR),
      missedTicks: 0,
      updatedAt: iso(lastTick),
    };
    const text = JSON.stringify(start);
    await Promise.all([
      container.getBlockBlobClient(`${name}/status.json`).upload(text, Buffer.byteLength(text)),
      container
        .getBlockBlobClient(`${name}/lock`)
        .upload("", 0, { metadata: { [LOCK_METADATA.fencingToken]: String(START_TOKEN) } }),
    ]);
    const due: number[] = [];
    for (let t = lastTick + HOUR; t <= T; t += HOUR) due.push(t);
    return { name, start, due, firstAttempt: dead ? 2 : 1, options: catchUp ? { catchUp: "all" } : {} };
  };
}

/** Runs one instance until it waits for the tick after `T` (or start() fails); always stops it. */
async function runInstance(state: ScheduleState, via: Via): Promise<Observed> {
  const observed: Observed = { calls: [] };
  const clock = { offsetInMs: T + 1_000 - Date.now(), now: () => Date.now() + clock.offsetInMs };
  const s = schedule(
    blobService(via.connectionString, via.storageOptions).getContainerClient(container.containerName),
    state.name,
    { everyInMs: HOUR },
    async ({ tick, attempt, fencingToken, abortSignal }) => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      observed.calls.push({ tick: tick.dueAt.toISOString(), attempt, token: fencingToken, ok: !abortSignal.aborted });
    },
    {
      leaseDurationInSeconds: 15,
      requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS,
      takeoverCheckIntervalInMs: 50,
      ...state.options,
      [SCHEDULE_CLOCK]: clock,
    } as ScheduleOptions,
  );
  const settled = new Promise<void>((resolve) =>
    s.on("waiting", ({ tick }) => {
      if (tick.dueAt.getTime() > T) resolve();
    }),
  );
  try {
    await s.start();
    await settled;
    return observed;
  } finally {
    await s.stop();
  }
}

async function storedStatus(name: string): Promise<ScheduleStatusRecord> {
  return JSON.parse(
    (await container.getBlockBlobClient(`${name}/status.json`).downloadToBuffer()).toString(),
  ) as ScheduleStatusRecord;
}

async function judge(state: ScheduleState, result: Settled<Observed>): Promise<Verdict> {
  const status = await storedStatus(state.name);
  const lock = await container.getBlockBlobClient(`${state.name}/lock`).getProperties();
  const leased = lock.leaseState === "leased";
  const calls = result.ok ? result.value.calls : [];
  const completed = calls.filter((c) => c.ok);
  const lastDue = state.due.at(-1)!;
  // Each tick's job completes at most once with its signal not aborted.
  for (const t of state.due) {
    const n = completed.filter((c) => c.tick === iso(t)).length;
    if (n > 1) return { outcome: "ran twice", violation: `the job of ${iso(t)} completed ${n} times` };
  }
  if (!result.ok) {
    const outcome = `start failed: ${describeError(result.error)}`;
    if (JSON.stringify(status) !== JSON.stringify(state.start))
      return { outcome, violation: "start() failed, yet the status changed" };
    return leased ? { outcome: `${outcome}; lease left to expire` } : { outcome };
  }
  // Recorded exactly once, by the run that completed: the last due tick's record carries its attempt and token.
  const last = completed.find((c) => c.tick === iso(lastDue));
  if (status.lastTick !== iso(lastDue) || status.running !== null)
    return { outcome: "not settled", violation: `the schedule went on, but the status says ${JSON.stringify(status)}` };
  if (!last) return { outcome: "recorded", violation: `${iso(lastDue)} is recorded, but no run of it completed` };
  if (
    status.lastRun?.tick !== iso(lastDue) ||
    status.lastRun.attempt !== last.attempt ||
    status.lastRun.fencingToken !== last.token
  )
    return {
      outcome: "recorded",
      violation: `recorded by ${JSON.stringify(status.lastRun)}, completed by ${JSON.stringify(last)}`,
    };
  if (completed.length !== state.due.length)
    return { outcome: "recorded", violation: `${completed.length} completed runs for ${state.due.length} due ticks` };
  const first = completed[0]!;
  if (first.attempt < state.firstAttempt)
    return { outcome: "recorded", violation: `the takeover ran as attempt ${first.attempt}, not above the dead run's` };
  if ((first.token ?? 0) <= START_TOKEN || readLockRecord(lock.metadata ?? {}).fencingToken < first.token!)
    return { outcome: "recorded", violation: `fencing token ${first.token} after ${START_TOKEN}` };
  if (status.missedTicks !== 0)
    return { outcome: "recorded", violation: `${status.missedTicks} ticks recorded as missed` };
  const retried =
    calls.length > completed.length || first.attempt > state.firstAttempt ? " (a run abandoned first)" : "";
  return leased ? { outcome: `recorded${retried}; lease left to expire` } : { outcome: `recorded${retried}` };
}

const operation = (name: string, setup: () => Promise<ScheduleState>): ExploredOperation<ScheduleState, Observed> => ({
  name,
  setup,
  run: runInstance,
  judge,
});

const dueTick = operation("a due tick: claim, run, record", statusState(T - HOUR));
const takeover = operation("a run that never ended: taken over", statusState(T - HOUR, { dead: true }));
const catchUp = operation(
  "two due ticks, caught up under one lease (catchUp all)",
  statusState(T - 2 * HOUR, { catchUp: true }),
);

/** Outcomes allowed under a pair of faults, never under one: a lease left to expire, a run abandoned and taken over. */
const NOT_FOR_ONE_FAULT = /left to expire|abandoned/;

it(
  "a tick is run at most once by a holder whose signal was not aborted, and recorded exactly once, whatever fault hits which request",
  async () => {
    const runs: ExplorerRun[] = [];
    runs.push(...(await explorer.explore(dueTick, EVERY_FAULT)), ...(await explorer.explore(dueTick, RESENT)));
    runs.push(...(await explorer.explore(takeover, EVERY_FAULT)));
    runs.push(...(await explorer.explore(catchUp, LOST_ANSWERS)));
    const single = runs
      .filter((r) => r.placement.length <= 1 && NOT_FOR_ONE_FAULT.test(r.outcome))
      .map((r) => `${r.operation} [${r.faults}]: ${r.outcome} under one fault`);
    expect([...violationsOf(runs), ...single]).toEqual([]);
  },
  TIME_LIMIT_IN_MS,
);
