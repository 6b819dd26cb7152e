/**
 * `retry`: backoff strategies compared on contended work. W writers race conditional writes on one
 * blob (read, +1, write with If-Match; a 412 means someone else won, so wait and try again). The
 * raw baseline is a hand-written loop on raw SDK calls that retries at once; each strategy runs the
 * same loop through the library's retry(). Reported per strategy: time to finish, HTTP requests per
 * successful increment, conflicts, goodput (increments per second).
 *
 * Flags: --writers 8 (or a list: 2,8,16), --increments 20 (per writer).
 */
import { BlobServiceClient, type BlockBlobClient } from "@azure/storage-blob";
import {
  decorrelatedJitterBackoff,
  exponentialBackoff,
  fixedBackoff,
  fullJitterBackoff,
  noBackoff,
  retry,
  SDK_SINGLE_ATTEMPT,
  statusOf,
  type BackoffStrategy,
} from "../../src/index.js";
import { numberFlag, numberListFlag } from "../../src/cli/args.js";
import { round, type BenchScenario } from "../harness.js";

/** The strategies compared, scaled for writers racing on one blob (milliseconds, not seconds). */
export const contentionStrategies: readonly BackoffStrategy[] = [
  noBackoff(),
  fixedBackoff({ delayInMs: 20 }),
  exponentialBackoff({ deltaInMs: 10, minInMs: 5, maxInMs: 1_000 }),
  fullJitterBackoff({ baseInMs: 10, maxInMs: 1_000 }),
  decorrelatedJitterBackoff({ baseInMs: 10, maxInMs: 1_000 }),
];

interface Tally {
  requests: number;
  conflicts: number;
}

async function readCounter(blob: BlockBlobClient, tally: Tally): Promise<{ value: number; etag: string }> {
  tally.requests += 1;
  const response = await blob.download();
  const chunks: Buffer[] = [];
  for await (const chunk of response.readableStreamBody!) chunks.push(chunk as Buffer);
  return { value: Number(Buffer.concat(chunks).toString("utf8")), etag: response.etag! };
}

async function increment(blob: BlockBlobClient, tally: Tally): Promise<void> {
  const { value, etag } = await readCounter(blob, tally);
  const body = String(value + 1);
  tally.requests += 1;
  try {
    await blob.upload(body, Buffer.byteLength(body), { conditions: { ifMatch: etag } });
  } catch (error) {
    if (statusOf(error) === 412) tally.conflicts += 1;
    throw error;
  }
}

/** Hand-written naive loop on raw SDK calls: on 412, read again at once. */
async function rawWriter(blob: BlockBlobClient, increments: number, tally: Tally): Promise<void> {
  for (let i = 0; i < increments; i++) {
    for (;;) {
      try {
        await increment(blob, tally);
        break;
      } catch (error) {
        if (statusOf(error) !== 412) throw error;
      }
    }
  }
}

/** The same loop, with the library's retry() and a backoff strategy deciding the waits. */
async function libraryWriter(blob: BlockBlobClient, increments: number, tally: Tally, backoff: BackoffStrategy): Promise<void> {
  for (let i = 0; i < increments; i++) {
    await retry(() => increment(blob, tally), {
      backoff,
      maxRetries: Infinity,
      shouldRetry: (classification) => classification.statusCode === 412,
    });
  }
}

async function race(
  client: BlobServiceClient,
  writers: number,
  increments: number,
  writer: (blob: BlockBlobClient, increments: number, tally: Tally) => Promise<void>,
) {
  const container = client.getContainerClient(`bench-retry-${Date.now()}-${Math.floor(Math.random() * 1e6)}`);
  await container.create();
  const blob = container.getBlockBlobClient("counter");
  await blob.upload("0", 1);
  const tally: Tally = { requests: 0, conflicts: 0 };
  const started = performance.now();
  await Promise.all(Array.from({ length: writers }, () => writer(blob, increments, tally)));
  const seconds = (performance.now() - started) / 1000;
  const final = (await readCounter(blob, { requests: 0, conflicts: 0 })).value;
  await container.delete();
  const successes = writers * increments;
  if (final !== successes) throw new Error(`lost updates: counter is ${final}, expected ${successes}`);
  return {
    writers,
    timeMs: Math.round(seconds * 1000),
    requests: tally.requests,
    requestsPerSuccess: round(tally.requests / successes),
    conflicts: tally.conflicts,
    goodputPerSec: round(successes / seconds, 1),
  };
}

export const retryScenario: BenchScenario = {
  name: "retry",
  description: "backoff strategies on writers racing conditional writes to one blob",
  async run({ connectionString, args, log }) {
    const writerCounts = numberListFlag(args, "writers", [8]);
    const increments = numberFlag(args, "increments", 20, 1);
    // One attempt per SDK call: every request counted here is a request on the wire.
    const client = BlobServiceClient.fromConnectionString(connectionString, { retryOptions: SDK_SINGLE_ATTEMPT.storage });
    const results: Record<string, unknown>[] = [];
    for (const writers of writerCounts) {
      const raw = await race(client, writers, increments, rawWriter);
      results.push({ strategy: "raw-sdk-naive-loop", ...raw });
      log(`writers=${writers} raw naive loop: ${raw.timeMs} ms, ${raw.requestsPerSuccess} req/success`);
      for (const backoff of contentionStrategies) {
        const measured = await race(client, writers, increments, (b, n, t) => libraryWriter(b, n, t, backoff));
        results.push({ strategy: backoff.name, ...measured });
        log(`writers=${writers} ${backoff.name}: ${measured.timeMs} ms, ${measured.requestsPerSuccess} req/success`);
      }
    }
    return { incrementsPerWriter: increments, results };
  },
};
