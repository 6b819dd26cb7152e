// Global setup of `npm run test:live`: marks the run as live for tests/support/files.ts, and says
// plainly whether there is an account to run on.
export default async function liveSetup() {
  process.env.ASC_FILES_TARGET = "live";
  const value = process.env.AZURE_STORAGE_CONNECTION_STRING?.trim();
  const real =
    value && !/UseDevelopmentStorage=true|AccountName=devstoreaccount1\b|127\.0\.0\.1|localhost/i.test(value);
  const line = "-".repeat(78);
  if (!real) {
    console.log(
      `\n${line}\nLIVE FILES SUITE SKIPPED: AZURE_STORAGE_CONNECTION_STRING does not name a real storage account\n` +
        `(it is ${value ? "set to the local emulator" : "not set"}). Nothing was verified against Azure Files in this run.\n${line}`,
    );
  } else {
    const account =
      /AccountName=([^;]+)/i.exec(value)?.[1] ??
      /FileEndpoint=([^;]+)/i.exec(value)?.[1] ??
      "(from a SAS connection string)";
    console.log(
      `\n${line}\nLIVE FILES SUITE: running against account ${account}. Shares named like 'files…' are created and deleted.\n${line}`,
    );
  }
}
