/**
 * Riding out a busy service with retry(), and not retrying what cannot succeed.
 *
 * The SDK client is told to make one attempt per call (SDK_SINGLE_ATTEMPT), so retry() is the one
 * place that retries. On the embedded Azurite, a fault proxy answers the first two requests with
 * 503 ServerBusy; on a real account there is nothing to inject and the call simply succeeds.
 */
import { BlobServiceClient } from "@azure/storage-blob";
import { backoffPresets, classifyError, retry, SDK_SINGLE_ATTEMPT } from "azure-storage-concurrency/retry";
import { buildConnectionString, createFaultProxy } from "azure-storage-concurrency/testing";
import { runIfMain, type ExampleContext } from "./support/run-example.js";

export const title = "Retries: transient failures ridden out, others not retried";

export async function main({ connectionString, azurite, log }: ExampleContext): Promise<void> {
  const proxy = azurite ? await createFaultProxy({ target: azurite.blobEndpoint }) : undefined;
  try {
    const target = proxy ? buildConnectionString({ blobEndpoint: proxy.endpoint }) : connectionString;
    const blobs = BlobServiceClient.fromConnectionString(target, { retryOptions: SDK_SINGLE_ATTEMPT.storage });
    const container = blobs.getContainerClient(`retry-demo-${Date.now()}`);
    proxy?.addRule({ times: 2, action: { type: "serverBusy" } });

    await retry(({ abortSignal }) => container.create({ abortSignal }), {
      backoff: backoffPresets.interactive,
      maxRetries: 4,
      operationName: `create container '${container.containerName}'`,
      onRetry: ({ attempt, classification, delayInMs }) =>
        log(
          `attempt ${attempt} failed: ${classification.statusCode} ${classification.serviceCode} (${classification.kind}); waiting ${Math.round(delayInMs)} ms`,
        ),
    });
    log(`container '${container.containerName}' created${proxy ? " after the service stopped being busy" : ""}`);

    // A 409 ContainerAlreadyExists will not change by waiting: retry() gives up at once.
    const error = await retry(() => container.create(), { maxRetries: 4 }).catch((e: unknown) => e);
    log(
      `creating it again: ${classifyError(error).statusCode} ${classifyError(error).serviceCode}, not retried (${(error as { attempts: number }).attempts} attempt)`,
    );
    await container.delete();
  } finally {
    await proxy?.close();
  }
}

runIfMain(import.meta.url, { title, main });
