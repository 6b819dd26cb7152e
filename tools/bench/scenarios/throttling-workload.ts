/**
 * The `throttling` scenario's workload: W writers, each adding 1 to a counter entity of its own
 * (`optimisticUpdate` on a table entity: after the first round, one conditional write per update),
 * spread over P partitions, through the fault proxy's throttling model. Each update is one call of
 * `retry()` (maxRetries 3, the interactive backoff): "plain" as it is, "adaptive" with the update's
 * requests sent through an `AdaptiveRateLimiter` and the retries paid from a `RetryBudget`.
 *
 * Counted per case: updates that succeeded (and within the measured window), that ran out of
 * attempts, that the budget refused, whose outcome stayed unknown; the model's answers (admitted,
 * 503, 500). After the case each counter is read straight from Azurite: an update reported done
 * that is missing is lost, one counted more often than reported is doubled.
 */
import type { TableClient } from "@azure/data-tables";
import { serviceCodeOf } from "azure-storage-concurrency/errors";
import { optimisticUpdate, tableEntityCell } from "azure-storage-concurrency/optimistic";
import { retry } from "azure-storage-concurrency/retry";
import type { ThrottlingModel } from "azure-storage-concurrency/testing";
import {
  AdaptiveRateLimiter,
  isRetryBudgetExhaustedError,
  RetryBudget,
  throttleScopeOf,
} from "azure-storage-concurrency/throttling";

/** How a case sends. */
export type Mode = "plain" | "adaptive";

/** One case to run. */
export interface CaseSpec {
  readonly mode: Mode;
  readonly writers: number;
  readonly partitions: number;
  /** The capacity of all the partitions together, per second (each gets its share). */
  readonly capacityPerSec: number;
  readonly durationInMs: number;
  /**
   * The figures are measured from this long into the case (the steady state): a partition's first
   * contact with W writers costs about one refused request per writer in flight, once per process
   * (`learning*` figures count it). 0: the whole case.
   */
  readonly learningInMs?: number;
  /** Capacity changes during the case: at `atMs`, the capacity becomes `capacityPerSec`. */
  readonly changes?: readonly { readonly atMs: number; readonly capacityPerSec: number }[];
  /** Sample the timeline every this many milliseconds (0: no timeline). */
  readonly sampleEveryInMs?: number;
}

/** One point of a case's timeline. */
interface Sample {
  readonly atSec: number;
  readonly capacityPerSec: number;
  /** Updates done per second over the last sample interval. */
  readonly goodputPerSec: number;
  /** The model's refusals (503 and 500) per second over the interval. */
  readonly throttledPerSec: number;
  /** The limiter's rate for the hot partition (null: plain, or not limited yet). */
  readonly limiterPerSec: number | null;
}

/** What a case measured. */
export interface CaseResult {
  readonly mode: Mode;
  readonly writers: number;
  readonly partitions: number;
  /** The capacity the writers can reach: all of it, or the share of the partitions they write to. */
  readonly capacityPerSec: number;
  readonly goodputPerSec: number;
  readonly goodputToCapacity: number;
  readonly throttledShare: number;
  /** Over the whole case, the learning period included. */
  readonly wholeCase: { readonly goodputToCapacity: number; readonly throttledShare: number };
  readonly requests: number;
  readonly serverBusy: number;
  readonly operationTimedOut: number;
  readonly succeeded: number;
  /** Updates that ran out of attempts (maxRetries), or that the budget did not retry. */
  readonly gaveUp: number;
  readonly refusedByBudget: number;
  readonly unknown: number;
  readonly lost: number;
  readonly doubled: number;
  readonly timeline: readonly Sample[];
}

/** The clients a case needs: one through the throttling proxy, one straight to Azurite. */
interface CaseClients {
  readonly through: (table: string) => TableClient;
  readonly direct: (table: string) => TableClient;
  readonly model: ThrottlingModel;
}

const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

/** Runs one case on a fresh table; `signal` stops it early. */
export async function runCase(
  spec: CaseSpec,
  tableName: string,
  clients: CaseClients,
  signal: AbortSignal,
): Promise<CaseResult> {
  const direct = clients.direct(tableName);
  await direct.createTable();
  try {
    return await measure(spec, clients, clients.through(tableName), direct, signal);
  } finally {
    await direct.deleteTable().catch(() => undefined);
  }
}

