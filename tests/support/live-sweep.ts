/**
 * The live run's clean-up: deletes every container, queue, table and share whose name starts with
 * the run's prefix. A leased container or share has its lease broken first (a container's blobs go
 * with it whatever their leases). Each deletion is tried once and reported, never thrown: a sweep
 * that fails says what it left behind.
 */
import { TableServiceClient } from "@azure/data-tables";
import { BlobServiceClient } from "@azure/storage-blob";
import { ShareServiceClient } from "@azure/storage-file-share";
import { QueueServiceClient } from "@azure/storage-queue";
import { odataString } from "../../src/tables/index.js";

/** What a sweep deleted, and what it could not. */
export interface SweepResult {
  containers: number;
  queues: number;
  tables: number;
  shares: number;
  readonly failed: string[];
}

/** Deletes what the run named `prefix…` in the account of `connectionString`. */
export async function sweepRun(connectionString: string, prefix: string): Promise<SweepResult> {
  if (!/^[a-z][a-z0-9]{5,}$/.test(prefix)) throw new Error(`Refusing to sweep with the prefix '${prefix}'.`);
  const result: SweepResult = { containers: 0, queues: 0, tables: 0, shares: 0, failed: [] };
  const attempt = async (what: string, work: () => Promise<unknown>, count: () => void) => {
    try {
      await work();
      count();
    } catch (error) {
      result.failed.push(`${what} (${(error as Error).message.split("\n")[0]})`);
    }
  };
  const options = { retryOptions: { maxTries: 3 } };
  const blobs = BlobServiceClient.fromConnectionString(connectionString, options);
  for await (const item of blobs.listContainers({ prefix })) {
    const container = blobs.getContainerClient(item.name);
    await attempt(
      `container ${item.name}`,
      async () => {
        if (item.properties.leaseState === "leased" || item.properties.leaseState === "breaking") {
          await container.getBlobLeaseClient().breakLease(0);
        }
        await container.delete();
      },
      () => (result.containers += 1),
    );
  }
  const queues = QueueServiceClient.fromConnectionString(connectionString, options);
  for await (const item of queues.listQueues({ prefix })) {
    await attempt(
      `queue ${item.name}`,
      () => queues.deleteQueue(item.name),
      () => (result.queues += 1),
    );
  }
  const tables = TableServiceClient.fromConnectionString(connectionString, {
    allowInsecureConnection: /^DefaultEndpointsProtocol=http;|=http:\/\//i.test(connectionString),
    retryOptions: { maxRetries: 2 },
  });
  const filter = `TableName ge ${odataString(prefix)} and TableName lt ${odataString(`${prefix}{`)}`;
  for await (const item of tables.listTables({ queryOptions: { filter } })) {
    await attempt(
      `table ${item.name}`,
      () => tables.deleteTable(item.name!),
      () => (result.tables += 1),
    );
  }
  if (
    /FileEndpoint=|AccountName=(?!devstoreaccount1)/i.test(connectionString) &&
    !/127\.0\.0\.1|localhost/i.test(connectionString)
  ) {
    const shares = ShareServiceClient.fromConnectionString(connectionString, options);
    for await (const item of shares.listShares({ prefix })) {
      const share = shares.getShareClient(item.name);
      await attempt(
        `share ${item.name}`,
        async () => {
          if (item.properties.leaseState === "leased") {
            await share.getShareLeaseClient().breakLease({ breakPeriod: 0 } as never);
          }
          await share.delete({ deleteSnapshots: "include" });
        },
        () => (result.shares += 1),
      );
    }
  }
  return result;
}
