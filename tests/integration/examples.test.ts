/**
 * Every example runs as written: each file is executed the way a user would run it
 * (`npx tsx examples/<file>`), starting its own embedded Azurite, and must exit cleanly.
 */
import { readdirSync } from "node:fs";
import { spawnWorker } from "../support/processes.js";

const examples = readdirSync("examples").filter((name) => name.endsWith(".ts") && name !== "demo.ts");

describe("examples", () => {
  it.each(examples)(
    "examples/%s runs and exits cleanly",
    async (file) => {
      const run = spawnWorker(`examples/${file}`, [], { AZURE_STORAGE_CONNECTION_STRING: "" });
      const { code } = await run.exited;
      if (code !== 0)
        throw new Error(`examples/${file} exited with ${code}:\n${run.lines.join("\n")}\n${run.stderr()}`);
      expect(run.lines.length).toBeGreaterThan(1);
      expect(run.lines.join("\n")).not.toMatch(/FAILED|Error/);
    },
    120_000,
  );
});
