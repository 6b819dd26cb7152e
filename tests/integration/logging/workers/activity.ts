/**
 * What the logging tests have the library do: take a lock, let it renew, release it, and run a
 * retry() through a fault proxy that answers the first request with 503 ServerBusy. The retry's
 * operation name carries a SAS signature, which must never reach a log line.
 */
import { BlobServiceClient } from "@azure/storage-blob";
import { blobLock } from "../../../../src/lease/index.js";
import { fixedBackoff, retry, SDK_SINGLE_ATTEMPT } from "../../../../src/retry/index.js";
import { buildConnectionString, createFaultProxy } from "../../../../src/testing/index.js";

export const SECRET_SIGNATURE = "s3cr3tSignature";

/**
 * @param whileHeld - runs while the lock is held (renewing every 100 ms); by default waits 300 ms.
 */
export async function runLoggedActivity(
  connectionString: string,
  blobEndpoint: string,
  containerName: string,
  whileHeld: () => Promise<void> = () => new Promise((resolve) => setTimeout(resolve, 300)),
): Promise<void> {
  const container = BlobServiceClient.fromConnectionString(connectionString).getContainerClient(containerName);
  const handle = await blobLock(container, "logged", { durationInSeconds: 15, renewIntervalInMs: 100 }).acquire();
  try {
    await whileHeld();
  } finally {
    await handle.release();
  }

  await using proxy = await createFaultProxy({
    target: blobEndpoint,
    rules: [{ times: 1, action: { type: "serverBusy" } }],
  });
  const flaky = BlobServiceClient.fromConnectionString(buildConnectionString({ blobEndpoint: proxy.endpoint }), {
    retryOptions: SDK_SINGLE_ATTEMPT.storage,
  }).getContainerClient(containerName);
  await retry(({ abortSignal }) => flaky.getProperties({ abortSignal }), {
    backoff: fixedBackoff({ delayInMs: 10 }),
    maxRetries: 2,
    operationName: `read ${flaky.url}?sv=2024-05-04&sig=${SECRET_SIGNATURE}`,
  });
}
