/**
 * Scheduled jobs against real storage, one process: catch-up after an outage under each policy, a
 * failing job, stop() handing a running tick over to another instance at once, and start() failing
 * loudly. The clock is this process's shifted by an offset the test sets (`SCHEDULE_CLOCK`), so that
 * "an hour of outage" takes no time; every wait still runs on real timers.
 */
import type { ContainerClient } from "@azure/storage-blob";
import {
  isScheduleStatusError,
  isScheduleStoppedError,
  isStorageRequestError,
  schedule,
  type ScheduleEvents,
  type ScheduleOptions,
  type ScheduledJob,
  type Schedule,
} from "../../../src/index.js";
import { SCHEDULE_CLOCK } from "../../../src/schedule/schedule.js";
import { blobService, uniqueName } from "../../support/storage.js";
import { describeStorage } from "../../support/target.js";

const MINUTE = 60_000;
let container: ContainerClient;
beforeAll(async () => {
  container = blobService().getContainerClient(uniqueName("sched"));
  await container.create();
});
afterAll(async () => {
  await container.delete();
});

/** A clock shifted by `offsetInMs` from this process's. */
function shiftedClock() {
  const clock = { offsetInMs: 0, now: () => Date.now() + clock.offsetInMs };
  return clock;
}

/** The next time `event` fires (within 10 s). */
function next<K extends keyof ScheduleEvents>(s: Schedule, event: K, timeoutInMs = 10_000): Promise<ScheduleEvents[K]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no '${event}' within ${timeoutInMs} ms`)), timeoutInMs);
    const listener = s.on(event, (payload) => {
      clearTimeout(timer);
      listener.dispose();
      resolve(payload);
    });
  });
}

function make(name: string, clock: { now(): number }, job: ScheduledJob, options: ScheduleOptions = {}): Schedule {
  return schedule(container, name, { everyInMs: MINUTE }, job, {
    leaseDurationInSeconds: 15,
    requestTimeoutInMs: 2_000,
    ...options,
    [SCHEDULE_CLOCK]: clock,
  } as ScheduleOptions);
}

describeStorage("scheduled jobs", () => {
  it.each([
    { policy: "all", options: { catchUp: "all" }, runs: 5, missed: 0 },
    { policy: "latest", options: { catchUp: "latest" }, runs: 1, missed: 4 },
    { policy: "none", options: { catchUp: "none", missedAfterInMs: 10_000 }, runs: 0, missed: 5 },
  ] as const)(
    "after a five-minute outage, catchUp $policy runs $runs tick(s) and records $missed missed",
    async ({ policy, options, runs, missed }) => {
      const name = `outage-${policy}`;
      const clock = shiftedClock();
      // Created just after a whole minute; then every instance is down for five and a half minutes.
      clock.offsetInMs = (Math.floor(Date.now() / MINUTE) + 1) * MINUTE + 1_000 - Date.now();
      const first = make(name, clock, () => undefined);
      await first.start();
      await first.stop();
      const created = (await first.readStatus())!;
      clock.offsetInMs += 5.5 * MINUTE;

      const ran: { id: string; attempt: number; token: number | undefined }[] = [];
      const again = make(
        name,
        clock,
        ({ tick, attempt, fencingToken }) => void ran.push({ id: tick.id, attempt, token: fencingToken }),
        options,
      );
      const settledAll = next(again, "waiting");
      const missedEvent = missed > 0 ? next(again, "missed") : undefined;
      await again.start();
      const waiting = await settledAll;
      await again.stop();

      const base = Math.floor(Date.parse(created.createdAt) / MINUTE) * MINUTE;
      const tick = (k: number) => `${name}@${new Date(base + k * MINUTE).toISOString()}`;
      expect(waiting.tick.id).toBe(tick(6)); // nothing due before the sixth minute
      const expected = { all: [1, 2, 3, 4, 5], latest: [5], none: [] }[policy];
      expect(ran.map((r) => r.id)).toEqual(expected.map(tick));
      expect(ran.every((r) => r.attempt === 1)).toBe(true);
      expect(new Set(ran.map((r) => r.token)).size).toBeLessThanOrEqual(1); // one lease for the whole catch-up
      if (missedEvent) expect(await missedEvent).toMatchObject({ count: missed });
      const status = (await again.readStatus())!;
      expect(status).toMatchObject({
        lastTick: new Date(base + 5 * MINUTE).toISOString(),
        lastOutcome: runs > 0 ? "succeeded" : "missed",
        missedTicks: missed,
        running: null,
      });
      expect(runs).toBe(ran.length);
    },
  );

  it("a job that throws is recorded as failed, with its message, and its tick does not run again", async () => {
    const clock = shiftedClock();
    clock.offsetInMs = (Math.floor(Date.now() / MINUTE) + 1) * MINUTE + 1_000 - Date.now();
    await make("fails", clock, () => undefined)
      .start()
      .then((s) => s.stop());
    clock.offsetInMs += MINUTE;
    let calls = 0;
    const s = make("fails", clock, () => {
      calls += 1;
      throw new Error("the report service said no");
    });
    const failed = next(s, "failed");
    const waiting = next(s, "waiting");
    await s.start();
    expect(await failed).toMatchObject({ attempt: 1, error: { message: "the report service said no" } });
    await waiting;
    await s.stop();
    expect(calls).toBe(1);
    expect(await s.readStatus()).toMatchObject({
      lastOutcome: "failed",
      lastRun: { outcome: "failed", error: "the report service said no" },
    });
  });

  it("stop(): the job's grace period, then its signal aborts; the tick is not recorded and another instance takes it over at once", async () => {
    const clock = shiftedClock();
    clock.offsetInMs = (Math.floor(Date.now() / MINUTE) + 1) * MINUTE + 1_000 - Date.now();
    await make("handover", clock, () => undefined)
      .start()
      .then((s) => s.stop());
    clock.offsetInMs += MINUTE;
    const runs: { who: string; attempt: number; token: number | undefined }[] = [];
    let reason: unknown;
    const stubborn = make("handover", clock, async ({ abortSignal, attempt, fencingToken }) => {
      runs.push({ who: "stopping", attempt, token: fencingToken });
      await new Promise((resolve) => abortSignal.addEventListener("abort", resolve, { once: true }));
      reason = abortSignal.reason;
    });
    const started = next(stubborn, "run");
    const abandoned = next(stubborn, "abandoned");
    await stubborn.start();
    await started;
    // Another instance finds the lease held; it looks again every 50 ms.
    const successor = make(
      "handover",
      clock,
      ({ attempt, fencingToken }) => void runs.push({ who: "successor", attempt, token: fencingToken }),
      { takeoverCheckIntervalInMs: 50 },
    );
    const succeeded = next(successor, "succeeded");
    await successor.start();
    expect(await stubborn.stop({ gracePeriodInMs: 100 })).toEqual({ timedOut: false, stillRunning: undefined });
    expect(isScheduleStoppedError(reason)).toBe(true);
    expect(await abandoned).toMatchObject({ reason: "stopped", attempt: 1 });
    expect(await succeeded).toMatchObject({ attempt: 2 });
    await successor.stop();
    expect(runs.map((r) => [r.who, r.attempt])).toEqual([
      ["stopping", 1],
      ["successor", 2],
    ]);
    expect(runs[1]!.token).toBeGreaterThan(runs[0]!.token!);
    expect(await successor.readStatus()).toMatchObject({
      lastOutcome: "succeeded",
      lastRun: { attempt: 2 },
      running: null,
    });
  });

  it("start() fails loudly on storage it cannot use, and writes nothing over an unreadable status", async () => {
    const missing = schedule(
      blobService().getContainerClient(uniqueName("nope")),
      "n",
      { everyInMs: MINUTE },
      () => undefined,
      {
        createIfMissing: false,
      },
    );
    const error = await missing.start().catch((e: unknown) => e);
    expect(isStorageRequestError(error) && error.statusCode).toBe(404);
    expect(missing.state).toBe("failed");
    await expect(missing.closed).rejects.toBe(error);

    const blob = container.getBlockBlobClient("garbled/status.json");
    await blob.upload("{not json", 9);
    const garbled = schedule(container, "garbled", { everyInMs: MINUTE }, () => undefined);
    const refused = await garbled.start().catch((e: unknown) => e);
    expect(isScheduleStatusError(refused)).toBe(true);
    expect((refused as Error).message).toMatch(/cannot be read.*delete it to start the schedule afresh/s);
    expect((await blob.downloadToBuffer()).toString()).toBe("{not json");
  });
});
