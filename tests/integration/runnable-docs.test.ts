/**
 * The documentation's examples run as written: every ```ts block of the README, and every block of
 * docs/recipes/ marked `<!-- runs as written ... -->`, is saved as a file inside the project (so that
 * "azure-storage-concurrency" resolves as it does for the examples) and run the way a user would,
 * with AZURE_STORAGE_CONNECTION_STRING naming a fresh Azurite.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startAzurite, type RunningAzurite } from "../../src/testing/index.js";
import { spawnWorker } from "../support/processes.js";

interface Block {
  readonly name: string;
  readonly code: string;
}

/** README: every TypeScript block, named after its section. */
function readmeBlocks(): Block[] {
  const blocks: Block[] = [];
  let section = "README";
  for (const match of readFileSync("README.md", "utf8").matchAll(/^## (.+)$|^```ts\n([\s\S]*?)^```$/gm)) {
    if (match[1] !== undefined) section = match[1];
    else blocks.push({ name: `README: ${section}`, code: match[2]! });
  }
  return blocks;
}

/** Recipes: the blocks marked as runnable. */
function recipeBlocks(): Block[] {
  return readdirSync("docs/recipes")
    .filter((file) => file.endsWith(".md"))
    .flatMap((file) =>
      [
        ...readFileSync(join("docs/recipes", file), "utf8").matchAll(
          /^<!-- runs as written.*-->\n```ts\n([\s\S]*?)^```$/gm,
        ),
      ].map((match, i) => ({ name: `docs/recipes/${file} #${i + 1}`, code: match[1]! })),
    );
}

const blocks = [...readmeBlocks(), ...recipeBlocks()];
const dir = join(".tmp", `runnable-docs-${process.pid}`);
let azurite: RunningAzurite;

beforeAll(async () => {
  mkdirSync(dir, { recursive: true });
  azurite = await startAzurite();
});
afterAll(async () => {
  await azurite?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("examples in the documentation", () => {
  it("finds the README's example for every capability and the recipes' runnable examples", () => {
    const names = blocks.map((b) => b.name);
    for (const section of ["Optimistic updates", "Lease locks", "Retries", "Azure Files"]) {
      expect(names).toContain(`README: ${section}`);
    }
    expect(names.filter((n) => n.startsWith("docs/recipes/")).length).toBeGreaterThanOrEqual(7);
  });

  it.each(blocks.map((b, i) => [b.name, i] as const))(
    "%s runs as written",
    async (_name, i) => {
      const file = join(dir, `example-${i}.ts`);
      writeFileSync(file, blocks[i]!.code);
      const run = spawnWorker(file, [], { AZURE_STORAGE_CONNECTION_STRING: azurite.connectionString });
      const { code } = await run.exited;
      if (code !== 0) throw new Error(`exited with ${code}:\n${run.lines.join("\n")}\n${run.stderr()}`);
      expect(run.lines.length).toBeGreaterThan(0);
    },
    120_000,
  );
});
