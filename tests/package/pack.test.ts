/**
 * The package as users get it: build, `npm pack`, install the tarball into a scratch project, then
 * import every entry point from ES modules and from CommonJS, and run the command line tool.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const root = resolve(".");
const npm = (args: string[], cwd: string) =>
  execFileSync("npm", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
const node = (args: string[], cwd: string) =>
  execFileSync(process.execPath, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

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
});
