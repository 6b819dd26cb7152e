/**
 * `inbox`: the idempotency inbox as it grows (issue 14): the latency of a claim and its done mark
 * as the inbox table grows from 0 to `--max-rows` rows (it must stay flat: both are point writes
 * on the key's own row, whatever else the table holds), and the rate at which `purge()` deletes
 * expired records.
 *
 * - Growth: the table is filled in steps with done records (as the store writes them), in
 *   100-row entity group transactions, several in flight; one row in five has expired (its
 *   retention ended an hour ago), the others are within their retention, as in an inbox that is
 *   purged now and then. Filling is not timed.
 * - At each size, `--samples` claim + complete cycles on fresh keys, one at a time, are timed for
 *   the library (`TableIdempotencyStore.claim` then `complete`, two requests: an insert and a Merge
 *   with If-Match) and for the same two requests on raw SDK calls, alternating, so that the
 *   machine's load falls on both alike.
 * - Purge: at the largest size, `purge()` with its defaults (8 deletes in flight, each with the
 *   ETag its scan read) scans the whole table and deletes the expired fifth: rows deleted per
 *   second, from the start of the scan to the end.
 *
 * `--quick` (10,000 rows, 50 samples per size) checks that the scenario works in a few seconds.
 */
import type { TableClient, TransactionAction } from "@azure/data-tables";
import { numberFlag } from "../../internal/args.js";
import { forEachConcurrently } from "../../internal/pool.js";
import { importSdk } from "../../internal/sdk.js";
import { TableIdempotencyStore } from "azure-storage-concurrency/idempotency";
import { median, round, type BenchScenario } from "../harness.js";

/** One row in this many of the fill has expired: what `purge()` deletes. */
const EXPIRED_EVERY = 5;
/** Transactions in flight while filling. */
const FILL_CONCURRENCY = 8;

/** The q-quantile (0..1) of `values`, nearest rank. */
function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
}

/** Fills `table` with done records `from`..`to`-1, in 100-row transactions (each 100 rows share a partition). */
async function fill(table: TableClient, store: TableIdempotencyStore, from: number, to: number): Promise<void> {
  const now = Date.now();
  const chunks: TransactionAction[][] = [];
  for (let start = from; start < to; start += 100) {
    const chunk: TransactionAction[] = [];
    for (let i = start; i < Math.min(start + 100, to); i++) {
      const key = `filled-${i}`;
      const expired = i % EXPIRED_EVERY === 0;
      const entity = {
        ...store.rowOf(key, `fill-${Math.floor(i / 100)}`),
        Key: key,
        Status: "done",
        Owner: "bench",
        MessageId: `m-${i}`,
        DequeueCount: 1,
        ClaimExpiresOn: new Date(now - 7_200_000),
        CompletedOn: new Date(now - 7_200_000),
        ExpiresOn: new Date(expired ? now - 3_600_000 : now + 7 * 24 * 3_600_000),
        Result: '{"ok":true}',
      };
      chunk.push(["create", entity]);
    }
    chunks.push(chunk);
  }
  await forEachConcurrently(chunks.length, FILL_CONCURRENCY, (i) => table.submitTransaction(chunks[i]!));
}

