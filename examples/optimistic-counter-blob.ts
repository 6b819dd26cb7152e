/**
 * An optimistic counter in a JSON blob: many writers, each with its own client, increment it at
 * once; every increment lands exactly once.
 *
 * On the embedded Azurite a fault proxy also loses 5% of the write responses after the service
 * applied the write: the loop recognises those writes as its own instead of applying them twice.
 * On a real account there is nothing to inject and the writers simply race.
 */
import { BlobServiceClient } from "@azure/storage-blob";
import { blobJsonCell, optimisticUpdate, readCell } from "azure-storage-concurrency/optimistic";
import { buildConnectionString, createFaultProxy } from "azure-storage-concurrency/testing";
import { runIfMain, type ExampleContext } from "./support/run-example.js";

export const title = "Optimistic concurrency: a blob counter with many writers, none lost";

const WRITERS = 8;
const INCREMENTS = 10;

export async function main({ connectionString, azurite, log }: ExampleContext): Promise<void> {
  const containerName = `optimistic-demo-${Date.now()}`;
  const container = BlobServiceClient.fromConnectionString(connectionString).getContainerClient(containerName);
  await container.create();
  const proxy = azurite ? await createFaultProxy({ target: azurite.blobEndpoint }) : undefined;
  try {
    const target = proxy ? buildConnectionString({ blobEndpoint: proxy.endpoint }) : connectionString;
    proxy?.addRule({ method: "PUT", path: /visits\.json/, probability: 0.05, action: { type: "dropResponse" } });
    // One writer creates the counter before the race: creates racing while an answer is lost can end
    // in "unknown" (no read can tell a lost create from one replaced later; see the docs).
    await optimisticUpdate(blobJsonCell<{ visits: number }>(container.getBlockBlobClient("visits.json")), () => ({
      visits: 0,
    }));
    let conflicts = 0;
    let recovered = 0;
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        // Each writer has its own client, as separate processes or machines would.
        const blob = BlobServiceClient.fromConnectionString(target, {
          retryOptions: { maxTries: 4, retryDelayInMs: 20 },
        })
          .getContainerClient(containerName)
          .getBlockBlobClient("visits.json");
        const counter = blobJsonCell<{ visits: number }>(blob);
        for (let i = 0; i < INCREMENTS; i++) {
          const result = await optimisticUpdate(counter, (current) => ({ visits: (current?.visits ?? 0) + 1 }), {
            coalesce: false, // let them race, as writers in different processes would
            maxAttempts: 50,
            onConflict: () => void conflicts++,
          });
          if (result.recoveredLostResponse) recovered++;
        }
      }),
    );
    const final = await readCell(blobJsonCell<{ visits: number }>(container.getBlockBlobClient("visits.json")));
    log(
      `${WRITERS} writers x ${INCREMENTS} increments: the counter says ${final.exists ? final.value.visits : 0} (expected ${WRITERS * INCREMENTS})`,
    );
    log(`${conflicts} conflicts (412/409) were retried after a jittered wait`);
    if (proxy) {
      const dropped = proxy.requests.filter((r) => r.outcome === "dropResponse").length;
      log(
        `${dropped} write responses were lost on the way back; ${recovered} of those writes had been applied and were recognised as such (the others had met a conflict), none counted twice`,
      );
    }

    // Concurrent updates within one process share one read and one write (coalescing, the default).
    const shared = blobJsonCell<{ visits: number }>(container.getBlockBlobClient("visits.json"));
    const results = await Promise.all(
      Array.from({ length: 20 }, () => optimisticUpdate(shared, (c) => ({ visits: c!.visits + 1 }))),
    );
    log(
      `20 concurrent updates in one process shared ${new Set(results.map((r) => r.etag)).size} write; the counter is now ${results.at(-1)!.value!.visits}`,
    );
  } finally {
    await container.delete();
    await proxy?.close();
  }
}

runIfMain(import.meta.url, { title, main });
