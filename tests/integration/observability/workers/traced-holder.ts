/**
 * Takes a lock with OpenTelemetry recording, holds it for a while, releases it, and reports the
 * spans and metrics it recorded as one JSON line, so that the parent can see both sides of a handoff.
 * Args: <container> <lock blob> <hold in ms>
 */
import { BlobServiceClient } from "@azure/storage-blob";
import { blobLock } from "../../../../src/lease/index.js";
import { startTracing } from "../../../../examples/support/tracing.js";

const tracing = startTracing();
const [containerName, lockName, holdInMs] = process.argv.slice(2);
const container = BlobServiceClient.fromConnectionString(process.env.ASC_TEST_CONNECTION_STRING!).getContainerClient(
  containerName!,
);
const handle = await blobLock(container, lockName!, { durationInSeconds: 15, holderName: "first" }).acquire({
  timeoutInMs: 30_000,
});
console.log(JSON.stringify({ acquired: true, token: handle.fencingToken }));
await new Promise((resolve) => setTimeout(resolve, Number(holdInMs)));
await handle.release();
console.log(JSON.stringify({ released: true, spans: tracing.spans(), metrics: await tracing.metrics() }));
await tracing.stop();
