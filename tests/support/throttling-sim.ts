/**
 * A closed-loop simulation of writers, the adaptive limiter and the throttling model on one fake
 * clock, for unit tests of the limiter's timing: the bench's `throttling` drop run (64 writers on
 * one partition whose capacity drops to a quarter and comes back) in milliseconds of test time.
 *
 * Each writer repeats one operation: take a token, send (the model decides at once), get the
 * answer `latencyInMs` later, record it; a refused request is retried after the interactive
 * backoff, at most `maxRetries` times (then the operation is given up and the next one starts).
 * Everything random comes from one seeded source, so a run is the same every time.
 */
import { AdaptiveRateLimiter, throttleScopeOf, type AdaptiveRateLimiterOptions } from "../../src/index.js";
import { ThrottlingModelState } from "../../src/testing/throttling-model.js";
import { fakeClock } from "./fake-clock.js";

/** One simulated run. */
export interface SimSpec {
  readonly writers: number;
  /** The partition's capacity over time: `[atMs, capacityPerSec]`, the first at 0. */
  readonly capacity: readonly (readonly [number, number])[];
  readonly durationInMs: number;
  /** From send to answer. @default 20 */
  readonly latencyInMs?: number;
  /** Retries per operation. @default 3 */
  readonly maxRetries?: number;
  /** The model's share of refusals answered 500 OperationTimedOut (applied first). @default 0.1 */
  readonly operationTimedOutShare?: number;
  readonly limiter?: AdaptiveRateLimiterOptions;
  /** Sample the limiter's rate and the goodput this often. @default 250 */
  readonly sampleEveryInMs?: number;
  /** Simulation step. @default 1 */
  readonly stepInMs?: number;
}

/** One sample of a run. */
export interface SimSample {
  readonly atMs: number;
  readonly capacityPerSec: number;
  /** The limiter's rate for the partition (Infinity while not limited). */
  readonly ratePerSec: number;
  /** Operations done over the last sample interval, per second. */
  readonly goodputPerSec: number;
  readonly cuts: number;
}

/** What a run measured. */
export interface SimResult {
  readonly samples: readonly SimSample[];
  readonly done: number;
  readonly gaveUp: number;
  readonly requests: number;
  readonly refused: number;
}

/** A deterministic random source (mulberry32). */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const url = "https://acct.table.core.windows.net/t(PartitionKey='hot',RowKey='r')";

/** Runs one simulation to its end. */
export async function simulate(spec: SimSpec): Promise<SimResult> {
  const time = fakeClock();
  const random = seeded(26);
  const start = time.clock.monotonic();
  const model = new ThrottlingModelState(
    {
      partitionRatePerSec: spec.capacity[0]![1],
      accountRatePerSec: 1e9,
      service: "table",
      operationTimedOutShare: spec.operationTimedOutShare ?? 0.1,
      timedOutAfterApply: true,
      random,
    },
    () => time.clock.monotonic(),
  );
  const limiter = new AdaptiveRateLimiter(spec.limiter ?? {}, time.clock);
  const scope = throttleScopeOf(url);
  const partition = scope.partition!;
  const latencyInMs = spec.latencyInMs ?? 20;
  const maxRetries = spec.maxRetries ?? 3;
  const end = start + spec.durationInMs;
  const sleep = (ms: number) => new Promise<void>((resolve) => time.clock.setTimer(resolve, ms));
  // The interactive backoff (z = 200 ms, zmin = 50 ms, zmax = 2 s), on the seeded source.
  const backoffInMs = (retry: number) => Math.min(50 + (0.8 + 0.4 * random()) * 200 * (2 ** retry - 1), 2_000);

  let done = 0;
  let gaveUp = 0;
  let requests = 0;
  let refused = 0;
  const writer = async () => {
    while (time.clock.monotonic() < end) {
      for (let attempt = 0; ; attempt++) {
        const permit = await limiter.acquire(scope);
        if (time.clock.monotonic() >= end) return;
        const decision = model.decide({ method: "PUT", url, headers: { dataserviceversion: "3.0" } }, "table");
        requests += 1;
        await sleep(latencyInMs);
        if (decision.kind === "admit") {
          limiter.record(permit);
          done += 1;
          break;
        }
        refused += 1;
        limiter.record(permit, {
          name: "RestError",
          statusCode: decision.statusCode,
          code: decision.statusCode === 503 ? "ServerBusy" : "OperationTimedOut",
          message: "throttled",
        });
        if (attempt === maxRetries) {
          gaveUp += 1;
          break;
        }
        await sleep(backoffInMs(attempt + 1));
      }
    }
  };

  const samples: SimSample[] = [];
  const sampleEvery = spec.sampleEveryInMs ?? 250;
  const step = spec.stepInMs ?? 1;
  const changes = [...spec.capacity];
  let capacityNow = changes.shift()![1];
  let lastDone = 0;
  const writers = Array.from({ length: spec.writers }, () => writer());
  for (let t = 0; t < spec.durationInMs; t += step) {
    while (changes.length > 0 && changes[0]![0] <= t) {
      capacityNow = changes.shift()![1];
      model.setRates({ partitionRatePerSec: capacityNow });
    }
    time.advance(step);
    await new Promise<void>((resolve) => setImmediate(resolve));
    if ((t + step) % sampleEvery === 0) {
      const state = limiter.stateOf(partition);
      samples.push({
        atMs: t + step,
        capacityPerSec: capacityNow,
        ratePerSec: state?.limited ? state.ratePerSec : Infinity,
        goodputPerSec: ((done - lastDone) * 1000) / sampleEvery,
        cuts: state?.cuts ?? 0,
      });
      lastDone = done;
    }
  }
  // Let the writers see the end (each is waiting on a timer or a token).
  for (let i = 0; i < 5_000 && time.pending() > 0; i++) {
    time.advance(10);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  await Promise.race([Promise.all(writers), new Promise((resolve) => setImmediate(resolve))]);
  return { samples, done, gaveUp, requests, refused };
}
