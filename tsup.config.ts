import { defineConfig, type Options } from "tsup";

const shared: Options = {
  entry: { index: "src/index.ts", "testing/index": "src/testing/index.ts", "cli/main": "src/cli/main.ts" },
  dts: true,
  sourcemap: true,
  target: "node22",
  tsconfig: "tsconfig.build.json",
};

export default defineConfig([
  { ...shared, format: "esm", clean: true },
  // p-retry is ESM-only. Bundling it into the CommonJS build keeps `require()` working on every
  // Node 22 release (require of ES modules is only unflagged from 22.12). See THIRD_PARTY_NOTICES.md.
  { ...shared, format: "cjs", noExternal: ["p-retry", "is-network-error"] },
]);
