/**
 * The partitioning guide's bank example: a transfer has a debit and a credit that must sum to zero,
 * so both are written atomically. An entity group transaction covers one PartitionKey, so the
 * account number cannot be the partition (the two legs have different accounts); the transfer id
 * can. writeAtomic() commits the legs together, or refuses before sending anything.
 */
import { randomUUID } from "node:crypto";
import { TableClient } from "@azure/data-tables";
import {
  isTableTransactionError,
  isTransactionRefusedError,
  queryEntities,
  keyFilter,
  writeAtomic,
} from "azure-storage-concurrency/tables";
import { runIfMain, type ExampleContext } from "./support/run-example.js";

export const title = "Tables: a bank transfer recorded atomically, the transfer id as partition";

export async function main({ connectionString, log }: ExampleContext): Promise<void> {
  const ledger = TableClient.fromConnectionString(connectionString, `ledger${Date.now()}`, {
    allowInsecureConnection: connectionString.includes("http://"),
  });
  await ledger.createTable();
  try {
    const transfer = (id: string, from: string, to: string, amount: number) => {
      const partitionKey = `transfer-${id}`;
      return [
        ["create", { partitionKey, rowKey: "transfer", from, to, amount, at: new Date() }],
        ["create", { partitionKey, rowKey: "debit", account: from, amount: -amount }],
        ["create", { partitionKey, rowKey: "credit", account: to, amount }],
      ] as const;
    };

    const id = randomUUID();
    const committed = await writeAtomic(ledger, transfer(id, "alice", "bob", 25));
    const rows = await queryEntities<{ amount: number }>(ledger, {
      filter: keyFilter({ partitionKey: `transfer-${id}` }),
    });
    const sum = rows.entities.filter((e) => e.rowKey !== "transfer").reduce((total, e) => total + e.amount, 0);
    log(`transfer ${id.slice(0, 8)}: ${committed.etags.length} rows in one transaction; debit + credit = ${sum}`);

    // Sending the same transfer twice (a retry after a lost answer, say) cannot book it twice:
    // the whole transaction fails on its first row, and nothing of it is applied.
    const again = await writeAtomic(ledger, transfer(id, "alice", "bob", 25)).catch((e: unknown) => e);
    if (isTableTransactionError(again)) {
      log(
        `the same transfer again: ${again.statusCode} ${again.serviceCode} at action ${again.failedActionIndex}; nothing applied`,
      );
    }

    // Keyed by account, the legs land in two partitions: refused before anything is sent.
    const byAccount = await writeAtomic(ledger, [
      ["create", { partitionKey: "account-alice", rowKey: id, amount: -25 }],
      ["create", { partitionKey: "account-bob", rowKey: id, amount: 25 }],
    ]).catch((e: unknown) => e);
    if (isTransactionRefusedError(byAccount)) log(`legs keyed by account: refused (${byAccount.reason}), nothing sent`);

    const all = await queryEntities(ledger);
    log(`the ledger holds ${all.entities.length} rows: one transfer, booked once`);
  } finally {
    await ledger.deleteTable();
  }
}

runIfMain(import.meta.url, { title, main });
