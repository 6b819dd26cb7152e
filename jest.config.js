/**
 * Jest runs the TypeScript tests as native ES modules (p-retry is ESM-only), through ts-jest in
 * transpile-only mode; `npm run typecheck` does the type checking.
 * Azurite is started once for the whole run by tests/support/global-setup.mjs.
 */
export const shared = {
  testEnvironment: "node",
  extensionsToTreatAsEsm: [".ts"],
  transform: { "^.+\\.ts$": ["ts-jest", { useESM: true, tsconfig: "tsconfig.json" }] },
  moduleNameMapper: {
    "^azure-storage-concurrency$": "<rootDir>/src/index.ts",
    "^azure-storage-concurrency/errors$": "<rootDir>/src/error-codes.ts",
    "^azure-storage-concurrency/(files|idempotency|lease|optimistic|queue|retry|tables|testing|claim-check|outbox|schedule|semaphore|throttling)$":
      "<rootDir>/src/$1/index.ts",
    "^azure-storage-concurrency-cli$": "<rootDir>/tools/index.ts",
    "^(\\.{1,2}/.*)\\.js$": "$1",
  },
};

export default {
  projects: [
    { ...shared, displayName: "unit", testMatch: ["<rootDir>/tests/unit/**/*.test.ts"] },
    {
      ...shared,
      displayName: "integration",
      testMatch: ["<rootDir>/tests/integration/**/*.test.ts"],
      globalSetup: "<rootDir>/tests/support/global-setup.mjs",
      globalTeardown: "<rootDir>/tests/support/global-teardown.mjs",
      slowTestThreshold: 30,
    },
    {
      ...shared,
      displayName: "package",
      testMatch: ["<rootDir>/tests/package/**/*.test.ts"],
      globalSetup: "<rootDir>/tests/support/pack-setup.mjs",
      globalTeardown: "<rootDir>/tests/support/pack-teardown.mjs",
    },
  ],
  testTimeout: 60_000,
  reporters: ["default", "<rootDir>/tests/support/results-reporter.cjs"],
};
