/**
 * `batch`: inserting many entities, one request per entity versus entity group transactions.
 *
 * Entities spread over P partitions are inserted four ways into fresh tables:
 * - `single`: one `createEntity` per entity (the raw SDK), `--concurrency` requests in flight;
 * - `rawTransactions`: hand-cut 100-entity `submitTransaction` calls (the raw SDK), likewise;
 * - `batchedSameConcurrency`: the library's `writeBatch()` (grouping, 100-operation and 4 MiB cuts,
 *   checks) held to the same number of requests in flight: what the library costs over hand-cut
 *   transactions (`batchedVsRaw`);
 * - `batched`: `writeBatch()` as a user calls it, with its default `maxConcurrency` (4 partitions'
 *   transactions at once): what a user gets over inserting one entity at a time (`ratio`).
 * The transactional ways insert ten times as many entities as `single`, so that every way runs for
 * about as long, and they take turns in slices (100 entities per partition for the
 * transactional ways, a tenth of that for single, the first turn rotating), so that a shared
 * machine's changing load falls on all alike. A warm-up round is not counted, and each round's
 * tables are deleted after it (the emulator's heap, and its garbage collection, stays as it was).
 * Rates are medians over the rounds; `ratio` (goal: at least 8) is the median of each round's
 * batched / single, a paired comparison that drift between rounds does not skew (`ratioOfMedians` is
 * batchedPerSec / singlePerSec); `ratioSameConcurrency` and `rawRatio` are the same for the
 * library held to one transaction at a time and for hand-cut transactions.
 *
 * `batchedVsRaw` (issue 27): the raw transactions and `writeBatch()` at the same concurrency run back
 * to back in every slice, alternating which goes first, and each slice is a pair: `batchedVsRaw` is
 * the median of the pairs' rate ratios, `batchedVsRawCpu` of their CPU ratios (this process and the
 * embedded Azurite, raw over library), each with its spread (`…Spread`: interquartile range and
 * extremes). On a shared 2-core machine the rate pairs swing (0.1x-6x seen), the CPU pairs far less
 * (interquartile range about a third as wide): the goal is judged on `batchedVsRawCpu`, since at one
 * request in flight the client and the emulator take turns, and a quiet machine's rate is the
 * inverse of their CPU per entity. `cpuMicrosPerEntity` says where it goes (client: the SDK and the
 * library; azurite: the service).
 *
 * One request in flight (`--concurrency 1`, the default) measures what a transaction saves per
 * entity: one round trip and one service operation for up to 100 entities. With more in flight,
 * single inserts overlap on the wire too, and on a small machine the emulator's CPU becomes the
 * bound for both; run with `--concurrency 8` to see that regime.
 *
 * Then the scale curves of ./batch-scale.ts: transactions of 1 to 100 operations, payloads up to 4 MB.
 */
import type { TableClient, TransactionAction } from "@azure/data-tables";
import { numberFlag, UsageError } from "../../internal/args.js";
import { importSdk } from "../../internal/sdk.js";
import { forEachConcurrently as pool } from "../../internal/pool.js";
import { padNumber, writeBatch } from "azure-storage-concurrency/tables";
import { median, round, type BenchScenario } from "../harness.js";
import { growthOf, pairRatios, ratioSpread, describeSpread } from "../stats.js";
import { azuriteCpuMs, processCpuMs } from "../cpu.js";
import { batchScale } from "./batch-scale.js";

/**
 * How many entities `single` inserts in each slice so that a round inserts exactly `entities`: slices
 * of 10 per partition (a tenth of the transactional ways' 100 per partition), the last one shorter
 * when they do not divide evenly (`--entities 200` over 8 partitions: 80, 80, 40, not 240).
 */
export function sliceCounts(entities: number, partitions: number): number[] {
  const full = 10 * partitions;
  const counts = Array.from({ length: Math.floor(entities / full) }, () => full);
  if (entities % full > 0) counts.push(entities % full);
  return counts;
}

