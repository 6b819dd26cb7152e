/**
 * Takes the same lock repeatedly and does an unprotected read-modify-write of a counter blob
 * inside each critical section; prints each section's interval and fencing token as a JSON line.
 * Args: <container> <lock blob> <counter blob> <iterations> <hold ms>
 */
import { setTimeout as sleep } from "node:timers/promises";
import { BlobServiceClient } from "@azure/storage-blob";
import { blobLock } from "../../../../src/lease/index.js";

const [containerName, lockName, counterName, iterations, holdMs] = process.argv.slice(2);
const container = BlobServiceClient.fromConnectionString(process.env.ASC_TEST_CONNECTION_STRING!).getContainerClient(
  containerName!,
);
const lock = blobLock(container, lockName!, {
  durationInSeconds: 15,
  pollIntervalInMs: 20,
  holderName: `worker-${process.pid}`,
});
const counter = container.getBlockBlobClient(counterName!);
const now = () => performance.timeOrigin + performance.now();

for (let i = 0; i < Number(iterations); i++) {
  await lock.withLock(
    async (handle) => {
      const start = now();
      const value = Number((await counter.downloadToBuffer()).toString("utf8"));
      await sleep(Number(holdMs));
      await counter.upload(String(value + 1), String(value + 1).length); // no condition: only the lock protects it
      const end = now();
      console.log(JSON.stringify({ start, end, token: handle.fencingToken, pid: process.pid }));
    },
    { timeoutInMs: 60_000 },
  );
}
console.log(JSON.stringify({ done: true }));
