/**
 * An exclusive lock on a blob: renewed in the background while held, handed over the moment it is
 * released, and a signal that says so when it is lost. Each acquisition gets a fencing token.
 *
 * Two "workers" (two SDK clients, as two processes would have) share one lock blob.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { BlobServiceClient } from "@azure/storage-blob";
import { blobLock, isLeaseLostError } from "azure-storage-concurrency/lease";
import { runIfMain, type ExampleContext } from "./support/run-example.js";

export const title = "Lease locks: an exclusive, auto-renewing blob lock with fencing tokens";

export async function main({ connectionString, log }: ExampleContext): Promise<void> {
  const containerName = `locks-demo-${Date.now()}`;
  const workerA = BlobServiceClient.fromConnectionString(connectionString).getContainerClient(containerName);
  const workerB = BlobServiceClient.fromConnectionString(connectionString).getContainerClient(containerName);
  // 15 s leases, renewed every second here (every 5 s by default) so that renewals happen in the demo.
  const options = { durationInSeconds: 15, renewIntervalInMs: 1_000 };
  const lockA = blobLock(workerA, "nightly-report", { ...options, holderName: "worker A" });
  const lockB = blobLock(workerB, "nightly-report", { ...options, holderName: "worker B" });

  // The lock blob and its container are created on first use.
  const a = await lockA.acquire({ timeoutInMs: 10_000 });
  log(`worker A holds the lock (fencing token ${a.fencingToken}, lease ${a.leaseId.slice(0, 8)}…)`);
  log(`worker B tries without waiting: ${(await lockB.tryAcquire()) ? "got it?!" : "held by someone else"}`);

  const waiting = lockB.acquire({ timeoutInMs: 10_000 });
  await sleep(2_500); // A works; its lease is renewed twice meanwhile
  const info = await lockB.inspect();
  log(
    `after 2.5 s: ${info.state}, held by ${info.holder?.name}, ${Math.round(a.timeLeftInMs() / 1000)} s left on A's guard (renewed: it would be 11 s otherwise)`,
  );
  const released = performance.now();
  await a.release();
  const b = await waiting;
  log(
    `worker B took over ${Math.round(performance.now() - released)} ms after A released (fencing token ${b.fencingToken})`,
  );

  // Writes to the leased blob itself need the lease id; keep the lock's record in its metadata.
  const report = workerB.getBlockBlobClient("nightly-report");
  await report.upload("report v1", 9, { metadata: { ...b.lockMetadata }, conditions: { leaseId: b.leaseId } });
  log("worker B wrote the leased blob with its lease id");

  // Someone breaks the lease (an operator, say): B's signal aborts at its next renewal.
  b.abortSignal.addEventListener("abort", () => {
    const reason: unknown = b.abortSignal.reason;
    log(`worker B's signal aborted: ${isLeaseLostError(reason) ? `lease lost (${reason.reason})` : String(reason)}`);
  });
  await lockA.break();
  // (The lock's timers never keep a process alive on their own: here a plain timeout stands in for
  // the work that would normally be running, and ends early when the signal aborts.)
  await sleep(10_000, undefined, { signal: b.abortSignal }).catch(() => undefined);
  await b.release(); // nothing left to release; resolves

  // The scoped form: always released, even if the callback throws.
  const token = await lockA.withLock(async (handle) => handle.fencingToken);
  log(`withLock ran with fencing token ${token} and released the lock`);
  await workerA.delete();
}

runIfMain(import.meta.url, { title, main });
