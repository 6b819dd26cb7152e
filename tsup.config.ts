import { defineConfig } from "tsup";

export default defineConfig({
  entry: { index: "src/index.ts", "testing/index": "src/testing/index.ts", "cli/main": "src/cli/main.ts" },
  format: ["esm", "cjs"],
  dts: true,
  sourcemap: true,
  clean: true,
  target: "node22",
  // p-retry is ESM-only; bundling it keeps `require()` working on every Node 22 release.
  noExternal: ["p-retry", "is-network-error"],
  tsconfig: "tsconfig.build.json",
});
