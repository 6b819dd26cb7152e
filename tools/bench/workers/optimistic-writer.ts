/**
 * A writer process of the `optimistic` benchmark (the contended figures come from several
 * processes, as in production).
 *
 * Requests are counted exactly in code: clients make one attempt per SDK call
 * (`SDK_SINGLE_ATTEMPT`), and the blob client handed to the writer counts its `download` and
 * `upload` calls, so calls = HTTP requests for raw and library writers alike.
 *
 * Started by the scenario (../workers.ts) with one argument, its configuration as JSON
 * (`WorkerConfig`), and the connection string in its environment. It prints `{"ready":true}`, waits until the file named by `goFile` exists, runs,
 * and prints one JSON line with its tally (`WorkerReport`).
 */
import { existsSync } from "node:fs";
import { BlobServiceClient, type BlockBlobClient } from "@azure/storage-blob";
import { seededRandom } from "azure-storage-concurrency/testing";
import { statusOf } from "azure-storage-concurrency/errors";
import { blobJsonCell, optimisticUpdate, type OptimisticUpdateOptions } from "azure-storage-concurrency/optimistic";
import { SDK_SINGLE_ATTEMPT, type BackoffStrategy } from "azure-storage-concurrency/retry";
import {
  BACKOFFS,
  INTERLEAVED_WAYS,
  type InterleavedReport,
  type Tally,
  type WorkerConfig,
  type WorkerReport,
} from "../scenarios/optimistic-protocol.js";
import { workerConnectionString } from "../workers.js";

const newTally = (): Tally => ({
  successes: 0,
  requests: 0,
  conflicts: 0,
  maxAttempts: 0,
  overTenAttempts: 0,
  cancelled: 0,
});

/**
 * How long after the end of a timed race an update still running is given before it is cancelled:
 * a writer starved by the others could otherwise stretch the race by many backoffs.
 */
const FINISH_GRACE_IN_MS = 1_000;

function countAttempts(tally: Tally, attempts: number): void {
  tally.maxAttempts = Math.max(tally.maxAttempts, attempts);
  if (attempts > 10) tally.overTenAttempts++;
}

