/**
 * Takes a lock with a 15 s lease, reports it, and then just keeps it (renewing) until killed.
 * Args: <container> <lock blob>
 */
import { BlobServiceClient } from "@azure/storage-blob";
import { blobLock } from "../../../../src/lease/index.js";

const [containerName, lockName] = process.argv.slice(2);
const container = BlobServiceClient.fromConnectionString(process.env.ASC_TEST_CONNECTION_STRING!).getContainerClient(
  containerName!,
);
const handle = await blobLock(container, lockName!, { durationInSeconds: 15, holderName: "doomed" }).acquire({
  timeoutInMs: 30_000,
});
console.log(JSON.stringify({ acquired: true, token: handle.fencingToken, pid: process.pid }));
setInterval(() => undefined, 1_000); // stay alive until killed
