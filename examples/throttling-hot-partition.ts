/**
 * A hot partition, slowed down instead of hammered: 32 writers upsert into one table partition
 * that serves 20 requests a second (well under what a loaded laptop's Azurite serves, so that the
 * model, not the machine, is the limit), first with plain exponential retries, then through an
 * AdaptiveRateLimiter (one send rate per partition, learned from the 503s) and a RetryBudget.
 *
 * On the embedded Azurite, the testing kit's throttling model stands in for the service's limit
 * (Azurite itself never throttles); on a real account nothing is modelled, the partition is far
 * from its 2,000 entities a second, and the limiter never has to slow anything down.
 */
import { TableClient } from "@azure/data-tables";
import {
  AdaptiveRateLimiter,
  isRetryBudgetExhaustedError,
  RetryBudget,
  throttleScopeOf,
} from "azure-storage-concurrency/throttling";
import { retry, SDK_SINGLE_ATTEMPT } from "azure-storage-concurrency/retry";
import { buildConnectionString, createFaultProxy } from "azure-storage-concurrency/testing";
import { runIfMain, type ExampleContext } from "./support/run-example.js";

export const title = "Throttling: a hot partition slowed down by an adaptive limiter, not hammered";

const WRITERS = 32;
const SECONDS = 2;
/** The modelled partition's capacity, requests per second. */
const PARTITION_RATE_PER_SEC = 20;

export async function main({ connectionString, azurite, log }: ExampleContext): Promise<void> {
  const proxy = azurite
    ? await createFaultProxy({
        target: azurite.tableEndpoint,
        throttling: { partitionRatePerSec: PARTITION_RATE_PER_SEC },
      })
    : undefined;
  const through = proxy ? buildConnectionString({ tableEndpoint: proxy.endpoint }) : connectionString;
  const tableName = `throttling${Date.now()}`;
  const table = TableClient.fromConnectionString(through, tableName, {
    allowInsecureConnection: through.includes("http://"),
    retryOptions: SDK_SINGLE_ATTEMPT.tables, // retry() is the one place that retries
  });
  await TableClient.fromConnectionString(connectionString, tableName, {
    allowInsecureConnection: connectionString.includes("http://"),
  }).createTable();
  try {
    for (const adaptive of [false, true]) {
      const rateLimiter = adaptive ? new AdaptiveRateLimiter() : undefined;
      const budget = adaptive ? new RetryBudget() : undefined;
      const partitionKey = adaptive ? "hot-adaptive" : "hot-plain";
      const throttleScope = throttleScopeOf(`${table.url}/${tableName}`, { service: "table", partitionKey });
      proxy?.throttling?.resetStats();
      let done = 0;
      let gaveUp = 0;
      const deadline = performance.now() + SECONDS * 1000;
      await Promise.all(
        Array.from({ length: WRITERS }, async (_, writer) => {
          for (let n = 0; performance.now() < deadline; n++) {
            const entity = { partitionKey, rowKey: `${writer}-${n}`, n };
            try {
              await retry(({ abortSignal }) => table.upsertEntity(entity, "Replace", { abortSignal }), {
                maxRetries: 3,
                ...(rateLimiter ? { rateLimiter, throttleScope } : {}),
                ...(budget ? { budget } : {}),
              });
              done += 1;
            } catch (error) {
              if (!isRetryBudgetExhaustedError(error) && !(error as { transient?: boolean }).transient) throw error;
              gaveUp += 1;
            }
          }
        }),
      );
      const stats = proxy?.throttling?.stats();
      const refused = stats ? ` ${stats.serverBusy} of ${stats.admitted + stats.serverBusy} requests answered 503 ServerBusy;` : ""; // prettier-ignore
      log(
        `${adaptive ? "adaptive limiter + budget" : "plain exponential retries"}: ${Math.round(done / SECONDS)} upserts/s` +
          `${proxy ? ` (the partition serves ${PARTITION_RATE_PER_SEC})` : ""};${refused} ${gaveUp} gave up` +
          (rateLimiter ? `; the partition's learned rate: ${describeRate(rateLimiter, throttleScope.partition!)}` : ""),
      );
    }
  } finally {
    await table.deleteTable().catch(() => undefined);
    await proxy?.close();
  }
}

function describeRate(limiter: AdaptiveRateLimiter, key: string): string {
  const state = limiter.stateOf(key);
  return state?.limited ? `${Math.round(state.ratePerSec)} requests/s` : "never throttled, not limited";
}

runIfMain(import.meta.url, { title, main });