export const inboxScenario: BenchScenario<typeof import("@azure/data-tables")> = {
  name: "inbox",
  description: "idempotency inbox: claim + complete latency as the table grows, and purge() rows per second",
  flags: {
    "--max-rows <n>": "rows the inbox grows to (default 100000)",
    "--steps <n>": "sizes measured after the empty table, evenly up to --max-rows (default 4)",
    "--samples <n>": "claim + complete cycles timed per size, for the library and for raw SDK calls each (default 200)",
    "--quick": "a short run to check the scenario: 10000 rows, 50 samples per size",
  },
  services: ["table"],
  timeLimitInSec: 600,
  loadSdks: () => importSdk(() => import("@azure/data-tables"), "@azure/data-tables"),
  async run({ connectionString, args, log }, { TableClient }) {
    const quick = args["quick"] === true;
    const maxRows = numberFlag(args, "max-rows", quick ? 10_000 : 100_000, 100);
    const steps = numberFlag(args, "steps", 4, 1);
    const samples = numberFlag(args, "samples", quick ? 50 : 200, 10);
    const table = TableClient.fromConnectionString(connectionString, `benchinbox${Date.now().toString(36)}`, {
      allowInsecureConnection: connectionString.includes("http://"),
    });
    await table.createTable();
    const store = new TableIdempotencyStore(table);
    let serial = 0;

    /** One claim and its done mark through the library. */
    const library = async () => {
      const key = `sample-${(serial += 1)}`;
      const outcome = await store.claim({
        key,
        owner: "bench",
        messageId: `s-${serial}`,
        dequeueCount: 2,
        ttlInMs: 60_000,
      });
      if (outcome.status !== "claimed") throw new Error(`key '${key}' was not claimed: ${outcome.status}`);
      await store.complete(outcome.claim, { result: { ok: true } });
    };
    /** The same two requests on raw SDK calls: an insert, then a Merge with If-Match. */
    const raw = async () => {
      const key = `raw-${(serial += 1)}`;
      const row = { partitionKey: key, rowKey: `raw:${key}` };
      const created = await table.createEntity({ ...row, Status: "claimed", Owner: "bench" });
      await table.updateEntity({ ...row, Status: "done", Result: '{"ok":true}' }, "Merge", { etag: created.etag! });
    };
    const time = async (cycle: () => Promise<void>) => {
      const started = performance.now();
      await cycle();
      return performance.now() - started;
    };

    const sizes = [0, ...Array.from({ length: steps }, (_, i) => Math.round((maxRows * (i + 1)) / steps))];
    const growth: {
      rows: number;
      claimCompleteP50Ms: number;
      claimCompleteP99Ms: number;
      rawP50Ms: number;
      rawP99Ms: number;
    }[] = [];
    let filled = 0;
    let fillSeconds = 0;
    let purge: { scannedRows: number; deleted: number; changed: number; failed: number; seconds: number } | undefined;
    try {
      // A warm-up, not counted: connections, the table's first writes.
      for (let i = 0; i < 20; i++) await Promise.all([library(), raw()]);
      for (const size of sizes) {
        const started = performance.now();
        await fill(table, store, filled, size);
        fillSeconds += (performance.now() - started) / 1000;
        filled = Math.max(filled, size);
        const libraryMs: number[] = [];
        const rawMs: number[] = [];
        for (let i = 0; i < samples; i++) {
          // Alternate which goes first, so that neither always follows the other.
          if (i % 2 === 0) {
            libraryMs.push(await time(library));
            rawMs.push(await time(raw));
          } else {
            rawMs.push(await time(raw));
            libraryMs.push(await time(library));
          }
        }
        const point = {
          rows: size,
          claimCompleteP50Ms: round(median(libraryMs), 2),
          claimCompleteP99Ms: round(quantile(libraryMs, 0.99), 2),
          rawP50Ms: round(median(rawMs), 2),
          rawP99Ms: round(quantile(rawMs, 0.99), 2),
        };
        growth.push(point);
        log(
          `${size} rows: claim + complete p50 ${point.claimCompleteP50Ms} ms, p99 ${point.claimCompleteP99Ms} ms (raw ${point.rawP50Ms} / ${point.rawP99Ms} ms)`,
        );
      }
      const started = performance.now();
      const result = await store.purge();
      const seconds = (performance.now() - started) / 1000;
      // The filled rows, and those the warm-up and the timed cycles wrote (one each for the library and raw).
      purge = { scannedRows: filled + 2 * (20 + sizes.length * samples), ...result, seconds };
      log(`purge: ${result.deleted} of ${result.expired} expired rows deleted in ${round(seconds, 1)} s`);
      const expected = Math.ceil(filled / EXPIRED_EVERY);
      if (result.deleted !== expected) throw new Error(`purge deleted ${result.deleted} rows, ${expected} had expired`);
    } finally {
      await table.deleteTable().catch(() => undefined);
    }
    const first = growth[0]!;
    const last = growth[growth.length - 1]!;
    return {
      maxRows,
      steps,
      samples,
      expiredShare: round(1 / EXPIRED_EVERY, 2),
      fillRowsPerSec: fillSeconds > 0 ? round(filled / fillSeconds, 0) : null,
      growth,
      claimCompleteP50GrowthRatio: round(last.claimCompleteP50Ms / first.claimCompleteP50Ms, 2),
      claimCompleteP99GrowthRatio: round(last.claimCompleteP99Ms / first.claimCompleteP99Ms, 2),
      rawP50GrowthRatio: round(last.rawP50Ms / first.rawP50Ms, 2),
      purgeScannedRows: purge?.scannedRows ?? null,
      purgeDeletedRows: purge?.deleted ?? null,
      purgeChangedRows: purge?.changed ?? null,
      purgeFailedRows: purge?.failed ?? null,
      purgeSeconds: purge ? round(purge.seconds, 2) : null,
      purgeRowsPerSec: purge && purge.seconds > 0 ? round(purge.deleted / purge.seconds, 0) : null,
    };
  },
};
