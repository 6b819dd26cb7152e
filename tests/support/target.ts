/**
 * Where the integration tests run: the Azurite that global-setup started (`npm test`), or the real
 * account in AZURE_STORAGE_CONNECTION_STRING (`npm run test:live`, which sets ASC_STORAGE_TARGET to
 * `live` in tests/support/live-setup.mjs and points ASC_TEST_CONNECTION_STRING at the account).
 *
 * Tests that need what only Azurite (or a local stand-in) offers (a fault proxy over plain HTTP,
 * Azurite's published key for SAS tokens, its extra accounts, several emulators) use
 * `describeAzuriteOnly` / `itAzuriteOnly` and are skipped live; a live run without a real account
 * skips every storage test (`describeStorage`), saying so once in the setup.
 */

/** `"live"` under `npm run test:live`, else `"azurite"`. */
export const storageTarget: "live" | "azurite" = process.env.ASC_STORAGE_TARGET === "live" ? "live" : "azurite";

/** The real account's connection string, when AZURE_STORAGE_CONNECTION_STRING names one (not Azurite's). */
export function liveConnectionString(): string | undefined {
  const value = process.env.AZURE_STORAGE_CONNECTION_STRING?.trim();
  if (!value || /UseDevelopmentStorage=true|AccountName=devstoreaccount1\b|127\.0\.0\.1|localhost/i.test(value))
    return undefined;
  return value;
}

/** True when the run is live but has no account to run on: storage tests are skipped. */
export const liveWithoutAccount = storageTarget === "live" && liveConnectionString() === undefined;

/** `describe` for tests that talk to storage: on Azurite, or live; skipped when live has no account. */
export const describeStorage: typeof describe = liveWithoutAccount ? describe.skip : describe;

/** `describe` for tests that need Azurite's (or a local stand-in's) hooks: skipped live. */
export const describeAzuriteOnly: typeof describe = storageTarget === "live" ? describe.skip : describe;

/** `it` for a test that needs Azurite's hooks: skipped live. */
export const itAzuriteOnly: typeof it = storageTarget === "live" ? it.skip : it;
