/**
 * The packages as users get them: the library's and the tools' tarballs that `npm pack` makes
 * (tests/support/pack-setup.mjs), installed into a scratch project, then every entry point of the
 * library imported from ES modules and from CommonJS, and the tools package's command run, its
 * benchmarks included; and the README's `npx -p … -p @azure/storage-blob …` command run in an
 * empty directory, the tarballs standing in for the registry's packages.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startAzurite, type RunningAzurite } from "../../src/testing/index.js";
import { libraryEntryPoints } from "../../scripts/entry-points.js";
import { linkPackages, packedProject, packedTarballs, root, SDKS } from "../support/packed.js";

const node = (args: string[], cwd: string) =>
  execFileSync(process.execPath, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
/** The installed command line tool, run in the scratch project on this project's Node.js 22. */
const bin = (scratch: string, args: string[]) => {
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${join(root, "node_modules", ".bin")}:${process.env.PATH}` };
  delete env.AZURE_STORAGE_CONNECTION_STRING;
  return spawnSync(join(scratch, "node_modules", ".bin", "azure-storage-concurrency"), args, {
    cwd: scratch,
    encoding: "utf8",
    env,
  });
};
/** The last line of stdout, parsed as JSON. */
const lastJson = (stdout: string) => JSON.parse(stdout.trimEnd().split("\n").at(-1)!) as Record<string, unknown>;

/** Every file under `dir`, relative to it, with its size. */
function filesUnder(dir: string, prefix = ""): { path: string; bytes: number }[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((entry) => {
    const path = prefix ? `${prefix}/${entry.name}` : entry.name;
    return entry.isDirectory() ? filesUnder(dir, path) : [{ path, bytes: statSync(join(dir, path)).size }];
  });
}

/** The library's entry points, as users import them: `azure-storage-concurrency`, `…/lease`, … */
const ENTRY_POINTS = libraryEntryPoints(root).map((entry) => entry.specifier);

describe("the packed packages", () => {
  let scratch: string;

  beforeAll(() => {
    scratch = packedProject();
  }, 60_000);

  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it("ship only the build, the guides and examples the README links to, the licence, the notices, the readme and the changelog", () => {
    const files = readdirSync(join(scratch, "node_modules", "azure-storage-concurrency")).sort();
    expect(files).toEqual([
      "CHANGELOG.md",
      "LICENSE",
      "README.md",
      "THIRD_PARTY_NOTICES.md",
      "dist",
      "docs",
      "examples",
      "package.json",
    ]);
    // Never the generated API reference (docs/api/, from `npm run docs`), only the written pages.
    const docs = filesUnder(join(scratch, "node_modules", "azure-storage-concurrency", "docs")).map((f) => f.path);
    expect(
      docs.filter((path) => !/^(recipes\/)?[\w-]+\.md$|^benchmarks\/([\w-]+\.svg|results\.json)$/.test(path)),
    ).toEqual([]);
    const tools = readdirSync(join(scratch, "node_modules", "azure-storage-concurrency-cli")).sort();
    expect(tools).toEqual(["LICENSE", "README.md", "dist", "package.json"]);
  });

  it("the library ships no tool: no command, no benchmark, no chart writer, no stress test", () => {
    const installed = join(scratch, "node_modules", "azure-storage-concurrency");
    const manifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as Record<string, unknown>;
    expect(manifest["bin"]).toBeUndefined();
    const files = filesUnder(installed).map((f) => f.path);
    expect(files.filter((path) => /(^|\/)(cli|bench|stress)(\/|$)/.test(path))).toEqual([]);
    const text = files
      .filter((path) => path.endsWith(".js"))
      .map((path) => readFileSync(join(installed, path), "utf8"));
    for (const marker of [
      "renderBarChart",
      "runPartitionStressTest",
      "spawnBenchWorker",
      "Usage: azure-storage-concurrency",
    ])
      expect(text.filter((source) => source.includes(marker))).toEqual([]);
  });

  it("ship the build without source maps, and the declarations once per module format", () => {
    const installed = join(scratch, "node_modules", "azure-storage-concurrency");
    const files = filesUnder(installed);
    expect(files.filter((f) => f.path.endsWith(".map"))).toEqual([]);
    // index.d.ts and index.d.cts have the same text but are not interchangeable: each resolves the
    // SDKs' own types in its module format, and the SDKs ship different types for import and
    // require (tests/package/types.test.ts fails when ES modules get the CommonJS ones). Every
    // entry point has both; declarations the entry points share sit in chunks, also once per format.
    const declarations = files.filter((f) => /\.d\.c?ts$/.test(f.path)).map((f) => f.path);
    const entries = ENTRY_POINTS.map((specifier) => specifier.replace(/^azure-storage-concurrency\/?/, ""));
    expect(declarations.filter((path) => /(^|\/)index\.d\.c?ts$/.test(path)).sort()).toEqual(
      entries
        .flatMap((entry) => [".d.cts", ".d.ts"].map((ext) => `dist/${entry ? `${entry}/` : ""}index${ext}`))
        .sort(),
    );
    // A chunk's name ends in a hash of its text, which may differ between the formats (a chunk that
    // imports another names it by its own format's hash): compared without it.
    const chunks = declarations
      .filter((path) => !/(^|\/)index\.d\.c?ts$/.test(path))
      .map((path) => path.replace(/-[\w-]{8}(\.d\.c?ts)$/, "$1"));
    expect(
      chunks
        .filter((path) => path.endsWith(".d.ts"))
        .map((path) => path.replace(/\.d\.ts$/, ".d.cts"))
        .sort(),
    ).toEqual(chunks.filter((path) => path.endsWith(".d.cts")).sort());
    // 1.3 MB unpacked when this was written, 1.7 MB after issues 11-15 added the consumer's batch
    // handler, idempotent(), the lock's waiting room and the tracing (3.3 MB then with maps embedding
    // the sources), 1.9 MB with the tools in it until issue 22 moved them out (1.7 MB then), 2.4 MB
    // once issues 24-26 added the semaphore, schedules, claim-check, the outbox and throttling (each
    // four times: ESM, CJS and their declarations); a loose bound that catches the maps, the tools,
    // or a second copy of the build, coming back.
    const build = files.filter((f) => f.path.startsWith("dist/"));
    expect(build.reduce((sum, f) => sum + f.bytes, 0)).toBeLessThan(2_600_000);
    // The guides, recipes, benchmark charts and examples (issue 23: the README's links work from the
    // npm page): 0.9 MB when they were added.
    const pages = files.filter((f) => !f.path.startsWith("dist/"));
    expect(pages.reduce((sum, f) => sum + f.bytes, 0)).toBeLessThan(1_300_000);
    const tools = filesUnder(join(scratch, "node_modules", "azure-storage-concurrency-cli"));
    expect(tools.filter((f) => f.path.endsWith(".map"))).toEqual([]);
  });

  it("imports every entry point from ES modules, one copy of the library for all of them", () => {
    const out = node(
      [
        "--input-type=module",
        "-e",
        `const specifiers = ${JSON.stringify(ENTRY_POINTS)};
         const modules = await Promise.all(specifiers.map((s) => import(s)));
         const [main] = modules;
         const lease = await import("azure-storage-concurrency/lease");
         const retry = await import("azure-storage-concurrency/retry");
         const errors = await import("azure-storage-concurrency/errors");
         const testing = await import("azure-storage-concurrency/testing");
         console.log(modules.every((m) => Object.keys(m).length > 0), main.StorageConcurrencyError.prototype.isPrototypeOf(lease.LeaseLostError.prototype),
           main.StorageConcurrencyError === errors.StorageConcurrencyError, typeof retry.retry, typeof retry.classifyError,
           typeof testing.startAzurite, typeof testing.createFaultProxy);`,
      ],
      scratch,
    );
    expect(out.trim()).toBe("true true true function function function function");
  });

  it("requires every entry point from CommonJS, one copy of the library for all of them", () => {
    const out = node(
      [
        "-e",
        `const modules = ${JSON.stringify(ENTRY_POINTS)}.map((s) => require(s));
         const main = require("azure-storage-concurrency");
         const optimistic = require("azure-storage-concurrency/optimistic");
         const errors = require("azure-storage-concurrency/errors");
         const retry = require("azure-storage-concurrency/retry");
         const testing = require("azure-storage-concurrency/testing");
         console.log(modules.every((m) => Object.keys(m).length > 0), main.StorageConcurrencyError.prototype.isPrototypeOf(optimistic.OptimisticConflictError.prototype),
           main.StorageConcurrencyError === errors.StorageConcurrencyError, typeof retry.retry, typeof retry.exponentialBackoff,
           typeof testing.startAzurite, retry.isTransientError({ name: "RestError", statusCode: 503 }));`,
      ],
      scratch,
    );
    expect(out.trim()).toBe("true true true function function function true");
  });

  it("installs the command line tool as a bin of the tools package, under both names", () => {
    for (const name of ["azure-storage-concurrency", "azure-storage-concurrency-cli"]) {
      const out = execFileSync(join(scratch, "node_modules", ".bin", name), ["--help"], {
        encoding: "utf8",
        env: { ...process.env, PATH: `${join(root, "node_modules", ".bin")}:${process.env.PATH}` },
      });
      expect(out).toMatch(/^Usage: azure-storage-concurrency <command>/);
    }
  });

  it("imports the tools package's module: the partition stress test as a function", () => {
    const out = node(
      [
        "--input-type=module",
        "-e",
        `import { runPartitionStressTest, stressDesigns } from "azure-storage-concurrency-cli";
         console.log(typeof runPartitionStressTest, Object.keys(stressDesigns).join(","));`,
      ],
      scratch,
    );
    expect(out.trim()).toBe("function single,append,prepend,bucketed");
  });

  const needs = (sdk: string) =>
    `azure-storage-concurrency: this command needs ${sdk}: run \`npm install ${sdk}\` in your project, or ` +
    `\`npx -p azure-storage-concurrency-cli -p ${sdk} azure-storage-concurrency …\``;

  it("asks for a missing SDK in one line instead of crashing (the SDKs are optional peers)", () => {
    const run = bin(scratch, ["stress", "--azurite"]);
    expect(run.status).toBe(2);
    expect(run.stderr).toBe(`target: an embedded Azurite, started for this run\n${needs("@azure/data-tables")}\n`);
    const entra = bin(scratch, ["lock", "list", "locks", "--account-name", "myaccount"]);
    expect(entra.status).toBe(2);
    expect(entra.stderr.split("\n").at(-2)).toBe(needs("@azure/identity"));
  });

  it("lists the benchmarks without any SDK installed, and asks for the one a benchmark needs", () => {
    const help = bin(scratch, ["bench", "--help"]);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^Usage: azure-storage-concurrency bench <scenario\[,scenario\.\.\.\]\|all>/);
    for (const name of ["retry", "files", "lock", "batch", "queue", "optimistic"])
      expect(help.stdout).toMatch(new RegExp(`^  ${name} `, "m"));
    const run = bin(scratch, ["bench", "queue", "--connection-string", "UseDevelopmentStorage=true"]);
    expect(run.status).toBe(2);
    expect(run.stderr.split("\n").at(-2)).toBe(needs("@azure/data-tables"));
  });

  // The README's command for a machine with nothing installed, run where nothing is installed: npx
  // installs the package and the SDK together (the SDK from the npm cache when it is there, else
  // the registry) into its own cache folder, removed afterwards.
  describe("npx in an empty directory", () => {
    let azurite: RunningAzurite;
    let empty: string;
    const tarballs = () => packedTarballs();
    const npxFolders = () => {
      const cache = join(execFileSync("npm", ["config", "get", "cache"], { encoding: "utf8" }).trim(), "_npx");
      return existsSync(cache) ? readdirSync(cache).map((name) => join(cache, name)) : [];
    };

    beforeAll(async () => {
      azurite = await startAzurite();
      empty = mkdtempSync(join(tmpdir(), "asc-npx-"));
    }, 60_000);

    afterAll(async () => {
      await azurite?.stop();
      rmSync(empty, { recursive: true, force: true });
      // npx's install of this run's tarballs (named by their paths, which no one else uses).
      for (const folder of npxFolders()) {
        const manifest = join(folder, "package.json");
        if (existsSync(manifest) && readFileSync(manifest, "utf8").includes(tarballs().tools))
          rmSync(folder, { recursive: true, force: true });
      }
    });

    it("`npx -p azure-storage-concurrency-cli -p @azure/storage-blob azure-storage-concurrency-cli lock list locks` works", async () => {
      const { BlobServiceClient } = await import("@azure/storage-blob");
      const { blobLock } = await import("../../src/lease/index.js");
      const locks = BlobServiceClient.fromConnectionString(azurite.connectionString).getContainerClient("locks");
      await locks.create();
      const held = await blobLock(locks, "nightly-report", { durationInSeconds: 30, holderName: "npx-test" }).acquire();
      try {
        const blobVersion = (
          JSON.parse(readFileSync(join(root, "node_modules", "@azure", "storage-blob", "package.json"), "utf8")) as {
            version: string;
          }
        ).version;
        const env: NodeJS.ProcessEnv = {
          ...process.env,
          PATH: `${join(root, "node_modules", ".bin")}:${process.env.PATH}`,
          AZURE_STORAGE_CONNECTION_STRING: azurite.connectionString,
          npm_config_prefer_offline: "true",
          npm_config_yes: "true",
        };
        const run = spawnSync(
          "npx",
          // The library is the tools' peer dependency: npx installs it too, here from its tarball
          // (the registry's package in the README's command).
          [
            "-p",
            tarballs().tools,
            "-p",
            tarballs().library,
            "-p",
            `@azure/storage-blob@${blobVersion}`,
            "azure-storage-concurrency-cli",
            "lock",
            "list",
            "locks",
          ],
          { cwd: empty, encoding: "utf8", env },
        );
        expect(run.stderr).toContain(
          `account 'devstoreaccount1' (${azurite.blobEndpoint}), from AZURE_STORAGE_CONNECTION_STRING; container 'locks'`,
        );
        expect(run.status).toBe(0);
        expect(run.stdout).toMatch(/^nightly-report +leased +1 +\d+s +'npx-test' on /m);
        expect(readdirSync(empty)).toEqual([]); // nothing installed where it ran
      } finally {
        await held.release();
      }
    }, 180_000);
  });

  // Last: these install the SDKs in the scratch project (linked from this project's node_modules,
  // tests/support/packed.ts).
  describe("with the SDKs installed", () => {
    let azurite: RunningAzurite;

    beforeAll(async () => {
      linkPackages(scratch, SDKS);
      azurite = await startAzurite();
    }, 60_000);

    afterAll(() => azurite?.stop());

    it("runs a benchmark against the account given, the result as the last stdout line", () => {
      const args = ["retry", "--writers", "2", "--increments", "10", "--rounds", "1", "--json"];
      const run = bin(scratch, ["bench", ...args, "--connection-string", azurite.connectionString]);
      expect(run.stderr).toMatch(/^\[retry\] done in [\d.]+ s$/m);
      expect(run.status).toBe(0);
      expect(lastJson(run.stdout)).toMatchObject({ scenario: "retry", target: "account", writers: [2] });
    }, 60_000);

    it("runs a benchmark whose workers are processes of their own, as plain JavaScript from dist/", () => {
      const args = ["lock", "--processes", "2", "--contenders", "2", "--seconds", "1", "--json"];
      const run = bin(scratch, ["bench", ...args, "--connection-string", azurite.connectionString]);
      expect(run.status).toBe(0);
      expect(lastJson(run.stdout)).toMatchObject({ scenario: "lock", processes: 2, overlaps: 0 });
      expect(lastJson(run.stdout)["acquisitions"]).toBeGreaterThan(1);
    }, 60_000);

    it("says in one line that an embedded Azurite needs the azurite package", () => {
      const run = bin(scratch, ["bench", "retry"]);
      expect(run.status).toBe(2);
      expect(run.stderr.split("\n").at(-2)).toBe(
        "azure-storage-concurrency: an embedded Azurite needs the azurite package: run `npm install --save-dev azurite` (or add `-p azurite` to npx), or name an account with --connection-string <cs> or --use-env",
      );
    });
  });
});
