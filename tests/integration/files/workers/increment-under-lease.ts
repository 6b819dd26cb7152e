/**
 * Worker for files/processes.test.ts: increments a JSON counter file `count` times, each time under
 * the file's lock (fileLock: waiting while another process holds it; read-modify-write with the
 * lock's handle; release). Prints one JSON line at the end: { "done": <increments>, "tokens": [...] }
 * with the fencing token of each of its acquisitions.
 * Usage: increment-under-lease.ts <share> <file> <count>   (FILES_CONNECTION_STRING in the environment)
 */
import { ShareServiceClient } from "@azure/storage-file-share";
import { fileCodecs, updateFileUnderLease } from "../../../../src/files/index.js";
import { fileLock } from "../../../../src/lease/index.js";

const [shareName, fileName, countText] = process.argv.slice(2);
const file = ShareServiceClient.fromConnectionString(process.env.FILES_CONNECTION_STRING!, {
  retryOptions: { maxTries: 4, retryDelayInMs: 10, maxRetryDelayInMs: 50 },
})
  .getShareClient(shareName!)
  .rootDirectoryClient.getFileClient(fileName!);
const codec = fileCodecs.json<{ n: number }>();
const lock = fileLock(file, { holderName: `worker ${process.pid}`, pollIntervalInMs: 20 });

let done = 0;
const tokens: number[] = [];
for (let i = 0; i < Number(countText); i += 1) {
  await lock.withLock(async (handle) => {
    tokens.push(handle.fencingToken!);
    await updateFileUnderLease(file, handle, (counter) => ({ n: counter.n + 1 }), { codec });
    done += 1;
  });
}
console.log(JSON.stringify({ done, tokens }));
