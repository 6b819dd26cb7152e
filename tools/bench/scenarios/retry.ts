/**
 * `retry`: backoff strategies compared on contended work. W writers race conditional writes on one
 * blob (read, +1, write with If-Match; a 412 means someone else won, so wait and try again). The
 * raw baseline is a hand-written loop on raw SDK calls that retries at once; each strategy runs the
 * same loop through the library's retry(). Reported per strategy and number of writers: time to
 * finish, HTTP requests per successful increment, conflicts, goodput (increments per second).
 *
 * The writer counts are swept (1, 2, 4, 8, 16 by default: the report charts goodput and requests per
 * success against them). Each round runs every strategy once per writer count, in an order that
 * rotates from round to round, so that a shared machine's changing load falls on all of them alike;
 * each figure is the median over the rounds (`perRound` keeps every round's value). Every race makes
 * at least 160 increments in all (a single writer makes 160, not 20: a race of a few dozen
 * milliseconds measures mostly timer and scheduling noise), and one unmeasured warm-up race per way
 * comes first.
 */
import type { BlobServiceClient, BlockBlobClient } from "@azure/storage-blob";
import { statusOf } from "azure-storage-concurrency/errors";
import {
  decorrelatedJitterBackoff,
  exponentialBackoff,
  fixedBackoff,
  fullJitterBackoff,
  noBackoff,
  retry,
  SDK_SINGLE_ATTEMPT,
  type BackoffStrategy,
} from "azure-storage-concurrency/retry";
import { numberFlag, numberListFlag } from "../../internal/args.js";
import { importSdk } from "../../internal/sdk.js";
import { median, round, type BenchScenario } from "../harness.js";
import { withRoundTrip } from "../round-trip.js";

/** The strategies compared, scaled for writers racing on one blob (milliseconds, not seconds). */
const contentionStrategies: readonly BackoffStrategy[] = [
  noBackoff(),
  fixedBackoff({ delayInMs: 20 }),
  exponentialBackoff({ deltaInMs: 10, minInMs: 5, maxInMs: 1_000 }),
  fullJitterBackoff({ baseInMs: 10, maxInMs: 1_000 }),
  decorrelatedJitterBackoff({ baseInMs: 10, maxInMs: 1_000 }),
];

/** The settings of {@link contentionStrategies}, by name, for the JSON (and the report). */
const STRATEGY_SETTINGS: Readonly<Record<string, string>> = {
  "raw-sdk-naive-loop": "raw SDK calls; on 412, read again at once",
  none: "retry(): no wait",
  fixed: "retry(): 20 ms every time",
  exponential: "retry(): exponentialBackoff (the source documents' formula), delta 10 ms, min 5 ms, max 1000 ms",
  "full-jitter": "retry(): full jitter, base 10 ms, max 1000 ms",
  "decorrelated-jitter": "retry(): decorrelated jitter, base 10 ms, max 1000 ms",
};

const RAW = "raw-sdk-naive-loop";
const MIN_SUCCESSES_PER_RACE = 160;
/**
 * Beyond this many writers, a race makes only the minimum in all (MIN_SUCCESSES_PER_RACE), not
 * `--increments` per writer: a naive loop's requests grow with the writers, so that keeps the 32- and
 * 64-writer races (and `bench all`) short.
 */
const WIDE = 16;

interface Tally {
  requests: number;
  conflicts: number;
  /** The scenario's time limit: past it, requests fail. */
  readonly abortSignal: AbortSignal;
}

async function readCounter(blob: BlockBlobClient, tally: Tally): Promise<{ value: number; etag: string }> {
  tally.requests += 1;
  const response = await blob.download(0, undefined, { abortSignal: tally.abortSignal });
  const chunks: Buffer[] = [];
  for await (const chunk of response.readableStreamBody!) chunks.push(chunk as Buffer);
  return { value: Number(Buffer.concat(chunks).toString("utf8")), etag: response.etag! };
}

