/**
 * Leader election over a blob lease: three candidates campaign, one leads and does the work, all
 * learn who leads; when the leader stops, it releases the lease and another takes over at once
 * instead of after the lease expires.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { BlobServiceClient } from "@azure/storage-blob";
import { blobLeasable, startLeaderElection, type LeaderElection } from "azure-storage-concurrency/lease";
import { runIfMain, type ExampleContext } from "./support/run-example.js";

export const title = "Lease locks: leader election with handover on stop";

export async function main({ connectionString, log }: ExampleContext): Promise<void> {
  const containerName = `election-demo-${Date.now()}`;
  const elections = new Map<string, LeaderElection>();
  for (const identity of ["scheduler-1", "scheduler-2", "scheduler-3"]) {
    // Each candidate has its own client, as separate processes would.
    const container = BlobServiceClient.fromConnectionString(connectionString).getContainerClient(containerName);
    const election = startLeaderElection(blobLeasable(container, "scheduler-leader"), {
      identity,
      // Kubernetes' defaults are 15 s / 10 s / 2 s; a short retry period makes the demo quick.
      leaseDurationInSeconds: 15,
      renewDeadlineInMs: 10_000,
      retryPeriodInMs: 250,
      onStartedLeading: async (signal) => {
        log(`${identity}: I lead now; running the scheduled jobs`);
        let ticks = 0;
        while (!signal.aborted) {
          ticks += 1; // one round of the leader's work
          await sleep(200, undefined, { signal }).catch(() => undefined);
        }
        log(`${identity}: stopping after ${ticks} rounds`);
      },
      onStoppedLeading: () => log(`${identity}: no longer the leader`),
      onNewLeader: (leader) => {
        if (leader !== identity) log(`${identity}: the leader is ${leader}`);
      },
    });
    elections.set(identity, election);
  }

  const leader = async () => {
    for (let i = 0; i < 100; i++) {
      const found = [...elections].find(([, e]) => e.isLeader);
      if (found) return found;
      await sleep(50);
    }
    throw new Error("no leader was elected");
  };
  await sleep(1_000);
  const [first, firstElection] = await leader();
  log(`stopping ${first} (as on a deployment): it releases the lease`);
  const stoppedAt = performance.now();
  await firstElection.stop();
  elections.delete(first);
  const [second] = await leader();
  log(`${second} took over ${Math.round(performance.now() - stoppedAt)} ms later (not after the 15 s lease)`);
  await sleep(500);
  await Promise.all([...elections.values()].map((e) => e.stop()));
  await BlobServiceClient.fromConnectionString(connectionString).getContainerClient(containerName).delete();
}

runIfMain(import.meta.url, { title, main });