async function measure(
  spec: CaseSpec,
  { model }: CaseClients,
  client: TableClient,
  direct: TableClient,
  signal: AbortSignal,
): Promise<CaseResult> {
  const adaptive = spec.mode === "adaptive";
  const rateLimiter = adaptive ? new AdaptiveRateLimiter({ name: "bench" }) : undefined;
  const budget = adaptive ? new RetryBudget({ name: "bench" }) : undefined;
  const setCapacity = (capacityPerSec: number) =>
    model.setRates({ partitionRatePerSec: capacityPerSec / spec.partitions });
  const hot = throttleScopeOf(`${client.url}/${client.tableName}`, { service: "table", partitionKey: "p0" }).partition!;

  const succeeded = new Array<number>(spec.writers).fill(0);
  const unknown = new Array<number>(spec.writers).fill(0);
  let inWindow = 0;
  let inCase = 0;
  let gaveUp = 0;
  let refusedByBudget = 0;
  let capacityNow = spec.capacityPerSec;

  // Each writer's first update (a read and a create: its cell is new) is made before the case,
  // unthrottled: the case measures the steady state, one conditional write per update, and a read
  // more after a refusal (the engine then reads before writing again).
  const cells = Array.from({ length: spec.writers }, (_, w) =>
    tableEntityCell<{ n?: number }>(client, `p${w % spec.partitions}`, `w${w}`),
  );
  model.setRates({ partitionRatePerSec: 1e9 });
  await Promise.all(cells.map((cell) => optimisticUpdate(cell, () => ({ n: 0 }))));
  setCapacity(spec.capacityPerSec);
  model.resetStats();
  const started = performance.now();
  const deadline = started + spec.durationInMs;
  const learningInMs = spec.learningInMs ?? 0;
  const windowStart = started + learningInMs;
  let atWindowStart = model.stats();
  let atDeadline: ReturnType<typeof model.stats> | undefined;
  const snapshots = [
    setTimeout(() => (atWindowStart = model.stats()), learningInMs),
    setTimeout(() => (atDeadline = model.stats()), spec.durationInMs),
  ];
  const timers = (spec.changes ?? []).map((change) =>
    setTimeout(() => {
      capacityNow = change.capacityPerSec;
      setCapacity(change.capacityPerSec);
    }, change.atMs),
  );

  // The timeline: every sample interval, what got done, what was refused, where the limiter is.
  const timeline: Sample[] = [];
  let last = { at: started, done: 0, refused: 0 };
  const refusals = () => {
    const s = model.stats();
    return s.serverBusy + s.operationTimedOut;
  };
  const sampler =
    spec.sampleEveryInMs && spec.sampleEveryInMs > 0
      ? setInterval(() => {
          const now = performance.now();
          const done = succeeded.reduce((a, b) => a + b, 0);
          const refused = refusals();
          const seconds = (now - last.at) / 1000;
          const limited = rateLimiter?.stateOf(hot);
          timeline.push({
            atSec: round((now - started) / 1000),
            capacityPerSec: capacityNow,
            goodputPerSec: round((done - last.done) / seconds, 1),
            throttledPerSec: round((refused - last.refused) / seconds, 1),
            limiterPerSec: limited?.limited ? round(limited.ratePerSec, 1) : null,
          });
          last = { at: now, done, refused };
        }, spec.sampleEveryInMs)
      : undefined;

  const writer = async (w: number) => {
    const cell = cells[w]!;
    while (performance.now() < deadline && !signal.aborted) {
      try {
        await retry(
          () =>
            optimisticUpdate(cell, (current) => ({ n: (current?.n ?? 0) + 1 }), {
              ...(rateLimiter ? { rateLimiter } : {}),
              abortSignal: signal,
            }),
          { maxRetries: 3, abortSignal: signal, ...(budget ? { budget } : {}), operationName: "add 1" },
        );
        succeeded[w]! += 1;
        const now = performance.now();
        if (now <= deadline) inCase += 1;
        if (now <= deadline && now >= windowStart) inWindow += 1;
      } catch (error) {
        if (signal.aborted) return;
        if ((error as { code?: unknown }).code === "OptimisticOutcomeUnknown") {
          unknown[w]! += 1; // may have been applied: neither done nor given up
          continue;
        }
        if (isRetryBudgetExhaustedError(error)) refusedByBudget += 1;
        else if (serviceCodeOf(error) === undefined) throw error; // not a storage failure: a bug, not a figure
        gaveUp += 1;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: spec.writers }, (_, w) => writer(w)));
  } finally {
    timers.forEach(clearTimeout);
    snapshots.forEach(clearTimeout);
    if (sampler) clearInterval(sampler);
  }

  // Every counter read straight from Azurite, against the updates reported done.
  let lost = 0;
  let doubled = 0;
  for (let w = 0; w < spec.writers; w++) {
    const stored = await direct
      .getEntity<{ n?: number }>(`p${w % spec.partitions}`, `w${w}`)
      .then((e) => e.n ?? 0)
      .catch(() => 0);
    lost += Math.max(0, succeeded[w]! - stored);
    doubled += Math.max(0, stored - succeeded[w]! - unknown[w]!);
  }
  const stats = model.stats();
  const end = atDeadline ?? stats;
  const requestsOf = (s: typeof stats) => s.admitted + s.serverBusy + s.operationTimedOut;
  const refusedOf = (s: typeof stats) => s.serverBusy + s.operationTimedOut;
  const share = (refused: number, all: number) => (all === 0 ? 0 : refused / all);
  const requests = requestsOf(stats);
  const goodputPerSec = inWindow / ((spec.durationInMs - learningInMs) / 1000);
  // Writer w writes to partition w % P: fewer writers than partitions reach only their partitions' share.
  const reachable = (spec.capacityPerSec * Math.min(spec.writers, spec.partitions)) / spec.partitions;
  return {
    mode: spec.mode,
    writers: spec.writers,
    partitions: spec.partitions,
    capacityPerSec: round(reachable, 2),
    goodputPerSec: round(goodputPerSec, 1),
    goodputToCapacity: round(goodputPerSec / reachable, 3),
    throttledShare: round(share(refusedOf(end) - refusedOf(atWindowStart), requestsOf(end) - requestsOf(atWindowStart)), 4), // prettier-ignore
    wholeCase: {
      goodputToCapacity: round(inCase / (spec.durationInMs / 1000) / reachable, 3),
      throttledShare: round(share(refusedOf(end), requestsOf(end)), 4),
    },
    requests,
    serverBusy: stats.serverBusy,
    operationTimedOut: stats.operationTimedOut,
    succeeded: succeeded.reduce((a, b) => a + b, 0),
    gaveUp,
    refusedByBudget,
    unknown: unknown.reduce((a, b) => a + b, 0),
    lost,
    doubled,
    timeline,
  };
}
