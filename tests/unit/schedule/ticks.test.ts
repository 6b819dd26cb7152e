/**
 * The schedules' tick arithmetic and catch-up decisions, on a fake clock (an explicit `now`): periods
 * on the epoch, cron patterns in time zones across daylight saving time changes, the three catch-up
 * policies, and the status transitions that claim and record ticks.
 */
import { ContainerClient } from "@azure/storage-blob";
import { schedule } from "../../../src/index.js";
import { MAX_COUNTED_MISSES, planTicks, type CatchUp } from "../../../src/schedule/catch-up.js";
import { claimTransition, createdStatus, recordTransition, statusProblem } from "../../../src/schedule/status.js";
import { resolveTiming, tickId } from "../../../src/schedule/timing.js";

const at = (iso: string) => Date.parse(iso);
const isoOf = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());
const policy = (catchUp: CatchUp["catchUp"], extra: Partial<CatchUp> = {}): CatchUp => ({
  catchUp,
  maxCatchUpTicks: 100,
  missedAfterInMs: 60_000,
  ...extra,
});

describe("tick arithmetic", () => {
  it("everyInMs ticks on whole multiples of the period since the epoch, the same for every instance", () => {
    const minute = resolveTiming({ everyInMs: 60_000 });
    expect(minute.description).toBe("every 60000 ms");
    expect(isoOf(minute.next(at("2025-01-01T10:00:30Z")))).toBe("2025-01-01T10:01:00.000Z");
    expect(isoOf(minute.next(at("2025-01-01T10:01:00Z")))).toBe("2025-01-01T10:02:00.000Z"); // strictly after
    expect(isoOf(minute.previous(at("2025-01-01T10:01:00Z")))).toBe("2025-01-01T10:00:00.000Z"); // strictly before
    expect(isoOf(minute.previous(at("2025-01-01T10:01:00.001Z")))).toBe("2025-01-01T10:01:00.000Z");
    expect(minute.count(at("2025-01-01T10:00:00Z"), at("2025-01-01T10:10:00Z"), 1_000)).toBe(11);
    expect(minute.count(at("2025-01-01T10:00:00.001Z"), at("2025-01-01T10:00:59Z"), 1_000)).toBe(0);
    expect(minute.count(at("2025-01-01T00:00:00Z"), at("2025-01-02T00:00:00Z"), 5)).toBe(5);
  });

  it("cron patterns are read in their time zone (UTC by default), with 5 or 6 fields", () => {
    const utc = resolveTiming({ cron: "0 2 * * *" });
    expect(utc.description).toBe("cron '0 2 * * *' in UTC");
    expect(isoOf(utc.next(at("2025-06-01T12:00:00Z")))).toBe("2025-06-02T02:00:00.000Z");
    const paris = resolveTiming({ cron: "0 2 * * *", timeZone: "Europe/Paris" });
    expect(isoOf(paris.next(at("2025-06-01T12:00:00Z")))).toBe("2025-06-02T00:00:00.000Z"); // CEST, UTC+2
    expect(isoOf(paris.next(at("2025-01-01T12:00:00Z")))).toBe("2025-01-02T01:00:00.000Z"); // CET, UTC+1
    const seconds = resolveTiming({ cron: "*/10 * * * * *" });
    expect(isoOf(seconds.next(at("2025-01-01T00:00:05Z")))).toBe("2025-01-01T00:00:10.000Z");
    expect(seconds.count(at("2025-01-01T00:00:00Z"), at("2025-01-01T00:01:00Z"), 100)).toBe(7);
    expect(isoOf(seconds.previous(at("2025-01-01T00:00:10Z")))).toBe("2025-01-01T00:00:00.000Z");
  });

  it("daylight saving time: a fixed-time job in the spring gap runs once after it, once on the repeated autumn hour", () => {
    const fixed = resolveTiming({ cron: "30 2 * * *", timeZone: "Europe/Paris" });
    // 30 March 2025: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist. It runs at 03:00 CEST (01:00Z).
    expect(isoOf(fixed.next(at("2025-03-29T12:00:00Z")))).toBe("2025-03-30T01:00:00.000Z");
    expect(isoOf(fixed.next(at("2025-03-30T01:00:00Z")))).toBe("2025-03-31T00:30:00.000Z");
    // 26 October 2025: 03:00 CEST falls back to 02:00 CET; 02:30 happens twice. It runs on the first.
    expect(isoOf(fixed.next(at("2025-10-25T12:00:00Z")))).toBe("2025-10-26T00:30:00.000Z");
    expect(isoOf(fixed.next(at("2025-10-26T00:30:00Z")))).toBe("2025-10-27T01:30:00.000Z");
  });

  it("daylight saving time: an interval job runs at both instants of the repeated hour, each its own tick", () => {
    const interval = resolveTiming({ cron: "*/30 2 * * *", timeZone: "Europe/Paris" });
    const ticks: string[] = [];
    for (let t = interval.next(at("2025-10-25T23:00:00Z")); ticks.length < 4; t = interval.next(t!))
      ticks.push(tickId("sync", t!));
    expect(ticks).toEqual([
      "sync@2025-10-26T00:00:00.000Z", // 02:00 CEST
      "sync@2025-10-26T00:30:00.000Z", // 02:30 CEST
      "sync@2025-10-26T01:00:00.000Z", // 02:00 CET
      "sync@2025-10-26T01:30:00.000Z", // 02:30 CET
    ]);
    expect(new Set(ticks).size).toBe(4);
  });

  it("refuses bad timings with an error that says what to fix", () => {
    expect(() => resolveTiming(undefined)).toThrow(/`timing` must be an object/);
    expect(() => resolveTiming({})).toThrow(/exactly one of `cron` and `everyInMs`/);
    expect(() => resolveTiming({ cron: "* * * * *", everyInMs: 1000 })).toThrow(/exactly one/);
    expect(() => resolveTiming({ everyInMs: 50 })).toThrow(RangeError);
    expect(() => resolveTiming({ everyInMs: 1000.5 })).toThrow(/whole number/);
    expect(() => resolveTiming({ everyInMs: 1000, timeZone: "UTC" })).toThrow(/`timeZone` applies to `cron` only/);
    expect(() => resolveTiming({ cron: "61 * * * *" })).toThrow(/`cron` "61 \* \* \* \*" is not a valid pattern/);
    expect(() => resolveTiming({ cron: "* * * * * * *" })).toThrow(RangeError); // no year field
    expect(() => resolveTiming({ cron: "" })).toThrow(TypeError);
    expect(() => resolveTiming({ cron: "0 2 * * *", timeZone: "Mars/Base" })).toThrow(
      /not a time zone this runtime knows/,
    );
    expect(() => resolveTiming({ cron: "0 0 30 2 *" })).toThrow(/never matches/); // 30 February
  });
});

