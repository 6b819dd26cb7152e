/**
 * Worker for files/processes.test.ts: increments a JSON counter file `count` times, each time under
 * the file's lease (acquire, waiting while another process holds it; read-modify-write; release).
 * Prints one JSON line at the end: { "done": <increments> }.
 * Usage: increment-under-lease.ts <share> <file> <count>   (FILES_CONNECTION_STRING in the environment)
 */
import { ShareServiceClient } from "@azure/storage-file-share";
import { fileCodecs, updateFileUnderLease } from "../../../../src/index.js";

const [shareName, fileName, countText] = process.argv.slice(2);
const file = ShareServiceClient.fromConnectionString(process.env.FILES_CONNECTION_STRING!, {
  retryOptions: { maxTries: 4, retryDelayInMs: 10, maxRetryDelayInMs: 50 },
})
  .getShareClient(shareName!)
  .rootDirectoryClient.getFileClient(fileName!);
const codec = fileCodecs.json<{ n: number }>();

let done = 0;
for (let i = 0; i < Number(countText); i += 1) {
  const lease = file.getShareLeaseClient();
  for (;;) {
    const acquired = await lease.acquireLease(-1).then(
      () => true,
      (error: { statusCode?: number }) => {
        if (error.statusCode !== 409) throw error;
        return false;
      },
    );
    if (acquired) break;
    await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20));
  }
  try {
    await updateFileUnderLease(file, lease.leaseId, (counter) => ({ n: counter.n + 1 }), { codec });
    done += 1;
  } finally {
    await lease.releaseLease();
  }
}
console.log(JSON.stringify({ done }));
