/**
 * A counting semaphore over blob leases: at most 2 "exports" run at once, whoever starts them.
 *
 * Five workers (five SDK clients, as five processes would have) each want a permit of one semaphore
 * of 2. Each permit is a lease on one slot blob (`exports/slot-0`, `exports/slot-1`), renewed in the
 * background, with a fencing token per slot that only goes up.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { BlobServiceClient } from "@azure/storage-blob";
import { blobSemaphore, isSemaphoreTimeoutError } from "azure-storage-concurrency/semaphore";
import { runIfMain, type ExampleContext } from "./support/run-example.js";

export const title = "Semaphore: at most N holders at once, over blob leases";

export async function main({ connectionString, log }: ExampleContext): Promise<void> {
  const containerName = `semaphore-demo-${Date.now()}`;
  const worker = (n: number) =>
    blobSemaphore(
      BlobServiceClient.fromConnectionString(connectionString).getContainerClient(containerName),
      "exports",
      {
        maxCount: 2,
        durationInSeconds: 15,
        holderName: `worker ${n}`,
        pollIntervalInMs: 100, // the default (500 ms) is fine in production; shorter here so that the demo is quick
      },
    );

  // Five workers, two permits: never more than two run the export at once.
  let running = 0;
  let most = 0;
  const results = await Promise.all(
    [1, 2, 3, 4, 5].map((n) =>
      worker(n).withPermit(
        async (permit) => {
          running += 1;
          most = Math.max(most, running);
          log(`worker ${n} exports on slot ${permit.slot} (fencing token ${permit.fencingToken})`);
          await sleep(300, undefined, { signal: permit.abortSignal }); // the work, cancelled if the permit is lost
          running -= 1;
          return permit.slot;
        },
        { timeoutInMs: 30_000 },
      ),
    ),
  );
  log(`5 exports ran on slots ${results.join(", ")}; at most ${most} at once`);

  // What the semaphore looks like now, and what a caller that will not wait is told.
  const a = worker(6);
  const [first, second] = [await a.acquire(), await a.acquire()];
  const info = await a.inspect();
  log(
    `${info.held} of ${info.maxCount} held (${info.slots.map((s) => `slot ${s.slot}: ${s.holder?.name}`).join(", ")})`,
  );
  log(`tryAcquire while both are held: ${(await worker(7).tryAcquire()) ? "got one?!" : "none free"}`);
  const late = await worker(8)
    .acquire({ timeoutInMs: 500 })
    .catch((error: unknown) => error);
  if (isSemaphoreTimeoutError(late)) log(`acquire({ timeoutInMs: 500 }): ${late.message}`);

  // `await using`: released at the end of the block, even when it throws.
  await first.release();
  {
    await using permit = await worker(9).acquire({ timeoutInMs: 5_000 });
    log(`worker 9 took slot ${permit.slot} as worker 6 released it (token ${permit.fencingToken}, one more)`);
  }
  await second.release();
  log(`all released: ${(await a.inspect()).held} held`);
  await BlobServiceClient.fromConnectionString(connectionString).getContainerClient(containerName).delete();
}

runIfMain(import.meta.url, { title, main });
