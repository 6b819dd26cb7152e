/**
 * Pessimistic table access as the source documents recommend: a blob lease guards a partition, and
 * every access path takes it before touching the table. Writes through the guarded table are
 * fenced: a holder that lost the lock without noticing cannot overwrite its successor's work.
 */
import { BlobServiceClient } from "@azure/storage-blob";
import { TableClient } from "@azure/data-tables";
import { isFencedWriteRejectedError, tableLock } from "azure-storage-concurrency/lease";
import { runIfMain, type ExampleContext } from "./support/run-example.js";

export const title = "Lease locks: a blob-lease table lock with fenced writes";

export async function main({ connectionString, log }: ExampleContext): Promise<void> {
  const suffix = Date.now();
  const locks = BlobServiceClient.fromConnectionString(connectionString).getContainerClient(`table-locks-${suffix}`);
  // allowInsecureConnection only matters for the emulator's http endpoint.
  const orders = TableClient.fromConnectionString(connectionString, `orders${suffix}`, {
    allowInsecureConnection: true,
  });
  await orders.createTable();
  await orders.createEntity({ partitionKey: "customer-42", rowKey: "totals", orderCount: 0 });

  // One lock per partition: the scope is the caller's choice (table, partition or entity).
  const lock = () => tableLock(locks, orders, { scope: { partitionKey: "customer-42" }, durationInSeconds: 15 });

  // Three workers add orders concurrently; the lock serialises their read-modify-writes.
  await Promise.all(
    ["worker-1", "worker-2", "worker-3"].map(async (worker) => {
      for (let i = 0; i < 3; i++) {
        await lock().withLock(async (guarded) => {
          const totals = await guarded.getEntity<{ orderCount: number }>("customer-42", "totals");
          await guarded.updateEntity({ ...totals, orderCount: totals.orderCount + 1 }, "Replace", {
            etag: totals.etag,
          });
        });
      }
      log(`${worker} added 3 orders`);
    }),
  );
  const totals = await orders.getEntity<{ orderCount: number; lockFencingToken: number }>("customer-42", "totals");
  log(`orderCount is ${totals.orderCount} (9 expected), last written under fencing token ${totals.lockFencingToken}`);

  // A stale holder: it read, then lost the lock (here: an operator broke it) and a successor wrote.
  const stale = await lock().acquire();
  const read = await stale.getEntity<{ orderCount: number }>("customer-42", "totals");
  await lock().lock.break();
  await lock().withLock(async (successor) => {
    const current = await successor.getEntity<{ orderCount: number }>("customer-42", "totals");
    await successor.updateEntity({ ...current, orderCount: current.orderCount + 1 }, "Replace", { etag: current.etag });
    log(`the successor (token ${successor.handle.fencingToken}) added an order`);
  });
  try {
    await stale.updateEntity({ ...read, orderCount: 0 }, "Replace", { etag: read.etag });
    log("the stale holder overwrote the successor's work (this must not happen)");
  } catch (error) {
    if (!isFencedWriteRejectedError(error)) throw error;
    log(`the stale holder (token ${error.fencingToken}) was refused: the entity carries token ${error.currentToken}`);
  }
  await stale.handle.release();
  log(`orderCount is ${(await orders.getEntity<{ orderCount: number }>("customer-42", "totals")).orderCount}`);
  await orders.deleteTable();
  await locks.delete();
}

runIfMain(import.meta.url, { title, main });