describe("catch-up", () => {
  const every = resolveTiming({ everyInMs: 60_000 });
  const last = at("2025-01-01T10:00:00Z");

  it("nothing due before the next tick; the next due time is said", () => {
    const plan = planTicks(every, last, at("2025-01-01T10:00:59.999Z"), policy("latest"));
    expect(plan).toEqual({ run: undefined, missedThrough: undefined, missed: 0, nextDue: at("2025-01-01T10:01:00Z") });
  });

  it("the tick just due runs under every policy, nothing missed", () => {
    for (const p of ["latest", "all", "none"] as const) {
      const plan = planTicks(every, last, at("2025-01-01T10:01:00.050Z"), policy(p));
      expect({ p, ...plan }).toMatchObject({ p, run: at("2025-01-01T10:01:00Z"), missed: 0, missedThrough: undefined });
    }
  });

  it('"latest" runs the latest due tick and records the earlier ones as missed', () => {
    const plan = planTicks(every, last, at("2025-01-01T10:05:30Z"), policy("latest"));
    expect(plan).toMatchObject({
      run: at("2025-01-01T10:05:00Z"),
      missed: 4,
      missedThrough: at("2025-01-01T10:04:00Z"),
    });
  });

  it('"all" runs every due tick oldest first, and only the latest maxCatchUpTicks when more are due', () => {
    expect(planTicks(every, last, at("2025-01-01T10:05:30Z"), policy("all"))).toMatchObject({
      run: at("2025-01-01T10:01:00Z"),
      missed: 0,
    });
    const bounded = planTicks(every, last, at("2025-01-01T10:05:30Z"), policy("all", { maxCatchUpTicks: 2 }));
    expect(bounded).toMatchObject({
      run: at("2025-01-01T10:04:00Z"),
      missed: 3,
      missedThrough: at("2025-01-01T10:03:00Z"),
    });
  });

  it('"none" runs a tick only within missedAfterInMs of its due time, else skips it and waits for the next', () => {
    const onTime = planTicks(every, last, at("2025-01-01T10:03:10Z"), policy("none", { missedAfterInMs: 15_000 }));
    expect(onTime).toMatchObject({
      run: at("2025-01-01T10:03:00Z"),
      missed: 2,
      missedThrough: at("2025-01-01T10:02:00Z"),
    });
    const late = planTicks(every, last, at("2025-01-01T10:03:20Z"), policy("none", { missedAfterInMs: 15_000 }));
    expect(late).toEqual({
      run: undefined,
      missed: 3,
      missedThrough: at("2025-01-01T10:03:00Z"),
      nextDue: at("2025-01-01T10:04:00Z"),
    });
  });

  it("a run that lasted past the next ticks: the schedule never overlaps, the ticks it outlasted are caught up", () => {
    // The 10:01 run ended at 10:03:30: 10:02 and 10:03 fell due meanwhile.
    const after = at("2025-01-01T10:01:00Z");
    expect(planTicks(every, after, at("2025-01-01T10:03:30Z"), policy("latest"))).toMatchObject({
      run: at("2025-01-01T10:03:00Z"),
      missed: 1,
    });
    expect(planTicks(every, after, at("2025-01-01T10:03:30Z"), policy("all"))).toMatchObject({
      run: at("2025-01-01T10:02:00Z"),
      missed: 0,
    });
  });

  it("cron catch-up across the autumn change counts each instant once", () => {
    const hourly = resolveTiming({ cron: "0 * * * *", timeZone: "Europe/Paris" });
    // Down from 23:30Z to 03:10Z on 25-26 October 2025: local 01:00, 02:00 (CEST), 02:00 (CET), 03:00, 04:00.
    const plan = planTicks(hourly, at("2025-10-25T22:00:00Z"), at("2025-10-26T03:10:00Z"), policy("latest"));
    expect(plan).toMatchObject({ run: at("2025-10-26T03:00:00Z"), missed: 4 });
  });

  it("missed ticks are counted up to a bound, so a long outage of a fast schedule costs little", () => {
    const fast = resolveTiming({ everyInMs: 100 });
    const plan = planTicks(fast, 0, 1_000_000_000, policy("latest"));
    expect(plan.missed).toBe(MAX_COUNTED_MISSES + 100 - 1);
  });
});

