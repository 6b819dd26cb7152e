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
    "^azure-storage-concurrency/(files|idempotency|lease|optimistic|queue|retry|tables|testing|claim-check|outbox|schedule|semaphore|throttling|express|fastify|functions)$":
      "<rootDir>/src/$1/index.ts",
    "^azure-storage-concurrency-cli$": "<rootDir>/tools/index.ts",
    "^(\\.{1,2}/.*)\\.js$": "$1",
  },
};

/**
 * The integration tests that run whole processes: every example as a user runs it, the command line
 * tool, Azurite's own launcher, and the kill tests (processes killed mid-work). They are the
 * `processes` project: `npm run test:processes` runs it with the package tests, and CI (`.ci/run`)
 * runs it after `npm test`, so every one of them still runs on every change; `npm test` keeps the
 * unit tests, the integration tests and the fault explorers, within its 8 minutes on this machine.
 */
export const PROCESS_TESTS = [
  "<rootDir>/tests/integration/examples.test.ts",
  "<rootDir>/tests/integration/cli/**/*.test.ts",
  "<rootDir>/tests/integration/testing/azurite.test.ts",
  "<rootDir>/tests/integration/**/processes.test.ts",
  "<rootDir>/tests/integration/**/multi-process.test.ts",
  "<rootDir>/tests/integration/**/idempotent-processes.test.ts",
];

const azurite = {
  globalSetup: "<rootDir>/tests/support/global-setup.mjs",
  globalTeardown: "<rootDir>/tests/support/global-teardown.mjs",
  slowTestThreshold: 30,
};

export default {
  projects: [
    { ...shared, displayName: "unit", testMatch: ["<rootDir>/tests/unit/**/*.test.ts"] },
    {
      ...shared,
      ...azurite,
      displayName: "integration",
      testMatch: ["<rootDir>/tests/integration/**/*.test.ts"],
      // The process tests have a project of their own (below); a path pattern per file.
      testPathIgnorePatterns: [
        "/node_modules/",
        "/tests/integration/examples\\.test\\.ts$",
        "/tests/integration/cli/",
        "/tests/integration/testing/azurite\\.test\\.ts$",
        "/(multi-|idempotent-)?processe?s?\\.test\\.ts$",
      ],
    },
    { ...shared, ...azurite, displayName: "processes", testMatch: PROCESS_TESTS },
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
