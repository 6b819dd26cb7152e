/**
 * The lease lock's option checks and its metadata record: pure logic, with a leasable stub that
 * fails the test if any request is made.
 */
import {
  LeaseLock,
  LOCK_METADATA,
  readLockRecord,
  startLeaderElection,
  type Leasable,
} from "../../../src/lease/index.js";
import { buildLockMetadata } from "../../../src/lease/holder.js";
import { resolveLeaseLockOptions } from "../../../src/lease/options.js";

const noRequests = (): never => {
  throw new Error("no request may be made");
};
function stub(finiteDurations = true): Leasable {
  return {
    description: "stub",
    finiteDurations,
    acquire: noRequests,
    renew: noRequests,
    release: noRequests,
    change: noRequests,
    breakLease: noRequests,
    getProperties: noRequests,
  };
}

describe("lease lock options", () => {
  it("defaults: 30 s lease, renewed every 10 s, 3 s safety margin, 500 ms polling, 5 s request limit, creating when missing", () => {
    expect(resolveLeaseLockOptions(stub())).toEqual({
      durationInSeconds: 30,
      renewIntervalInMs: 10_000,
      safetyMarginInMs: 3_000,
      pollIntervalInMs: 500,
      requestTimeoutInMs: 5_000,
      unreachableTimeoutInMs: 30_000,
      holderName: undefined,
      createIfMissing: true,
    });
    expect(resolveLeaseLockOptions(stub(), { durationInSeconds: 15 })).toMatchObject({
      renewIntervalInMs: 5_000,
      safetyMarginInMs: 1_500,
    });
  });

  it("infinite leases: no guard, a 10 s check by default; infinite-only leasables accept nothing else", () => {
    expect(resolveLeaseLockOptions(stub(), { durationInSeconds: Infinity })).toMatchObject({
      durationInSeconds: Infinity,
      renewIntervalInMs: 10_000,
      safetyMarginInMs: 0,
    });
    expect(resolveLeaseLockOptions(stub(false))).toMatchObject({ durationInSeconds: Infinity });
    expect(() => new LeaseLock(stub(false), { durationInSeconds: 30 })).toThrow(/only has infinite leases/);
  });

  it.each([
    [{ durationInSeconds: 10 }, RangeError, /from 15 to 60/],
    [{ durationInSeconds: 90 }, RangeError, /from 15 to 60/],
    [{ durationInSeconds: "30" }, TypeError, /`durationInSeconds` must be a number/],
    [{ durationInSeconds: 15, renewIntervalInMs: 14_000 }, RangeError, /`renewIntervalInMs`/],
    [{ renewIntervalInMs: 50 }, RangeError, /`renewIntervalInMs`/],
    [{ durationInSeconds: 15, safetyMarginInMs: 15_000 }, RangeError, /`safetyMarginInMs`/],
    [{ pollIntervalInMs: 1 }, RangeError, /`pollIntervalInMs`/],
    [{ holderName: "" }, TypeError, /`holderName`/],
    [{ holderName: "a\uD800" }, TypeError, /`holderName` must be well-formed Unicode/],
    [{ holderName: "\uDC00b" }, TypeError, /lone surrogate/],
    [{ requestTimeoutInMs: 0 }, RangeError, /`requestTimeoutInMs`/],
    [{ unreachableTimeoutInMs: -1 }, RangeError, /`unreachableTimeoutInMs`/],
    [{ createIfMissing: "yes" }, TypeError, /`createIfMissing`/],
  ])("%p is refused", (options, type, message) => {
    expect(() => new LeaseLock(stub(), options as never)).toThrow(type);
    expect(() => new LeaseLock(stub(), options as never)).toThrow(message);
  });

  it("acquire options are checked before any request", async () => {
    const lock = new LeaseLock(stub());
    await expect(lock.acquire({ timeoutInMs: -1 })).rejects.toThrow(/`timeoutInMs`/);
    await expect(lock.acquire({ abortSignal: "no" as never })).rejects.toThrow(/`abortSignal`/);
    await expect(lock.break({ breakPeriodInSeconds: 61 })).rejects.toThrow(/`breakPeriodInSeconds`/);
    await expect(lock.withLock("no" as never)).rejects.toThrow(/`callback`/);
  });
});

describe("lock record in metadata", () => {
  it("round-trips the holder and token, keeps the user's metadata, encodes non-ASCII names", () => {
    const acquiredAt = new Date("2024-05-01T10:00:00.000Z");
    const { all, own } = buildLockMetadata(
      { mine: "kept", [LOCK_METADATA.name]: "old" },
      {
        fencingToken: 7,
        acquisitionId: "a1",
        name: "café ☕",
        acquiredAt,
        durationInSeconds: Infinity,
        renewIntervalInMs: 10_000,
      },
    );
    expect(all.mine).toBe("kept");
    expect(own.mine).toBeUndefined();
    expect(Object.values(all).every((v) => /^[\x20-\x7e]*$/.test(v))).toBe(true);
    const record = readLockRecord(all);
    expect(record.fencingToken).toBe(7);
    expect(record.acquisitionId).toBe("a1");
    expect(record.holder).toMatchObject({
      pid: process.pid,
      name: "café ☕",
      acquiredAt,
      durationInSeconds: Infinity,
      renewIntervalInMs: 10_000,
    });
    const unnamed = buildLockMetadata(all, {
      fencingToken: 8,
      acquisitionId: "a2",
      name: undefined,
      acquiredAt,
      durationInSeconds: 15,
      renewIntervalInMs: 5_000,
    });
    expect(readLockRecord(unnamed.all).holder?.name).toBeUndefined();
  });

  it("reads nothing recorded as token 0 and no holder; garbage as 0", () => {
    expect(readLockRecord({})).toEqual({ fencingToken: 0, acquisitionId: undefined, holder: undefined });
    expect(readLockRecord({ [LOCK_METADATA.fencingToken]: "x" }).fencingToken).toBe(0);
  });
});

describe("leader election options", () => {
  it.each([
    [{ renewDeadlineInMs: 14_999 }, /safety margin \(1500 ms\): at most 13500/],
    [{ renewDeadlineInMs: 13_501 }, /at most 13500/],
    [{ leaseDurationInSeconds: 60, renewDeadlineInMs: 54_001 }, /safety margin \(6000 ms\): at most 54000/],
    [{ renewDeadlineInMs: 2_000, retryPeriodInMs: 2_000 }, /1.2 x `retryPeriodInMs`/],
    [{ identity: "a\uD800" }, /`identity` must be well-formed Unicode/],
  ])("%p is refused before any request", (options, message) => {
    expect(() => startLeaderElection(stub(), { identity: "worker-1", ...options })).toThrow(message);
  });

  it("a renew deadline the lock's safety margin short of the lease is accepted", async () => {
    const election = startLeaderElection(stub(), { identity: "worker-1", renewDeadlineInMs: 13_500 });
    await election.stop();
  });
});