/** A blob client whose `download` and `upload` calls are counted (one call = one request, SDK retries off). */
function countingBlob(connectionString: string, container: string, blob: string, tally: Tally): BlockBlobClient {
  const client = BlobServiceClient.fromConnectionString(connectionString, { retryOptions: SDK_SINGLE_ATTEMPT.storage })
    .getContainerClient(container)
    .getBlockBlobClient(blob);
  return new Proxy(client, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if ((property === "download" || property === "upload") && typeof value === "function") {
        return (...args: unknown[]) => {
          tally.requests++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** The raw SDK way: read, +1, write with If-Match; on 412 wait as `backoff` says (none: naive) and read again. */
async function rawIncrement(
  blob: BlockBlobClient,
  tally: Tally,
  backoff?: BackoffStrategy,
  metadata?: Record<string, string>,
): Promise<void> {
  let previous = 0;
  for (let attempt = 1; ; attempt++) {
    const response = await blob.download();
    const chunks: Buffer[] = [];
    for await (const chunk of response.readableStreamBody!) chunks.push(chunk as Buffer);
    const body = String(Number(Buffer.concat(chunks).toString("utf8")) + 1);
    try {
      await blob.upload(body, body.length, {
        conditions: { ifMatch: response.etag! },
        ...(metadata ? { metadata } : {}),
      });
      tally.successes++;
      countAttempts(tally, attempt);
      return;
    } catch (error) {
      if (statusOf(error) !== 412) throw error;
      tally.conflicts++;
      if (backoff) {
        previous = backoff.delayInMs(attempt, previous);
        await new Promise((resolve) => setTimeout(resolve, previous));
      }
    }
  }
}

/** The library way. */
async function libraryIncrement(
  blob: BlockBlobClient,
  tally: Tally,
  options: OptimisticUpdateOptions,
  cell = blobJsonCell<number>(blob),
): Promise<void> {
  const { attempts } = await optimisticUpdate(cell, (n) => (n ?? 0) + 1, {
    maxAttempts: 10_000,
    ...options,
    onConflict: () => void tally.conflicts++,
  });
  tally.successes++;
  countAttempts(tally, attempts);
}

/** A write history of the size the library stores for a cell with one writer. */
const HISTORY_LIKE = { asc_optimistic: "1;Kx9_aB3c;57;r;0;AbCdEf0.Gh1jKl2m.57" };

/**
 * One writer per way on a blob of its own, interleaved update by update in random order, so that
 * machine noise hits every way alike: the raw SDK loop; the raw loop also sending a metadata header
 * the size of the library's write history; the library with write-skipping off (the same two calls
 * as raw); the library with it on.
 */
async function interleaved(
  connectionString: string,
  container: string,
  blob: string,
  updates: number,
): Promise<InterleavedReport> {
  const tallies = INTERLEAVED_WAYS.map(() => newTally());
  const blobs = INTERLEAVED_WAYS.map((way, i) =>
    countingBlob(connectionString, container, `${blob}-${way}`, tallies[i]!),
  );
  for (const b of blobs) await b.upload("0", 1);
  const cells = blobs.map((b) => blobJsonCell<number>(b));
  const run = [
    () => rawIncrement(blobs[0]!, tallies[0]!),
    () => rawIncrement(blobs[1]!, tallies[1]!, undefined, HISTORY_LIKE),
    () => libraryIncrement(blobs[2]!, tallies[2]!, { skipReadAfterOwnWrite: false }, cells[2]),
    () => libraryIncrement(blobs[3]!, tallies[3]!, { skipReadAfterOwnWrite: true }, cells[3]),
  ];
  const times = INTERLEAVED_WAYS.map(() => [] as number[]);
  const order = INTERLEAVED_WAYS.map((_, i) => i);
  const random = seededRandom(7);
  for (let i = 0; i < updates; i++) {
    // A fresh random order each time, so that no way always follows the same other way.
    for (let k = order.length - 1; k > 0; k--) {
      const j = Math.floor(random() * (k + 1));
      [order[k], order[j]] = [order[j]!, order[k]!];
    }
    for (const way of order) {
      const started = performance.now();
      await run[way]!();
      times[way]!.push(performance.now() - started);
    }
  }
  const report = {} as Record<string, InterleavedReport[keyof InterleavedReport]>;
  INTERLEAVED_WAYS.forEach((way, i) => {
    const sorted = [...times[i]!].sort((a, b) => a - b);
    report[way] = {
      seconds: times[i]!.reduce((a, b) => a + b, 0) / 1000,
      medianMs: sorted[sorted.length >> 1]!,
      requestsPerUpdate: (tallies[i]!.requests - 1) / updates,
    };
  });
  return report as InterleavedReport;
}

async function runWorker(config: WorkerConfig): Promise<WorkerReport> {
  const connectionString = workerConnectionString();
  // Warm up (module loading, connections, and the JIT, which compiles code well only after a few
  // hundred runs) on a blob of this process's own, before the start: the figures are steady state.
  const warmUp = newTally();
  const warmBlob = countingBlob(connectionString, config.container, `warm-${process.pid}-${config.blob}`, warmUp);
  await warmBlob.upload("0", 1);
  const warmCell = blobJsonCell<number>(warmBlob);
  for (let i = 0; i < 200; i++) {
    await rawIncrement(warmBlob, warmUp);
    await libraryIncrement(warmBlob, warmUp, { skipReadAfterOwnWrite: i % 2 === 0 }, warmCell);
  }
  await warmBlob.delete();

  const tally = newTally();
  const writers = config.mode === "coalesced" ? 1 : config.writers;
  const blobs = Array.from({ length: writers }, () =>
    countingBlob(connectionString, config.container, config.blob, tally),
  );
  console.log(JSON.stringify({ ready: true }));
  while (!existsSync(config.goFile)) await new Promise((resolve) => setTimeout(resolve, 1));
  const startedAt = Date.now();
  if (config.mode === "interleaved") {
    const report = await interleaved(connectionString, config.container, config.blob, config.updatesPerWriter);
    return { ...tally, startedAt, finishedAt: Date.now(), successesInWindow: 0, interleaved: report };
  }
  const deadline = config.durationInMs === undefined ? Infinity : startedAt + config.durationInMs;
  let successesInWindow = 0;
  const latenciesMs: number[] = [];
  const writerSuccesses = blobs.map(() => 0);
  const overtime = deadline === Infinity ? undefined : AbortSignal.timeout(deadline - Date.now() + FINISH_GRACE_IN_MS);
  await Promise.all(
    blobs.map(async (blob, w) => {
      const cell = blobJsonCell<number>(blob);
      for (let i = 0; deadline === Infinity ? i < config.updatesPerWriter : Date.now() < deadline; i++) {
        const before = tally.successes;
        const began = performance.now();
        if (config.mode === "raw") await rawIncrement(blob, tally);
        else if (config.mode === "library") {
          try {
            await libraryIncrement(
              blob,
              tally,
              {
                skipReadAfterOwnWrite: config.skipReadAfterOwnWrite,
                ...(config.backoff ? { backoff: BACKOFFS[config.backoff]! } : {}),
                ...(overtime ? { abortSignal: overtime } : {}),
              },
              cell,
            );
          } catch (error) {
            if (!overtime?.aborted) throw error;
            tally.cancelled++; // may or may not have been applied: the scenario's check allows for it
            break;
          }
        } else {
          await Promise.all(
            Array.from({ length: config.writers }, () =>
              libraryIncrement(blob, tally, { skipReadAfterOwnWrite: config.skipReadAfterOwnWrite }, cell),
            ),
          );
        }
        if (Date.now() <= deadline) {
          successesInWindow += tally.successes - before;
          writerSuccesses[w]! += tally.successes - before;
          if (config.mode !== "coalesced") latenciesMs.push(Math.round((performance.now() - began) * 100) / 100);
        }
      }
    }),
  );
  return { ...tally, startedAt, finishedAt: Date.now(), successesInWindow, latenciesMs, writerSuccesses };
}

runWorker(JSON.parse(process.argv[2]!) as WorkerConfig).then(
  (report) => console.log(JSON.stringify(report)),
  (error: unknown) => {
    // Not process.exit(): writes to a pipe are asynchronous, and the scenario shows this stderr.
    console.error(error);
    process.exitCode = 1;
  },
);
