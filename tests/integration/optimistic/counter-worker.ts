/**
 * A worker process for the lost-response tests: runs `writers` writers, each with its own SDK
 * client, doing `increments` increments of one JSON counter blob, and prints one JSON line with what
 * it saw. `mode: "library"` uses optimisticUpdate; `mode: "naive"` is the hand-written loop on raw SDK
 * calls (read, +1, write with If-Match, on 412 read again) that the library replaces.
 */
import { pathToFileURL } from "node:url";
import { BlobServiceClient, type BlockBlobClient } from "@azure/storage-blob";
import { blobJsonCell, isOptimisticOutcomeUnknownError, optimisticUpdate } from "../../../src/optimistic/index.js";
import { fullJitterBackoff, SDK_SINGLE_ATTEMPT } from "../../../src/retry/index.js";
import { statusOf } from "../../../src/error-codes.js";
import { quickSdkRetries } from "../../support/storage.js";

export interface CounterWorkerConfig {
  readonly connectionString: string;
  readonly container: string;
  readonly blob: string;
  readonly writers: number;
  readonly increments: number;
  readonly sdkRetries: "quick" | "off";
  readonly mode: "library" | "naive";
}

export interface CounterWorkerReport {
  readonly successes: number;
  readonly failures: number;
  readonly unknown: number;
  readonly recovered: number;
  readonly errors: readonly string[];
}

async function naiveIncrement(blob: BlockBlobClient): Promise<void> {
  for (;;) {
    const download = await blob.download();
    const chunks: Buffer[] = [];
    for await (const chunk of download.readableStreamBody!) chunks.push(chunk as Buffer);
    const next = String(Number(Buffer.concat(chunks).toString("utf8")) + 1);
    try {
      await blob.upload(next, next.length, { conditions: { ifMatch: download.etag! } });
      return;
    } catch (error) {
      if (statusOf(error) !== 412) throw error;
    }
  }
}

export async function runCounterWriters(config: CounterWorkerConfig): Promise<CounterWorkerReport> {
  let successes = 0;
  let failures = 0;
  let unknown = 0;
  let recovered = 0;
  const errors: string[] = [];
  const retryOptions = config.sdkRetries === "quick" ? quickSdkRetries.storage : SDK_SINGLE_ATTEMPT.storage;
  await Promise.all(
    Array.from({ length: config.writers }, async () => {
      const blob = BlobServiceClient.fromConnectionString(config.connectionString, { retryOptions })
        .getContainerClient(config.container)
        .getBlockBlobClient(config.blob);
      const cell = blobJsonCell<number>(blob);
      for (let i = 0; i < config.increments; i++) {
        try {
          if (config.mode === "naive") await naiveIncrement(blob);
          else {
            const result = await optimisticUpdate(cell, (n) => (n ?? 0) + 1, {
              coalesce: false,
              maxAttempts: 1000,
              backoff: fullJitterBackoff({ baseInMs: 5, maxInMs: 100 }),
            });
            if (result.recoveredLostResponse) recovered++;
          }
          successes++;
        } catch (error) {
          if (isOptimisticOutcomeUnknownError(error)) unknown++;
          else failures++;
          errors.push(
            `${(error as { code?: string }).code ?? (error as Error).name}: ${(error as Error).message.split("\n")[0]}`,
          );
        }
      }
    }),
  );
  return { successes, failures, unknown, recovered, errors };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const config = JSON.parse(process.argv[2]!) as CounterWorkerConfig;
  runCounterWriters(config).then(
    (report) => console.log(JSON.stringify(report)),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
