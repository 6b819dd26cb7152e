/**
 * Leader election: one leader at a time, everyone learns who leads, stopping hands over without
 * waiting for the lease to expire, and impossible timings are refused.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { blobLeasable, blobLock, startLeaderElection, type LeaderElection } from "../../../src/lease/index.js";
import { blobService, uniqueName } from "../../support/storage.js";

function until(predicate: () => boolean, timeoutInMs: number): Promise<void> {
  const deadline = Date.now() + timeoutInMs;
  return (async () => {
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error("condition not met in time");
      await sleep(20);
    }
  })();
}

describe("leader election", () => {
  it("elects one leader, tells everyone, and hands over on stop well before the lease would expire", async () => {
    const containerName = uniqueName("el");
    const leading = new Set<string>();
    let maxLeaders = 0;
    const seen = new Map<string, string[]>();
    const stopped: string[] = [];
    const candidates = new Map<string, LeaderElection>();
    for (const identity of ["a", "b", "c"]) {
      seen.set(identity, []);
      const leasable = blobLeasable(blobService().getContainerClient(containerName), "leader");
      candidates.set(
        identity,
        startLeaderElection(leasable, {
          identity,
          leaseDurationInSeconds: 15,
          renewDeadlineInMs: 10_000,
          retryPeriodInMs: 100,
          onStartedLeading: async (signal) => {
            leading.add(identity);
            maxLeaders = Math.max(maxLeaders, leading.size);
            if (!signal.aborted)
              await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
            leading.delete(identity);
          },
          onStoppedLeading: () => void stopped.push(identity),
          onNewLeader: (leader) => void seen.get(identity)!.push(leader),
        }),
      );
    }
    try {
      await until(() => leading.size === 1 && [...seen.values()].every((s) => s.length > 0), 10_000);
      const first = [...leading][0]!;
      for (const [identity, election] of candidates) {
        expect(election.leader).toBe(first);
        expect(election.isLeader).toBe(identity === first);
      }
      await candidates.get(first)!.stop();
      expect(stopped).toEqual([first]);
      expect(candidates.get(first)!.isLeader).toBe(false);
      // The lease lasts 15 s; a successor within 10 s shows the old leader released it.
      await until(() => leading.size === 1, 10_000);
      const second = [...leading][0]!;
      expect(second).not.toBe(first);
      const others = [...candidates.keys()].filter((identity) => identity !== first);
      await until(() => others.every((identity) => seen.get(identity)!.at(-1) === second), 5_000);
      expect(maxLeaders).toBe(1);
      const info = await blobLock(blobService().getContainerClient(containerName), "leader").inspect();
      expect(info.holder?.name).toBe(second);
    } finally {
      await Promise.all([...candidates.values()].map((e) => e.stop()));
    }
    expect(leading.size).toBe(0);
    expect((await blobLock(blobService().getContainerClient(containerName), "leader").inspect()).state).toBe(
      "available",
    );
  });

  it("a leader whose work throws steps down, so another candidate leads without waiting for the lease", async () => {
    const containerName = uniqueName("el");
    const started: string[] = [];
    const stopped: string[] = [];
    const candidate = (identity: string) =>
      startLeaderElection(blobLeasable(blobService().getContainerClient(containerName), "leader"), {
        identity,
        leaseDurationInSeconds: 15,
        renewDeadlineInMs: 10_000,
        retryPeriodInMs: 100,
        onStartedLeading: async (signal) => {
          started.push(identity);
          if (identity === "broken") throw new Error("cannot reach the database");
          await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
        },
        onStoppedLeading: () => void stopped.push(identity),
      });
    // "broken" leads first, alone; its work fails at once.
    const broken = candidate("broken");
    let healthy: LeaderElection | undefined;
    try {
      await until(() => stopped.includes("broken"), 10_000);
      expect(started[0]).toBe("broken");
      // It gave the lease back: "healthy" leads well within the 15 s the lease would otherwise last.
      healthy = candidate("healthy");
      await until(() => healthy!.isLeader, 10_000);
      expect(broken.isLeader).toBe(false);
      expect(stopped).not.toContain("healthy");
    } finally {
      await Promise.all([broken.stop(), healthy?.stop()]);
    }
  });

  it("refuses timings that break lease > renew deadline > 1.2 x retry period, before any request", () => {
    const leasable = blobLeasable(blobService().getContainerClient(uniqueName("el")), "leader");
    expect(() =>
      startLeaderElection(leasable, { identity: "x", leaseDurationInSeconds: 15, renewDeadlineInMs: 15_000 }),
    ).toThrow(/shorter than the lease duration/);
    expect(() =>
      startLeaderElection(leasable, { identity: "x", renewDeadlineInMs: 2_000, retryPeriodInMs: 2_000 }),
    ).toThrow(/1.2 x `retryPeriodInMs`/);
    expect(() => startLeaderElection(leasable, { identity: "", retryPeriodInMs: 100 })).toThrow(TypeError);
    expect(() => startLeaderElection(leasable, { identity: "x", leaseDurationInSeconds: 10 })).toThrow(RangeError);
  });
});
