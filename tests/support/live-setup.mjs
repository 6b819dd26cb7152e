// Global setup of `npm run test:live` (every project of jest.live.config.js runs it; the second call
// finds the run already set up). It marks the run as live for tests/support/target.ts and
// tests/support/files.ts, points the integration tests at the account in
// AZURE_STORAGE_CONNECTION_STRING, gives the run a unique name prefix (every container, queue,
// table and share it creates starts with it; live-teardown.mjs deletes them all), and says plainly
// whether there is an account to run on.
//
// ASC_LIVE_ALLOW_EMULATOR=1 accepts an emulator's connection string as "the account": only to check
// the live run's own mechanics (prefix, skips, sweep) where no real account is at hand. The Files
// suite still skips then (Azurite has no Files service), and the conformance suite holds the
// emulator to the service's answers (it fails on the documented differences).
import { randomBytes } from "node:crypto";
import { tsImport } from "tsx/esm/api";

const EMULATOR = /UseDevelopmentStorage=true|AccountName=devstoreaccount1\b|127\.0\.0\.1|localhost/i;

/** The account to run on: AZURE_STORAGE_CONNECTION_STRING when it names a real one (see above for emulators). */
export function liveAccount() {
  const value = process.env.AZURE_STORAGE_CONNECTION_STRING?.trim();
  const emulator = Boolean(value && EMULATOR.test(value));
  const usable = Boolean(value) && (!emulator || process.env.ASC_LIVE_ALLOW_EMULATOR === "1");
  return { value, emulator, usable };
}

export default async function liveSetup() {
  process.env.ASC_FILES_TARGET = "live";
  process.env.ASC_STORAGE_TARGET = "live";
  if (process.env.ASC_LIVE_SETUP_DONE) return;
  process.env.ASC_LIVE_SETUP_DONE = "1";

  const { value, emulator, usable } = liveAccount();
  const line = "-".repeat(78);
  if (!usable) {
    console.log(
      `\n${line}\nLIVE SUITE SKIPPED: AZURE_STORAGE_CONNECTION_STRING does not name a real storage account\n` +
        `(it is ${value ? "set to the local emulator" : "not set"}). Nothing was verified against Azure Storage in this run.\n${line}`,
    );
    return;
  }
  const { restAccountOf } = await tsImport("./storage-rest.ts", import.meta.url);
  const account = restAccountOf(value);
  if (!account.key) {
    throw new Error(
      "The live suite needs the account key in AZURE_STORAGE_CONNECTION_STRING (AccountName=…;AccountKey=…): " +
        "it signs REST requests and makes SAS tokens with it. A SAS connection string cannot run it.",
    );
  }
  process.env.ASC_RUN_PREFIX ??= `asc${randomBytes(4).toString("hex")}`;
  process.env.ASC_TEST_CONNECTION_STRING = value;
  process.env.ASC_TEST_BLOB_ENDPOINT = account.endpoints.blob;
  process.env.ASC_TEST_QUEUE_ENDPOINT = account.endpoints.queue;
  process.env.ASC_TEST_TABLE_ENDPOINT = account.endpoints.table;
  console.log(
    `\n${line}\nLIVE SUITE: running against account ${account.name}${emulator ? " (an emulator: checking the live run's mechanics only)" : ""}.\n` +
      `Every container, queue, table and share it creates is named '${process.env.ASC_RUN_PREFIX}…' and deleted at the end.\n${line}`,
  );
}
