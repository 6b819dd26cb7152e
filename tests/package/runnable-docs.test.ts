/**
 * The documentation's complete examples run as written, the way the documentation tells users to
 * run them, on this Node.js (22 in `npm test`, 24 in CI's second run): in a scratch project with the
 * packed package installed (tests/support/packed.ts), AZURE_STORAGE_CONNECTION_STRING naming a fresh
 * Azurite. With ASC_PEERS_DIR set (`npm run test:lowest`), the peer dependencies are the lowest
 * version of each declared range.
 * - README.md: every ```ts block, compiled with the README's `tsc` command and run with `node`; and
 *   run directly with `node example.ts` (Node's type stripping), except a block with `await using`
 *   on Node.js before 24, where the README says it does not run (checked: a SyntaxError).
 * - docs/recipes/: every block marked `<!-- runs as written: … npx tsx <file>.ts -->`, run with
 *   tsx as the marker says.
 */
import { execFile } from "node:child_process";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { startAzurite, type RunningAzurite } from "../../src/testing/index.js";
import { packedProject, PEERS, root } from "../support/packed.js";

/** How the README tells users to run its examples; the test checks that the README says so. */
const README_COMPILE =
  "npx tsc --module nodenext --target es2022 --skipLibCheck --types node example.ts && node example.js";
const README_STRIP = "`node example.ts`";
/** The marker of a runnable recipe, and the one command it may name. */
const RECIPE_MARKER = /^<!-- runs as written: (.*)-->\n```ts\n([\s\S]*?)^```$/gm;
const RECIPE_COMMAND = "AZURE_STORAGE_CONNECTION_STRING=... npx tsx <file>.ts";

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

/** Recipes: the blocks marked as runnable, with the command their marker names. */
function recipeBlocks(): (Block & { readonly command: string })[] {
  return readdirSync("docs/recipes")
    .filter((file) => file.endsWith(".md"))
    .flatMap((file) =>
      [...readFileSync(join("docs/recipes", file), "utf8").matchAll(RECIPE_MARKER)].map((match, i) => ({
        name: `docs/recipes/${file} #${i + 1}`,
        command: match[1]!.trim(),
        code: match[2]!,
      })),
    );
}

const readme = readmeBlocks();
const recipes = recipeBlocks();
const usesAwaitUsing = (block: Block) => /\bawait using\b/.test(block.code);
const nodeMajor = Number(process.versions.node.split(".")[0]);
/** Set by `npm run test:lowest`: the project whose node_modules holds the lowest peer versions. */
const lowestPeers = process.env.ASC_PEERS_DIR;

const exec = promisify(execFile);
let scratch: string;
let azurite: RunningAzurite;

/** Runs `node ...args` in the scratch project; resolves with the output, rejects with it when the exit code is not 0. */
async function run(args: readonly string[]): Promise<string> {
  const env = { ...process.env, AZURE_STORAGE_CONNECTION_STRING: azurite.connectionString };
  try {
    const { stdout } = await exec(process.execPath, args, { cwd: scratch, env, timeout: 100_000 });
    return stdout;
  } catch (error) {
    const { code, stdout, stderr } = error as { code?: number; stdout?: string; stderr?: string };
    throw new Error(`node ${args.join(" ")} exited with ${code}:\n${stdout}\n${stderr}`);
  }
}

let compiled: Promise<string> | undefined;
/** Compiles every README block in one run of README_COMPILE's tsc command (once; tsc is this project's). */
function compileReadme(): Promise<string> {
  const words = README_COMPILE.split(" ");
  const flags = words.slice(words.indexOf("tsc") + 1, words.indexOf("example.ts"));
  const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
  return (compiled ??= run([tsc, ...flags, ...readme.map((_, i) => `readme-${i}.ts`)]));
}

beforeAll(async () => {
  scratch = packedProject([...PEERS, "azurite", "@types/node"]);
  for (const [i, block] of readme.entries()) writeFileSync(join(scratch, `readme-${i}.ts`), block.code);
  for (const [i, block] of recipes.entries()) writeFileSync(join(scratch, `recipe-${i}.ts`), block.code);
  azurite = await startAzurite();
}, 60_000);

afterAll(async () => {
  await azurite?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe("the README's examples", () => {
  if (lowestPeers) {
    it("run on the peer versions of ASC_PEERS_DIR (the lowest of each range), not this project's", () => {
      for (const name of PEERS) {
        const version = (dir: string) =>
          (JSON.parse(readFileSync(join(dir, "node_modules", name, "package.json"), "utf8")) as { version: string })
            .version;
        expect(`${name} ${version(scratch)}`).toBe(`${name} ${version(lowestPeers)}`);
      }
    });
  }

  it("are found, one per capability, and the README says how to run them", () => {
    for (const section of ["Optimistic updates", "Lease locks", "Retries", "Azure Files"]) {
      expect(readme.map((b) => b.name)).toContain(`README: ${section}`);
    }
    const text = readFileSync("README.md", "utf8");
    expect(text).toContain(README_COMPILE);
    expect(text).toContain(README_STRIP);
  });

  it("compile with the README's tsc command", () => compileReadme(), 120_000);

  it.each(readme.map((b, i) => [b.name, i] as const))(
    "%s runs compiled, with node",
    async (_name, i) => {
      await compileReadme();
      expect(await run([`readme-${i}.js`])).not.toBe("");
    },
    120_000,
  );

  // With the lowest peer versions, once is enough: how Node runs TypeScript does not depend on them.
  (lowestPeers ? it.skip : it).each(readme.map((b, i) => [b.name, i] as const))(
    "%s runs as TypeScript with node (type stripping), or is refused where the README says so",
    async (_name, i) => {
      if (usesAwaitUsing(readme[i]!) && nodeMajor < 24) {
        await expect(run([`readme-${i}.ts`])).rejects.toThrow(/SyntaxError/);
      } else {
        expect(await run([`readme-${i}.ts`])).not.toBe("");
      }
    },
    120_000,
  );
});

describe("the recipes' runnable examples", () => {
  it("are found, and each names the command it runs with", () => {
    expect(recipes.length).toBeGreaterThanOrEqual(7);
    for (const recipe of recipes) expect(`${recipe.name}: ${recipe.command}`).toBe(`${recipe.name}: ${RECIPE_COMMAND}`);
  });

  it.each(recipes.map((b, i) => [b.name, i] as const))(
    "%s runs with tsx",
    async (_name, i) => {
      const tsx = join(root, "node_modules", "tsx", "dist", "cli.mjs");
      expect(await run([tsx, `recipe-${i}.ts`])).not.toBe("");
    },
    120_000,
  );
});
