/**
 * The package as users get it: build, `npm pack`, install the tarball into a scratch project, then
 * import every entry point from ES modules and from CommonJS, and run the command line tool, its
 * benchmarks included; and run the README's `npx -p … -p @azure/storage-blob …` command in an empty
 * directory, the tarball standing in for the registry's package.
 */
import { execFileSync, spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startAzurite, type RunningAzurite } from "../../src/testing/index.js";

const root = resolve(".");
const npm = (args: string[], cwd: string) =>
  execFileSync("npm", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
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

describe("the packed package", () => {
  let scratch: string;

  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), "asc-pack-"));
    npm(["run", "build"], root);
    npm(["pack", "--pack-destination", scratch], root);
    const tarball = readdirSync(scratch).find((f) => f.endsWith(".tgz"))!;
    writeFileSync(join(scratch, "package.json"), JSON.stringify({ name: "scratch", private: true }));
    npm(["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", `./${tarball}`], scratch);
  }, 180_000);

  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it("ships only the build, the licence, the notices and the readme", () => {
    const files = readdirSync(join(scratch, "node_modules", "azure-storage-concurrency")).sort();
    expect(files).toEqual(["LICENSE", "README.md", "THIRD_PARTY_NOTICES.md", "dist", "package.json"]);
  });

  it("imports every entry point from ES modules", () => {
    const out = node(
      [
        "--input-type=module",
        "-e",
        `import * as main from "azure-storage-concurrency";
         import * as testing from "azure-storage-concurrency/testing";
         console.log(typeof main.retry, typeof main.classifyError, typeof testing.startAzurite, typeof testing.createFaultProxy);`,
      ],
      scratch,
    );
    expect(out.trim()).toBe("function function function function");
  });

  it("requires every entry point from CommonJS", () => {
    const out = node(
      [
        "-e",
        `const main = require("azure-storage-concurrency");
         const testing = require("azure-storage-concurrency/testing");
         console.log(typeof main.retry, typeof main.exponentialBackoff, typeof testing.startAzurite, main.isTransientError({ name: "RestError", statusCode: 503 }));`,
      ],
      scratch,
    );
    expect(out.trim()).toBe("function function function true");
  });

  it("installs the command line tool as a bin", () => {
    const out = execFileSync(join(scratch, "node_modules", ".bin", "azure-storage-concurrency"), ["--help"], {
      encoding: "utf8",
      env: { ...process.env, PATH: `${join(root, "node_modules", ".bin")}:${process.env.PATH}` },
    });
    expect(out).toMatch(/^Usage: azure-storage-concurrency <command>/);
  });

  const needs = (sdk: string) =>
    `azure-storage-concurrency: this command needs ${sdk}: run \`npm install ${sdk}\` in your project, or ` +
    `\`npx -p azure-storage-concurrency -p ${sdk} azure-storage-concurrency …\`\n`;

  it("asks for a missing SDK in one line instead of crashing (the SDKs are optional peers)", () => {
    const run = bin(scratch, ["stress", "--azurite"]);
    expect(run.status).toBe(2);
    expect(run.stderr).toBe(`target: an embedded Azurite, started for this run\n${needs("@azure/data-tables")}`);
    const entra = bin(scratch, ["lock", "list", "locks", "--account-name", "myaccount"]);
    expect(entra.status).toBe(2);
    expect(entra.stderr.split("\n").at(-2)).toBe(needs("@azure/identity").trimEnd());
  });

  it("lists the benchmarks without any SDK installed, and asks for the one a benchmark needs", () => {
    const help = bin(scratch, ["bench", "--help"]);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^Usage: azure-storage-concurrency bench <scenario\|all>/);
    for (const name of ["retry", "files", "lock", "batch", "queue", "optimistic"])
      expect(help.stdout).toMatch(new RegExp(`^  ${name} `, "m"));
    const run = bin(scratch, ["bench", "queue", "--connection-string", "UseDevelopmentStorage=true"]);
    expect(run.status).toBe(2);
    expect(run.stderr.split("\n").at(-2)).toBe(needs("@azure/data-tables").trimEnd());
  });

  // The README's command for a machine with nothing installed, run where nothing is installed: npx
  // installs the package and the SDK together (the SDK from the npm cache when it is there, else
  // the registry) into its own cache folder, removed afterwards.
  describe("npx in an empty directory", () => {
    let azurite: RunningAzurite;
    let empty: string;
    const npxFolders = () => {
      const cache = join(npm(["config", "get", "cache"], root).trim(), "_npx");
      return existsSync(cache) ? readdirSync(cache).map((name) => join(cache, name)) : [];
    };

    beforeAll(async () => {
      azurite = await startAzurite();
      empty = mkdtempSync(join(tmpdir(), "asc-npx-"));
    }, 60_000);

    afterAll(async () => {
      await azurite?.stop();
      rmSync(empty, { recursive: true, force: true });
      // npx's install of this test's tarball (named by its path, which no one else uses).
      for (const folder of npxFolders()) {
        const manifest = join(folder, "package.json");
        if (existsSync(manifest) && readFileSync(manifest, "utf8").includes(scratch))
          rmSync(folder, { recursive: true, force: true });
      }
    });

    it("`npx -p azure-storage-concurrency -p @azure/storage-blob azure-storage-concurrency lock list locks` works", async () => {
      const { BlobServiceClient } = await import("@azure/storage-blob");
      const { blobLock } = await import("../../src/index.js");
      const locks = BlobServiceClient.fromConnectionString(azurite.connectionString).getContainerClient("locks");
      await locks.create();
      const held = await blobLock(locks, "nightly-report", { durationInSeconds: 30, holderName: "npx-test" }).acquire();
      try {
        const tarball = join(
          scratch,
          readdirSync(scratch).find((f) => f.endsWith(".tgz"))!,
        );
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
          [
            "-p",
            tarball,
            "-p",
            `@azure/storage-blob@${blobVersion}`,
            "azure-storage-concurrency",
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

  // Last: these install the SDKs in the scratch project. They are linked from this project's
  // node_modules (the versions the suite tests, with no registry or npm cache involved). NODE_PATH
  // would not do: the command line tool is an ES module, and ESM resolution ignores NODE_PATH
  // (https://nodejs.org/api/esm.html#no-node_path); a package in the project's node_modules is what
  // a user has.
  describe("with the SDKs installed", () => {
    let azurite: RunningAzurite;

    beforeAll(async () => {
      mkdirSync(join(scratch, "node_modules", "@azure"), { recursive: true });
      for (const sdk of ["storage-blob", "data-tables", "storage-queue", "storage-file-share"]) {
        const link = join(scratch, "node_modules", "@azure", sdk);
        if (!existsSync(link)) symlinkSync(join(root, "node_modules", "@azure", sdk), link, "dir");
      }
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
