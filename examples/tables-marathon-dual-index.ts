/**
 * The partitioning guide's marathon example: each runner is stored twice in the race's partition,
 * under `BIB:` and `AGE:` RowKeys, so that both important queries (by bib number, by age) are a
 * point query or a row range scan. Both rows are written, changed and deleted together, in one
 * entity group transaction checked with ETags.
 */
import { TableClient } from "@azure/data-tables";
import {
  classifyQuery,
  compositeKey,
  isMultiIndexConflictError,
  keyFilter,
  multiIndexTable,
  padNumber,
  queryEntities,
} from "azure-storage-concurrency/tables";
import { runIfMain, type ExampleContext } from "./support/run-example.js";

export const title = "Tables: the marathon dual index (BIB: and AGE: rows in one transaction)";

interface Runner {
  race: string;
  distance: string;
  bib: number;
  name: string;
  gender: string;
  age: number;
  finish?: string;
  [property: string]: unknown;
}

export async function main({ connectionString, log }: ExampleContext): Promise<void> {
  const client = TableClient.fromConnectionString(connectionString, `marathon${Date.now()}`, {
    allowInsecureConnection: connectionString.includes("http://"),
  });
  await client.createTable();
  try {
    const runners = multiIndexTable<Runner>(client, {
      partitionKey: (r) => compositeKey([r.race, r.distance]), // "2011 New York City Marathon__Full"
      indexes: {
        BIB: (r) => compositeKey([padNumber(r.bib, 5), r.name, r.gender, String(r.age)]), // BIB:01234__John__M__55
        AGE: (r) => compositeKey([padNumber(r.age, 3), String(r.bib), r.name, r.gender]), // AGE:055__1234__John__M
      },
    });
    const race = { race: "2011 New York City Marathon", distance: "Full" };
    const partition = compositeKey([race.race, race.distance]);
    for (const [bib, name, gender, age] of [
      [1234, "John", "M", 55],
      [2001, "Maria", "F", 55],
      [305, "Ken", "M", 41],
    ] as const) {
      const { rowKeys } = await runners.create({ ...race, bib, name, gender, age });
      log(`registered ${name}: rows ${rowKeys.BIB} and ${rowKeys.AGE}, one transaction`);
    }

    // Query by age: a row range scan over the AGE: rows of one partition.
    const filter = keyFilter({ partitionKey: partition, rowKeyPrefix: "AGE:055" });
    const byAge = await queryEntities(client, { filter });
    log(
      `runners aged 55: ${byAge.entities.map((e) => e.name).join(", ")} (${byAge.shape.kind}, ${byAge.roundTrips} round trip)`,
    );
    log(
      `by bib, a point query: ${classifyQuery(`PartitionKey eq '${partition}' and RowKey eq 'BIB:01234__John__M__55'`).kind}`,
    );
    log(
      `by age over all races, without the partition: ${classifyQuery("age eq 55").kind}; keep the partition in the filter`,
    );

    // A birthday moves John's AGE row and rewrites his BIB row, atomically.
    const john = await runners.get(partition, "BIB", "01234__John__M__55");
    const older = await runners.update(john!, { ...john!.record, age: 56 });
    log(`John turned 56: rows are now ${older.rowKeys.BIB} and ${older.rowKeys.AGE}`);

    // A writer still holding the old read loses, and nothing it wrote lands.
    const stale = await runners.update(john!, { ...john!.record, name: "Johnny" }).catch((e: unknown) => e);
    if (isMultiIndexConflictError(stale))
      log(`a change based on the old read is refused (${stale.code}, ${stale.reason}); read again and retry`);

    // modify() does the read-change-write loop itself, again on conflict.
    await runners.modify(partition, "BIB", "00305__Ken__M__41", (r) => ({ ...r, finish: "3:02:11" }));
    const listed = await runners.list(partition, "AGE");
    log(
      `AGE index, in order: ${listed.entries.map((e) => `${e.key}${e.record.finish ? ` (finished ${e.record.finish})` : ""}`).join(" | ")}`,
    );
  } finally {
    await client.deleteTable();
  }
}

runIfMain(import.meta.url, { title, main });
