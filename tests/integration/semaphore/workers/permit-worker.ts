/**
 * Takes permits of one semaphore in a loop (C contenders) and, while holding one, prints a
 * heartbeat every 20 ms: `{"h":[slot, token, at]}`, where `at` (epoch ms) is read *before* the
 * permit's signal is checked and the line is printed only if it is not aborted: "at `at`, this
 * holder believed it held `slot`". A permit whose signal aborts with a LeaseLostError prints
 * `{"lost":reason,...}`. Runs until killed.
 * Args: <container> <name> <max count> <contenders>
 */
import { setTimeout as sleep } from "node:timers/promises";
import { BlobServiceClient } from "@azure/storage-blob";
import { blobSemaphore, isLeaseLostError } from "../../../../src/index.js";

const [containerName, name, maxCount, contenders] = process.argv.slice(2);
const container = BlobServiceClient.fromConnectionString(process.env.ASC_TEST_CONNECTION_STRING!, {
  retryOptions: { maxTries: 3, retryDelayInMs: 20, maxRetryDelayInMs: 100 },
}).getContainerClient(containerName!);

async function contender(index: number): Promise<never> {
  // The guard 3 s after the last renewal sent, a renewal every second: a holder paused for longer
  // than 3 s finds its signal aborted when it wakes.
  const semaphore = blobSemaphore(container, name!, {
    maxCount: Number(maxCount),
    durationInSeconds: 15,
    renewIntervalInMs: 1_000,
    safetyMarginInMs: 12_000,
    requestTimeoutInMs: 2_000,
    pollIntervalInMs: 100,
    holderName: `${process.pid}-${index}`,
  });
  for (;;) {
    const permit = await semaphore.acquire();
    const until = Date.now() + 150 + Math.random() * 250;
    for (;;) {
      const at = Date.now();
      if (permit.abortSignal.aborted) break;
      console.log(JSON.stringify({ h: [permit.slot, permit.fencingToken, at] }));
      if (at >= until) break;
      await sleep(20);
    }
    const reason: unknown = permit.abortSignal.reason;
    if (isLeaseLostError(reason)) {
      console.log(
        JSON.stringify({ lost: reason.reason, slot: permit.slot, token: permit.fencingToken, at: Date.now() }),
      );
    }
    await permit.release().catch(() => undefined);
    await sleep(Math.random() * 50);
  }
}

console.log(JSON.stringify({ ready: true, pid: process.pid }));
await Promise.all(Array.from({ length: Number(contenders) }, (_, i) => contender(i)));
