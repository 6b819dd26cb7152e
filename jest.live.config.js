/**
 * `npm run test:live`: every feature's integration tests against the storage account in
 * AZURE_STORAGE_CONNECTION_STRING instead of Azurite and the Files responder (docs/service-conformance.md,
 * "The live suite"). Without a real account there, the run skips them and says so plainly
 * (tests/support/live-setup.mjs). Every resource the run creates is named with a run-unique prefix
 * and deleted at the end (tests/support/live-teardown.mjs).
 *
 * - `live`: the service conformance suite (the service's answers only) and the feature tests that do
 *   not need Azurite's hooks; the tests in these files that do (a fault proxy in front of plain HTTP,
 *   an answer only Azurite gives) end their titles with `[Azurite only]` and are left out by name.
 * - `files-live`: the Azure Files suite against the real Files service; tests that need the
 *   responder's hooks (simulated SMB clients, a hand-driven clock, fault injection) are skipped.
 */
import { shared } from "./jest.config.js";
import { liveAccount } from "./tests/support/live-setup.mjs";

/** The feature tests that run live, by feature. */
const FEATURE_TESTS = [
  // retry classifier and error reading, on the service's real answers
  "errors.test.ts",
  // optimistic cells
  "optimistic/blob-cells.test.ts",
  "optimistic/table-cell.test.ts",
  "optimistic/container-metadata.test.ts",
  // lease locks, leader election, the table lock
  "lease/lock.test.ts",
  "lease/election.test.ts",
  "lease/table-lock.test.ts",
  // queue consumer, idempotency stores, idempotent(), retention and purge, the poison queue
  "queue/consumer.test.ts",
  "queue/idempotency-stores.test.ts",
  "queue/idempotent.test.ts",
  "queue/retention.test.ts",
  "queue/poison.test.ts",
  // scheduled jobs (catch-up, a failing job, handover on stop, start failures)
  "schedule/schedule.test.ts",
  // table toolkit (its query paging is counted through a fault proxy: Azurite only; the purge's
  // paging runs live in queue/retention)
  "tables/batch.test.ts",
];

const live = {
  globalSetup: "<rootDir>/tests/support/live-setup.mjs",
  globalTeardown: "<rootDir>/tests/support/live-teardown.mjs",
};

export default {
  projects: [
    {
      ...shared,
      ...live,
      displayName: "live",
      // Without an account only the conformance suite is collected, and it skips itself: nothing
      // can fail for want of an account, and the setup's banner says why nothing ran.
      testMatch: [
        "<rootDir>/tests/integration/conformance.test.ts",
        ...(liveAccount().usable ? FEATURE_TESTS.map((file) => `<rootDir>/tests/integration/${file}`) : []),
      ],
    },
    {
      ...shared,
      ...live,
      displayName: "files-live",
      testMatch: ["<rootDir>/tests/integration/files/**/*.test.ts"],
    },
  ],
  // Leaves out the tests whose titles end with `[Azurite only]` (tests/support/target.ts).
  testNamePattern: "^(?!.*\\[Azurite only\\])",
  testTimeout: 120_000,
};
