// Global teardown of `npm run test:live`: deletes everything the run created in the account (every
// container, queue, table and share whose name starts with the run's prefix), whatever the tests
// left behind, and says what it deleted. Runs once, after every project.
import { tsImport } from "tsx/esm/api";

export default async function liveTeardown() {
  const prefix = process.env.ASC_RUN_PREFIX;
  const connectionString = process.env.ASC_TEST_CONNECTION_STRING;
  if (!prefix || !connectionString || process.env.ASC_LIVE_SWEPT) return;
  process.env.ASC_LIVE_SWEPT = "1";
  const { sweepRun } = await tsImport("./live-sweep.ts", import.meta.url);
  const swept = await sweepRun(connectionString, prefix);
  console.log(
    `\nLIVE SUITE: deleted ${swept.containers} containers, ${swept.queues} queues, ${swept.tables} tables and ` +
      `${swept.shares} shares named '${prefix}…'` +
      (swept.failed.length ? `; could not delete ${swept.failed.join(", ")}` : "") +
      ".\n",
  );
}