describe("status transitions", () => {
  const timing = resolveTiming({ everyInMs: 60_000 });
  const holder = { host: "h", pid: 1 };
  const created = createdStatus(timing, at("2025-01-01T10:00:10Z"));
  const me = { runId: "run-a", fencingToken: 7, holder };

  it("a new status: nothing at or before its creation runs", () => {
    expect(created).toMatchObject({ version: 1, lastTick: null, nextDue: "2025-01-01T10:01:00.000Z", missedTicks: 0 });
    expect(statusProblem(created)).toBeUndefined();
    expect(claimTransition(created, timing, policy("latest"), me, at("2025-01-01T10:00:50Z")).decision).toEqual({
      kind: "nothing",
      nextDue: at("2025-01-01T10:01:00Z"),
      settled: at("2025-01-01T10:00:10Z"),
    });
  });

  it("claim, then record: the tick is settled once, by the run that claimed it", () => {
    const { next: claimed, decision } = claimTransition(
      created,
      timing,
      policy("latest"),
      me,
      at("2025-01-01T10:03:05Z"),
    );
    expect(decision.kind).toBe("run");
    expect(claimed).toMatchObject({
      lastTick: "2025-01-01T10:02:00.000Z",
      lastOutcome: "missed",
      missedTicks: 2,
      running: { tick: "2025-01-01T10:03:00.000Z", runId: "run-a", attempt: 1, fencingToken: 7 },
    });
    // The same claim tried again (its answer was lost) keeps the stored claim.
    expect(claimTransition(claimed!, timing, policy("latest"), me, at("2025-01-01T10:03:06Z")).next).toBeUndefined();
    const claim = claimed!.running!;
    const ended = { outcome: "succeeded" as const, atMs: at("2025-01-01T10:03:09Z") };
    const { next: recorded, decision: verdict } = recordTransition(claimed!, timing, claim, ended);
    expect(verdict).toBe("recorded");
    expect(recorded).toMatchObject({
      lastTick: "2025-01-01T10:03:00.000Z",
      lastOutcome: "succeeded",
      running: null,
      nextDue: "2025-01-01T10:04:00.000Z",
      lastRun: { runId: "run-a", outcome: "succeeded", endedAt: "2025-01-01T10:03:09.000Z" },
    });
    // Recorded already (a lost answer): nothing more is written.
    expect(recordTransition(recorded!, timing, claim, ended)).toEqual({ next: undefined, decision: "recorded" });
    // Nothing is due until the next tick, whoever looks.
    expect(
      claimTransition(recorded!, timing, policy("all"), { ...me, runId: "run-b" }, at("2025-01-01T10:03:30Z")).decision
        .kind,
    ).toBe("nothing");
  });

  it("a claim left by a run that did not end is taken over (attempt 2), and the old run can no longer record", () => {
    const { next: claimed } = claimTransition(created, timing, policy("latest"), me, at("2025-01-01T10:01:01Z"));
    const takeover = claimTransition(
      claimed!,
      timing,
      policy("latest"),
      { ...me, runId: "run-b", fencingToken: 8 },
      at("2025-01-01T10:01:40Z"),
    );
    expect(takeover.next?.running).toMatchObject({
      tick: "2025-01-01T10:01:00.000Z",
      runId: "run-b",
      attempt: 2,
      fencingToken: 8,
    });
    const stale = recordTransition(takeover.next!, timing, claimed!.running!, { outcome: "succeeded", atMs: 0 });
    expect(stale).toEqual({ next: undefined, decision: "superseded" });
  });

  it("a claim left on a tick that is no longer the one to run is settled as missed", () => {
    const { next: claimed } = claimTransition(created, timing, policy("latest"), me, at("2025-01-01T10:01:01Z"));
    const later = claimTransition(
      claimed!,
      timing,
      policy("latest"),
      { ...me, runId: "run-b" },
      at("2025-01-01T10:04:01Z"),
    );
    expect(later.next).toMatchObject({
      lastTick: "2025-01-01T10:03:00.000Z",
      missedTicks: 3,
      running: { tick: "2025-01-01T10:04:00.000Z", runId: "run-b", attempt: 1 },
    });
  });

  it("a failed run settles its tick as failed, with the error's text", () => {
    const { next: claimed } = claimTransition(created, timing, policy("latest"), me, at("2025-01-01T10:01:01Z"));
    const { next } = recordTransition(claimed!, timing, claimed!.running!, {
      outcome: "failed",
      error: "boom",
      atMs: 5,
    });
    expect(next).toMatchObject({
      lastTick: "2025-01-01T10:01:00.000Z",
      lastOutcome: "failed",
      lastRun: { error: "boom" },
    });
  });

  it("names what is wrong with a stored status it cannot read", () => {
    const broken = (change: Record<string, unknown>) => statusProblem({ ...created, ...change });
    expect(statusProblem([])).toMatch(/not a JSON object/);
    expect(broken({ version: 2 })).toMatch(/`version` is 2/);
    expect(broken({ lastTick: "yesterday" })).toMatch(/`lastTick`/);
    expect(broken({ running: { tick: "2025-01-01T00:00:00Z" } })).toMatch(/`running` has no `runId`/);
    expect(broken({ missedTicks: "3" })).toMatch(/`missedTicks`/);
  });
});

