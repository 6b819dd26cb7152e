/**
 * The package as users get it: the tarball `npm pack` makes (tests/support/pack-setup.mjs),
 * installed into a scratch project, then every entry point imported from ES modules and from
 * CommonJS, and the command line tool run, its benchmarks included.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { startAzurite, type RunningAzurite } from "../../src/testing/index.js";
import { linkPackages, packedProject, root, SDKS } from "../support/packed.js";

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

describe("the packed package", () => {
  let scratch: string;

  beforeAll(() => {
    scratch = packedProject();
  }, 60_000);

  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it("ships only the build, the licence, the notices and the readme", () => {
    const files = readdirSync(join(scratch, "node_modules", "azure-storage-concurrency")).sort();
    expect(files).toEqual(["LICENSE", "README.md", "THIRD_PARTY_NOTICES.md", "dist", "package.json"]);
  });

  it("ships the build without source maps, and the declarations once per module format", () => {
    const installed = join(scratch, "node_modules", "azure-storage-concurrency");
    const files = filesUnder(installed);
    expect(files.filter((f) => f.path.endsWith(".map"))).toEqual([]);
    // index.d.ts and index.d.cts have the same text but are not interchangeable: each resolves the
    // SDKs' own types in its module format, and the SDKs ship different types for import and
    // require (tests/package/types.test.ts fails when ES modules get the CommonJS ones).
    const declarations = files.filter((f) => /\.d\.c?ts$/.test(f.path)).map((f) => f.path);
    expect(declarations.sort()).toEqual([
      "dist/index.d.cts",
      "dist/index.d.ts",
      "dist/testing/index.d.cts",
      "dist/testing/index.d.ts",
    ]);
    // 1.3 MB unpacked when this was written (3.3 MB with maps embedding the sources); a loose bound
    // that catches the maps, or a second copy of the build, coming back.
    expect(files.reduce((sum, f) => sum + f.bytes, 0)).toBeLessThan(1_600_000);
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

  it("asks for a missing SDK in one line instead of crashing (the SDKs are optional peers)", () => {
    const run = spawnSync(join(scratch, "node_modules", ".bin", "azure-storage-concurrency"), ["stress", "--azurite"], {
      encoding: "utf8",
      env: { ...process.env, PATH: `${join(root, "node_modules", ".bin")}:${process.env.PATH}` },
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toBe(
      "azure-storage-concurrency: this command needs @azure/data-tables: run `npm install @azure/data-tables`\n",
    );
  });

  it("lists the benchmarks without any SDK installed, and asks for the one a benchmark needs", () => {
    const help = bin(scratch, ["bench", "--help"]);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^Usage: azure-storage-concurrency bench <scenario\|all>/);
    for (const name of ["retry", "files", "lock", "batch", "queue", "optimistic"])
      expect(help.stdout).toMatch(new RegExp(`^  ${name} `, "m"));
    const run = bin(scratch, ["bench", "queue", "--connection-string", "UseDevelopmentStorage=true"]);
    expect(run.status).toBe(2);
    expect(run.stderr).toBe(
      "azure-storage-concurrency: this command needs @azure/data-tables: run `npm install @azure/data-tables`\n",
    );
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
      expect(run.stderr).toBe(
        "azure-storage-concurrency: an embedded Azurite needs the azurite package: run `npm install --save-dev azurite`, or pass --connection-string <cs>\n",
      );
    });
  });
});
