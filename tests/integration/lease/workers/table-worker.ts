/**
 * Increments a table entity's counter under a partition-scoped table lock, read-modify-write.
 * Args: <lock container> <table> <partition key> <row key> <iterations>
 */
import { BlobServiceClient } from "@azure/storage-blob";
import { TableClient } from "@azure/data-tables";
import { tableLock } from "../../../../src/lease/index.js";

const [containerName, tableName, partitionKey, rowKey, iterations] = process.argv.slice(2);
const cs = process.env.ASC_TEST_CONNECTION_STRING!;
const container = BlobServiceClient.fromConnectionString(cs).getContainerClient(containerName!);
const table = TableClient.fromConnectionString(cs, tableName!, { allowInsecureConnection: true });
const lock = tableLock(container, table, {
  scope: { partitionKey: partitionKey! },
  durationInSeconds: 15,
  pollIntervalInMs: 20,
});

for (let i = 0; i < Number(iterations); i++) {
  await lock.withLock(
    async (guarded) => {
      const entity = await guarded.getEntity<{ count: number }>(partitionKey!, rowKey!);
      await guarded.updateEntity({ ...entity, count: entity.count + 1 }, "Replace", { etag: entity.etag });
      console.log(JSON.stringify({ token: guarded.handle.fencingToken, count: entity.count + 1 }));
    },
    { timeoutInMs: 60_000 },
  );
}
console.log(JSON.stringify({ done: true }));