async function increment(blob: BlockBlobClient, tally: Tally): Promise<void> {
  const { value, etag } = await readCounter(blob, tally);
  const body = String(value + 1);
  tally.requests += 1;
  try {
    await blob.upload(body, Buffer.byteLength(body), {
      conditions: { ifMatch: etag },
      abortSignal: tally.abortSignal,
    });
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
async function libraryWriter(
  blob: BlockBlobClient,
  increments: number,
  tally: Tally,
  backoff: BackoffStrategy,
): Promise<void> {
  for (let i = 0; i < increments; i++) {
    await retry(() => increment(blob, tally), {
      backoff,
      maxRetries: Infinity,
      shouldRetry: (classification) => classification.statusCode === 412,
      abortSignal: tally.abortSignal,
    });
  }
}

async function race(
  client: BlobServiceClient,
  writers: number,
  increments: number,
  writer: (blob: BlockBlobClient, increments: number, tally: Tally) => Promise<void>,
  abortSignal: AbortSignal,
) {
  const container = client.getContainerClient(`bench-retry-${Date.now()}-${Math.floor(Math.random() * 1e6)}`);
  await container.create();
  const blob = container.getBlockBlobClient("counter");
  await blob.upload("0", 1);
  const tally: Tally = { requests: 0, conflicts: 0, abortSignal };
  const started = performance.now();
  let seconds: number;
  let final: number;
  try {
    await Promise.all(Array.from({ length: writers }, () => writer(blob, increments, tally)));
    seconds = (performance.now() - started) / 1000;
    final = (await readCounter(blob, { requests: 0, conflicts: 0, abortSignal })).value;
  } finally {
    await container.delete();
  }
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

type Race = Awaited<ReturnType<typeof race>>;

export const retryScenario: BenchScenario<typeof import("@azure/storage-blob")> = {
  name: "retry",
  description: "backoff strategies on 1-64 writers racing conditional writes to one blob",
  flags: {
    "--writers <list>": "writer counts to sweep, comma-separated (default 1,2,4,8,16,32,64)",
    "--increments <n>":
      "increments per writer, at least (default 20; a race makes at least 160 in all; beyond 16 writers, 160 in all)",
    "--round-trip-ms <n>":
      "on Azurite, every race once more through a proxy adding this round trip, ± 30% jitter (default 10; 0: not run)",
    "--rounds <n>":
      "rounds; each figure is the median over them (default 1: one round of the sweep takes about 3 minutes here)",
  },
  services: ["blob"],
  timeLimitInSec: 720,
  loadSdks: () => importSdk(() => import("@azure/storage-blob"), "@azure/storage-blob"),
  async run({ connectionString, embedded, args, log, abortSignal }, { BlobServiceClient }) {
    const writerCounts = numberListFlag(args, "writers", [1, 2, 4, 8, 16, 32, 64]).map(Math.floor);
    const increments = numberFlag(args, "increments", 20, 1);
    const rounds = numberFlag(args, "rounds", 1, 1);
    const roundTripMs = numberFlag(args, "round-trip-ms", 10, 0);
    const ways: [string, (blob: BlockBlobClient, increments: number, tally: Tally) => Promise<void>][] = [
      [RAW, rawWriter],
      ...contentionStrategies.map((backoff): [string, typeof rawWriter] => [
        backoff.name,
        (b, n, t) => libraryWriter(b, n, t, backoff),
      ]),
    ];
    const perWriter = (writers: number) =>
      Math.max(Math.ceil(MIN_SUCCESSES_PER_RACE / writers), writers <= WIDE ? increments : 1);

    /** Every way at every writer count, `times` rounds, through the account at `through`. */
    const measure = async (through: string, times: number, label: string) => {
      // One attempt per SDK call: every request counted here is a request on the wire.
      const client = BlobServiceClient.fromConnectionString(through, { retryOptions: SDK_SINGLE_ATTEMPT.storage });
      for (const [, writer] of ways) await race(client, 2, 10, writer, abortSignal); // warm-up, not measured
      const measured = new Map<string, Race[]>(); // "writers strategy" -> one race per round
      for (let r = 0; r < times; r++) {
        for (const writers of writerCounts) {
          for (let k = 0; k < ways.length; k++) {
            const [strategy, writer] = ways[(k + r) % ways.length]!;
            const outcome = await race(client, writers, perWriter(writers), writer, abortSignal);
            const key = `${writers} ${strategy}`;
            measured.set(key, [...(measured.get(key) ?? []), outcome]);
          }
          const line = ways
            .map(([strategy]) => `${strategy} ${measured.get(`${writers} ${strategy}`)!.at(-1)!.requestsPerSuccess}`)
            .join(", ");
          log(`${label}round ${r + 1}/${times}, ${writers} writers: requests per success ${line}`);
        }
      }
      return writerCounts.flatMap((writers) =>
        ways.map(([strategy]) => {
          const races = measured.get(`${writers} ${strategy}`)!;
          const mid = (pick: (x: Race) => number, digits = 2) => round(median(races.map(pick)), digits);
          return {
            strategy,
            writers,
            incrementsPerWriter: perWriter(writers),
            timeMs: mid((x) => x.timeMs, 0),
            requests: mid((x) => x.requests, 0),
            requestsPerSuccess: mid((x) => x.requestsPerSuccess),
            conflicts: mid((x) => x.conflicts, 0),
            goodputPerSec: mid((x) => x.goodputPerSec, 1),
            perRound: {
              goodputPerSec: races.map((x) => x.goodputPerSec),
              requestsPerSuccess: races.map((x) => x.requestsPerSuccess),
            },
          };
        }),
      );
    };
    const results = await measure(connectionString, rounds, "");
    // The same once more with an Azure-like round trip (on an account, the round trip is already real).
    const azureLike =
      embedded && roundTripMs > 0
        ? await withRoundTrip(connectionString, roundTripMs, (through) =>
            measure(through, 1, `Azure-like round trip ${roundTripMs} ms: `),
          )
        : null;
    return {
      incrementsPerWriter: increments,
      minSuccessesPerRace: MIN_SUCCESSES_PER_RACE,
      writers: writerCounts,
      rounds,
      strategies: Object.fromEntries(ways.map(([strategy]) => [strategy, STRATEGY_SETTINGS[strategy] ?? strategy])),
      results,
      azureLike: azureLike?.map(({ perRound: _, ...row }) => row) ?? null,
      azureLikeRoundTripMs: azureLike ? roundTripMs : null,
    };
  },
};
