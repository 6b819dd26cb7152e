/**
 * An optimistic counter in a table entity: many writers, each with its own client, increment it
 * at once with Update Entity and If-Match; every increment lands exactly once. Then: keys the
 * service would refuse are refused here, before any request.
 */
import { TableClient } from "@azure/data-tables";
import { isTableKeyError } from "azure-storage-concurrency/tables";
import { optimisticUpdate, readCell, tableEntityCell } from "azure-storage-concurrency/optimistic";
import { runIfMain, type ExampleContext } from "./support/run-example.js";

export const title = "Optimistic concurrency: a table entity counter with many writers, none lost";

const WRITERS = 6;
const INCREMENTS = 10;

interface PageViews {
  views: number;
  lastWriter: string;
}

export async function main({ connectionString, log }: ExampleContext): Promise<void> {
  const tableName = `optimisticdemo${Date.now()}`;
  const table = TableClient.fromConnectionString(connectionString, tableName, { allowInsecureConnection: true });
  await table.createTable();
  try {
    let conflicts = 0;
    await Promise.all(
      Array.from({ length: WRITERS }, async (_, writer) => {
        const client = TableClient.fromConnectionString(connectionString, tableName, { allowInsecureConnection: true });
        const counter = tableEntityCell<PageViews>(client, "pages", "home");
        for (let i = 0; i < INCREMENTS; i++) {
          await optimisticUpdate(
            counter,
            (current) => ({ views: (current?.views ?? 0) + 1, lastWriter: `writer ${writer}` }),
            {
              coalesce: false, // let them race, as writers in different processes would
              maxAttempts: 50,
              onConflict: () => void conflicts++,
            },
          );
        }
      }),
    );
    const final = await readCell(tableEntityCell<PageViews>(table, "pages", "home"));
    log(
      `${WRITERS} writers x ${INCREMENTS} increments: views = ${final.exists ? final.value.views : 0} (expected ${WRITERS * INCREMENTS}), last written by ${final.exists ? final.value.lastWriter : "nobody"}`,
    );
    log(
      `${conflicts} conflicts (412 UpdateConditionNotSatisfied, 409 EntityAlreadyExists) were retried after a jittered wait`,
    );

    try {
      tableEntityCell(table, "pages", "2024/01/home");
    } catch (error) {
      if (!isTableKeyError(error)) throw error;
      log(`refused before any request: ${error.message.split(":")[0]} ('/' is not allowed in table keys)`);
    }
  } finally {
    await table.deleteTable();
  }
}

runIfMain(import.meta.url, { title, main });
