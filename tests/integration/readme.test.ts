/**
 * The README's examples run as written: each ```ts block is saved as a file inside the project (so
 * that "azure-storage-concurrency" resolves as it does for the examples) and run the way a user
 * would, with AZURE_STORAGE_CONNECTION_STRING naming a fresh Azurite.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startAzurite, type RunningAzurite } from "../../src/testing/index.js";
import { spawnWorker } from "../support/processes.js";

const blocks = [...readFileSync("README.md", "utf8").matchAll(/^## (.+)$|^```ts\n([\s\S]*?)^```$/gm)].reduce<
  { section: string; code: string }[]
>((found, match) => {
  if (match[1] !== undefined) found.push({ section: match[1], code: "" });
  else if (found.length > 0) found[found.length - 1]!.code += match[2];
  return found;
}, []).filter((block) => block.code !== "");

const dir = join(".tmp", `readme-${process.pid}`);
let azurite: RunningAzurite;

beforeAll(async () => {
  mkdirSync(dir, { recursive: true });
  azurite = await startAzurite();
});
afterAll(async () => {
  await azurite?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("README examples", () => {
  it("has an example for every capability section", () => {
    expect(blocks.map((b) => b.section)).toEqual(
      expect.arrayContaining(["Optimistic updates", "Lease locks", "Retries", "Azure Files"]),
    );
    expect(blocks.length).toBeGreaterThanOrEqual(7);
  });

  it.each(blocks.map((b, i) => [b.section, i] as const))("the %s example runs as written", async (_section, i) => {
    const file = join(dir, `example-${i}.ts`);
    writeFileSync(file, blocks[i]!.code);
    const run = spawnWorker(file, [], { AZURE_STORAGE_CONNECTION_STRING: azurite.connectionString });
    const { code } = await run.exited;
    if (code !== 0) throw new Error(`exited with ${code}:\n${run.lines.join("\n")}\n${run.stderr()}`);
  }, 120_000);
});
