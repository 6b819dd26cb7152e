/**
 * Takes a partition-scoped table lock (15 s lease), reads the entity, says "ready", and a second
 * later writes it back. The test freezes this process (SIGSTOP) in that second, past its lease.
 * Args: <lock container> <table> <partition key> <row key>
 */
import { setTimeout as sleep } from "node:timers/promises";
import { BlobServiceClient } from "@azure/storage-blob";
import { TableClient } from "@azure/data-tables";
import { tableLock } from "../../../../src/lease/index.js";

const [containerName, tableName, partitionKey, rowKey] = process.argv.slice(2);
const cs = process.env.ASC_TEST_CONNECTION_STRING!;
const container = BlobServiceClient.fromConnectionString(cs).getContainerClient(containerName!);
const table = TableClient.fromConnectionString(cs, tableName!, { allowInsecureConnection: true });
const lock = tableLock(container, table, { scope: { partitionKey: partitionKey! }, durationInSeconds: 15 });

const guarded = await lock.acquire({ timeoutInMs: 30_000 });
const entity = await guarded.getEntity<{ owner: string }>(partitionKey!, rowKey!);
console.log(JSON.stringify({ ready: true, token: guarded.handle.fencingToken }));
await sleep(1_000);
try {
  await guarded.updateEntity({ ...entity, owner: "stale" }, "Replace");
  console.log(JSON.stringify({ written: true }));
} catch (error) {
  const e = error as { name?: string; code?: string };
  console.log(JSON.stringify({ refused: e.name, code: e.code }));
}
await guarded.handle.release();