export const batchScenario: BenchScenario<typeof import("@azure/data-tables")> = {
  name: "batch",
  description: "inserts: one request per entity vs 100-entity transactions (raw SDK) vs writeBatch()",
  flags: {
    "--entities <n>":
      "entities inserted one by one per round; the transactional ways insert 10 times as many (default 2000)",
    "--partitions <n>": "partitions the entities spread over (default 8)",
    "--concurrency <n>": "requests in flight (default 1)",
    "--rounds <n>": "rounds after a warm-up; rates are medians over them (default 8)",
    "--payload-bytes <n>": "payload per entity (default 100)",
    "--skip-scale": "leave out the scale curves (transactions of 1 to 100 operations, payloads up to 4 MB)",
  },
  services: ["table"],
  timeLimitInSec: 900,
  loadSdks: () => importSdk(() => import("@azure/data-tables"), "@azure/data-tables"),
  async run({ connectionString, args, log }, { TableClient }) {
    const entities = numberFlag(args, "entities", 2000, 100);
    const partitions = numberFlag(args, "partitions", 8, 1);
    if (!Number.isInteger(entities) || !Number.isInteger(partitions))
      throw new UsageError("--entities and --partitions take whole numbers");
    const concurrency = numberFlag(args, "concurrency", 1, 1);
    const rounds = numberFlag(args, "rounds", 8, 1);
    const payload = "p".repeat(numberFlag(args, "payload-bytes", 100, 0));
    const insecure = connectionString.includes("http://");
    const tables: TableClient[] = [];
    const freshTable = async (kind: string) => {
      const name = `bench${kind}${Date.now().toString(36)}${Math.floor(Math.random() * 1e6)}`;
      const client = TableClient.fromConnectionString(connectionString, name, { allowInsecureConnection: insecure });
      await client.createTable();
      tables.push(client);
      return client;
    };
    const rows = (tag: string, count: number) =>
      Array.from({ length: count }, (_, i) => ({
        partitionKey: `p${padNumber(i % partitions, 3)}`,
        rowKey: `${tag}-${padNumber(i, 8)}`,
        payload,
        n: i,
      }));

    const single = async (client: TableClient, data: ReturnType<typeof rows>) =>
      pool(data.length, concurrency, async (i) => void (await client.createEntity(data[i]!)));
    const rawTransactions = async (client: TableClient, data: ReturnType<typeof rows>) => {
      const chunks: TransactionAction[][] = [];
      for (let p = 0; p < partitions; p++) {
        const mine = data.filter((_, i) => i % partitions === p);
        for (let at = 0; at < mine.length; at += 100)
          chunks.push(mine.slice(at, at + 100).map((e): TransactionAction => ["create", e]));
      }
      await pool(chunks.length, concurrency, async (i) => void (await client.submitTransaction(chunks[i]!)));
    };
    const writeAll = async (client: TableClient, data: ReturnType<typeof rows>, maxConcurrency?: number) => {
      const result = await writeBatch(
        client,
        data.map((e): TransactionAction => ["create", e]),
        maxConcurrency === undefined ? {} : { maxConcurrency },
      );
      if (!result.ok) throw new Error(`writeBatch failed: ${result.transactions.find((t) => t.error)?.error?.message}`);
    };
    const batchedSameConcurrency = (client: TableClient, data: ReturnType<typeof rows>) =>
      writeAll(client, data, concurrency);
    const batched = (client: TableClient, data: ReturnType<typeof rows>) => writeAll(client, data);
    const ways = { single, rawTransactions, batchedSameConcurrency, batched };
    const names = () => Object.keys(ways) as (keyof typeof ways)[];
    const perSec: Record<keyof typeof ways, number[]> = {
      single: [],
      rawTransactions: [],
      batchedSameConcurrency: [],
      batched: [],
    };

    // Each round inserts into fresh tables in slices: a slice is 100 entities per partition for the
    // transactional ways and a tenth of that for single, and the ways take turns slice by slice
    // (rotating who goes first), so that the machine's load at any moment falls on all alike. The
    // pair that `batchedVsRaw` compares (raw transactions, writeBatch at the same concurrency) always
    // runs back to back, alternating which of the two goes first: each slice is one pair.
    // Exactly --entities one by one (the last slice is shorter when they do not divide evenly).
    const singleSlices = sliceCounts(entities, partitions);
    const slices = singleSlices.length;
    const sliceSize = (way: keyof typeof ways, slice: number) => singleSlices[slice]! * (way === "single" ? 1 : 10);
    const orderOf = (slice: number): (keyof typeof ways)[] => {
      const pair: (keyof typeof ways)[] =
        slice % 2 === 0 ? ["rawTransactions", "batchedSameConcurrency"] : ["batchedSameConcurrency", "rawTransactions"];
      const units: (keyof typeof ways)[][] = [["single"], pair, ["batched"]];
      return [0, 1, 2].flatMap((k) => units[(slice + k) % units.length]!);
    };
    /** Per slice of every measured round: the raw transactions' seconds over writeBatch's (same entities). */
    const slicePairRatios: number[] = [];
    /** Per slice of every measured round: the raw transactions' CPU ms (this process + Azurite) over writeBatch's. */
    const sliceCpuRatios: number[] = [];
    /** Per measured round and way: CPU ms per entity of this process (the client) and of Azurite. */
    const cpuPerEntity: Record<keyof typeof ways, { client: number; server: number | undefined }[]> = {
      single: [],
      rawTransactions: [],
      batchedSameConcurrency: [],
      batched: [],
    };
    let scale: Awaited<ReturnType<typeof batchScale>>;
    try {
      for (let r = 0; r <= rounds; r++) {
        const warmUp = r === 0;
        const clients = Object.fromEntries(
          await Promise.all(names().map(async (way) => [way, await freshTable(way.toLowerCase())] as const)),
        );
        const seconds = { single: 0, rawTransactions: 0, batchedSameConcurrency: 0, batched: 0 };
        const clientMs = { single: 0, rawTransactions: 0, batchedSameConcurrency: 0, batched: 0 };
        const serverMs: Record<keyof typeof ways, number | undefined> = {
          single: 0,
          rawTransactions: 0,
          batchedSameConcurrency: 0,
          batched: 0,
        };
        for (let slice = 0; slice < slices; slice++) {
          const sliceSeconds: Partial<Record<keyof typeof ways, number>> = {};
          const sliceCpuMs: Partial<Record<keyof typeof ways, number>> = {};
          for (const way of orderOf(slice)) {
            const data = rows(`${way}${r}s${padNumber(slice, 4)}`, sliceSize(way, slice));
            const server = azuriteCpuMs();
            const client = processCpuMs();
            const started = performance.now();
            await ways[way](clients[way]!, data);
            const elapsed = (performance.now() - started) / 1000;
            const clientNow = processCpuMs();
            clientMs[way] += clientNow - client;
            const serverNow = azuriteCpuMs();
            sliceCpuMs[way] =
              server === undefined || serverNow === undefined ? Number.NaN : clientNow - client + serverNow - server;
            serverMs[way] =
              server === undefined || serverNow === undefined || serverMs[way] === undefined
                ? undefined
                : serverMs[way] + serverNow - server;
            seconds[way] += elapsed;
            sliceSeconds[way] = elapsed;
          }
          if (!warmUp) {
            slicePairRatios.push(sliceSeconds.rawTransactions! / sliceSeconds.batchedSameConcurrency!);
            sliceCpuRatios.push(sliceCpuMs.rawTransactions! / sliceCpuMs.batchedSameConcurrency!);
          }
        }
        for (const way of names()) {
          const count = way === "single" ? entities : 10 * entities;
          if (!warmUp) {
            perSec[way].push(count / seconds[way]);
            const server = serverMs[way];
            cpuPerEntity[way].push({
              client: clientMs[way] / count,
              server: server === undefined ? undefined : server / count,
            });
          }
          log(
            `${warmUp ? "warm-up" : `round ${r}`}: ${way} ${count} in ${round(seconds[way], 2)} s: ${round(count / seconds[way], 0)} entities/s; ` +
              `CPU µs/entity: client ${round((clientMs[way] * 1000) / count, 1)}, Azurite ${serverMs[way] === undefined ? "n/a" : round((serverMs[way] * 1000) / count, 1)}`,
          );
          let stored = 0;
          for await (const page of clients[way]!.listEntities({ queryOptions: { select: ["RowKey"] } }).byPage({
            maxPageSize: 1000,
          }))
            stored += page.length;
          if (stored !== count) throw new Error(`${way}: ${stored} entities stored, expected ${count}`);
        }
        // Counted: drop the round's tables, so that the emulator's heap (and its garbage collection,
        // which lands on whichever way runs then) does not grow round after round.
        await Promise.all(
          names().map(async (way) => {
            await clients[way]!.deleteTable();
            tables.splice(tables.indexOf(clients[way]!), 1);
          }),
        );
        if (!warmUp) {
          const raw = perSec.rawTransactions.at(-1)!;
          const lib = perSec.batchedSameConcurrency.at(-1)!;
          log(
            `round ${r}: batched/raw ${round(lib / raw, 3)}; slice pairs so far: rate ${describeSpread(ratioSpread(slicePairRatios))}, ` +
              `CPU ${describeSpread(ratioSpread(sliceCpuRatios))}`,
          );
        }
      }
      scale = args["skip-scale"] ? { bySize: [], byPayload: [] } : await batchScale(await freshTable("scale"), log);
    } finally {
      await Promise.all(tables.map((t) => t.deleteTable().catch(() => undefined)));
    }
    const singlePerSec = median(perSec.single);
    const batchedPerSec = median(perSec.batched);
    const batchedSameConcurrencyPerSec = median(perSec.batchedSameConcurrency);
    const rawTransactionPerSec = median(perSec.rawTransactions);
    const paired = (way: keyof typeof ways) => round(median(perSec[way].map((v, i) => v / perSec.single[i]!)), 2);
    // batchedVsRaw: the pairs are the slices, each a raw and a writeBatch run of the same entities
    // back to back; the median of many short pairs is what a shared machine's bursts move least.
    const batchedVsRawSpread = ratioSpread(slicePairRatios);
    const roundRatios = ratioSpread(pairRatios(perSec.batchedSameConcurrency, perSec.rawTransactions));
    // CPU per entity, this process and Azurite together: what the library adds to a CPU-bound
    // machine's work, which other helpers' load does not inflate (it slows the clock, not this work).
    const batchedVsRawCpuSpread = ratioSpread(sliceCpuRatios);
    const cpuMedian = (way: keyof typeof ways, side: "client" | "server") => {
      const values = cpuPerEntity[way].map((c) => c[side]);
      return values.includes(undefined) ? null : round(median(values as number[]) * 1000, 2);
    };
    const cpuMicrosPerEntity = Object.fromEntries(
      names().map((way) => [way, { client: cpuMedian(way, "client"), azurite: cpuMedian(way, "server") }]),
    );
    return {
      entities: {
        single: entities,
        rawTransactions: 10 * entities,
        batchedSameConcurrency: 10 * entities,
        batched: 10 * entities,
      },
      partitions,
      concurrency,
      rounds,
      singlePerSec: round(singlePerSec, 1),
      batchedPerSec: round(batchedPerSec, 1),
      batchedSameConcurrencyPerSec: round(batchedSameConcurrencyPerSec, 1),
      rawTransactionPerSec: round(rawTransactionPerSec, 1),
      ratio: paired("batched"),
      ratioOfMedians: round(batchedPerSec / singlePerSec, 2),
      ratioSameConcurrency: paired("batchedSameConcurrency"),
      rawRatio: paired("rawTransactions"),
      /** The median over slice pairs of raw seconds / writeBatch seconds (the same entities): the goal's figure. */
      batchedVsRaw: round(batchedVsRawSpread.median, 3),
      batchedVsRawSpread,
      /** The same per round (the sum of its slices), and the ratio of the median rates, for comparison. */
      batchedVsRawRounds: roundRatios,
      batchedVsRawOfMedians: round(batchedSameConcurrencyPerSec / rawTransactionPerSec, 3),
      /** The median over slice pairs of raw CPU / writeBatch CPU (this process + Azurite, the same entities). */
      batchedVsRawCpu: Number.isNaN(batchedVsRawCpuSpread.median) ? null : batchedVsRawCpuSpread.median,
      batchedVsRawCpuSpread,
      /** Median CPU µs per entity of each way: `client` is this process (SDK + library), `azurite` the emulator. */
      cpuMicrosPerEntity,
      goal: "ratio >= 8",
      runs: Object.fromEntries(Object.entries(perSec).map(([way, values]) => [way, values.map((v) => round(v, 1))])),
      scaleBySize: scale.bySize,
      scaleBySizeGrowth: growthOf(scale.bySize.map((p) => ({ x: p.operations, y: p.msPerTransaction }))),
      scaleByPayload: scale.byPayload,
      scaleByPayloadGrowth: growthOf(scale.byPayload.map((p) => ({ x: p.payloadBytes, y: p.msPerEntity }))),
    };
  },
};
