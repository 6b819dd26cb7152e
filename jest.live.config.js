/**
 * `npm run test:live`: the Azure Files suite (tests/integration/files) against the storage account
 * in AZURE_STORAGE_CONNECTION_STRING instead of the in-process Files responder. Without a real
 * account there, the suite is skipped and the run says so plainly (tests/support/live-setup.mjs).
 * Tests that need the responder's hooks (simulated SMB clients, a hand-driven clock, fault
 * injection over plain HTTP) are skipped live.
 */
import { shared } from "./jest.config.js";

export default {
  projects: [
    {
      ...shared,
      displayName: "files-live",
      testMatch: ["<rootDir>/tests/integration/files/**/*.test.ts"],
      globalSetup: "<rootDir>/tests/support/live-setup.mjs",
    },
  ],
  testTimeout: 120_000,
};
