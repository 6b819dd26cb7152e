/**
 * Where the integration tests run: the Azurite that global-setup started (`npm test`), or the real
 * account in AZURE_STORAGE_CONNECTION_STRING (`npm run test:live`, which sets ASC_STORAGE_TARGET to
 * `live` in tests/support/live-setup.mjs and points ASC_TEST_CONNECTION_STRING at the account).
 *
 * A test that needs what only Azurite (or a local stand-in) offers (a fault proxy over plain HTTP,
 * an answer only Azurite gives) ends its title with {@link AZURITE_ONLY}: the live run leaves those
 * out by name (jest.live.config.js `testNamePattern`), and reports them as skipped. A live run
 * without a real account collects only the suites that skip themselves (`describeStorage`), and its
 * setup says why nothing ran.
 */

/** The end of the title of a test that needs Azurite's hooks: skipped by `npm run test:live`. */
export const AZURITE_ONLY = "[Azurite only]";

/** `"live"` under `npm run test:live`, else `"azurite"`. */
export const storageTarget: "live" | "azurite" = process.env.ASC_STORAGE_TARGET === "live" ? "live" : "azurite";

/**
 * The real account's connection string, when AZURE_STORAGE_CONNECTION_STRING names one (not an
 * emulator's; with ASC_LIVE_ALLOW_EMULATOR=1 an emulator's too, to check the live run's mechanics).
 */
export function liveConnectionString(): string | undefined {
  const value = process.env.AZURE_STORAGE_CONNECTION_STRING?.trim();
  if (!value) return undefined;
  const emulator = /UseDevelopmentStorage=true|AccountName=devstoreaccount1\b|127\.0\.0\.1|localhost/i.test(value);
  return emulator && process.env.ASC_LIVE_ALLOW_EMULATOR !== "1" ? undefined : value;
}

/** True when the run is live but has no account to run on: storage tests are skipped. */
export const liveWithoutAccount = storageTarget === "live" && liveConnectionString() === undefined;

/**
 * `describe` for tests that talk to storage: on Azurite, or live; skipped when live has no account.
 * Looked up when called, not when this module loads: worker processes import this module (through
 * storage.ts) outside jest, where there is no `describe`.
 */
export const describeStorage = ((name: string, fn: () => void) =>
  liveWithoutAccount ? describe.skip(name, fn) : describe(name, fn)) as typeof describe;