describe("schedule() checks its arguments before any request", () => {
  // No request can succeed here: nothing listens on port 9.
  const container = new ContainerClient("http://127.0.0.1:9/devstoreaccount1/schedules");
  const job = async () => undefined;

  it("defaults, and the lease and status blobs it names", () => {
    const s = schedule(container, "nightly-report", { cron: "0 2 * * *", timeZone: "Europe/Paris" }, job);
    expect(s.state).toBe("idle");
    expect(s.timing).toBe("cron '0 2 * * *' in Europe/Paris");
    expect(s.options).toEqual({
      catchUp: "latest",
      maxCatchUpTicks: 100,
      missedAfterInMs: 60_000,
      leaseDurationInSeconds: 30,
      takeoverCheckIntervalInMs: 10_000,
      requestTimeoutInMs: 5_000,
      gracePeriodInMs: 30_000,
      holderName: undefined,
      createIfMissing: true,
      keepAlive: true,
      abortSignal: undefined,
    });
  });

  it("refuses unknown option names, options that do not apply, and impossible values, naming them", () => {
    const make = (options: Record<string, unknown>) => () =>
      schedule(container, "n", { everyInMs: 1000 }, job, options);
    expect(make({ catchup: "all" })).toThrow(/Unknown schedule option `catchup`: the options are `catchUp`/);
    expect(make({ catchUp: "some" })).toThrow(/`catchUp` must be "latest", "all" or "none"/);
    expect(make({ maxCatchUpTicks: 5 })).toThrow(/`maxCatchUpTicks` applies only with `catchUp: "all"`/);
    expect(make({ catchUp: "all", maxCatchUpTicks: 0 })).toThrow(RangeError);
    expect(make({ missedAfterInMs: 5 })).toThrow(/`missedAfterInMs` applies only with `catchUp: "none"`/);
    expect(make({ leaseDurationInSeconds: 10 })).toThrow(/`leaseDurationInSeconds` must be between 15 and 60/);
    expect(make({ leaseDurationInSeconds: 15, requestTimeoutInMs: 8_000 })).toThrow(/less than half the lease/);
    expect(make({ keepAlive: "yes" })).toThrow(/`keepAlive` must be a boolean/);
    expect(make({ holderName: "" })).toThrow(/`holderName`/);
    expect(make({ abortSignal: {} })).toThrow(/`abortSignal` must be an AbortSignal/);
    expect(() => schedule(container, "a/b", { everyInMs: 1000 }, job)).toThrow(/`name` must be 1 to 200 letters/);
    expect(() => schedule(container, "n", { everyInMs: 1000 }, "job" as never)).toThrow(/`job` must be a function/);
    expect(() => schedule({} as never, "n", { everyInMs: 1000 }, job)).toThrow(
      /`containerClient` must be a ContainerClient/,
    );
  });

  it("stop() before start() ends it at once; start() after stop() is refused", async () => {
    const s = schedule(container, "n", { everyInMs: 1000 }, job);
    await expect(s.stop({ gracePeriodInMs: 10, timeoutInMs: 5 })).rejects.toThrow(
      /`timeoutInMs` \(5\) must not be shorter/,
    );
    expect(await s.stop()).toEqual({ timedOut: false, stillRunning: undefined });
    expect(s.state).toBe("stopped");
    await expect(s.closed).resolves.toBeUndefined();
    await expect(s.start()).rejects.toThrow(/a schedule starts once/);
  });
});
