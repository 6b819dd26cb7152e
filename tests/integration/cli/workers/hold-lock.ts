/**
 * A holder in a process of its own, for the command line tests that need one on storage the test
 * process cannot reach itself (Azurite over HTTPS with a self-signed certificate: this process
 * trusts it through NODE_EXTRA_CA_CERTS). Takes a blob lock and holds it until the lease is lost or
 * the process is killed.
 *
 * Arguments: <container> <blob> <holder name>; the connection string comes from
 * ASC_TEST_CONNECTION_STRING. Prints {"held":true,"token":n}, then {"lost":true} when the lease is lost.
 */
import { BlobServiceClient } from "@azure/storage-blob";
import { blobLock } from "../../../../src/lease/index.js";

const [containerName, blobName, holderName] = process.argv.slice(2);
const container = BlobServiceClient.fromConnectionString(process.env.ASC_TEST_CONNECTION_STRING!).getContainerClient(
  containerName!,
);
const handle = await blobLock(container, blobName!, {
  durationInSeconds: 15,
  renewIntervalInMs: 300,
  holderName: holderName!,
}).acquire();
console.log(JSON.stringify({ held: true, token: handle.fencingToken }));
// The lock's renewal timer does not keep a process alive (it is unref'd): this one must stay.
const alive = setInterval(() => undefined, 1_000);
await new Promise((resolve) => handle.signal.addEventListener("abort", resolve, { once: true }));
clearInterval(alive);
console.log(JSON.stringify({ lost: true }));
