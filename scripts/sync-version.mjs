// `npm version <bump>` runs this (the `version` script) after package.json's version changed and
// before its commit: it writes the new version into src/observability/version.ts (the version of
// the telemetry's instrumentation scope) and stages it, so the commit and the tag carry both.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const file = join(root, "src", "observability", "version.ts");
const text = readFileSync(file, "utf8");
const updated = text.replace(
  /export const LIBRARY_VERSION = "[^"]*";/,
  `export const LIBRARY_VERSION = ${JSON.stringify(version)};`,
);
if (updated === text && !text.includes(`"${version}"`))
  throw new Error(`${file}: no LIBRARY_VERSION constant to update`);
writeFileSync(file, updated);
execFileSync("git", ["add", file], { cwd: root, stdio: "inherit" });
console.log(`src/observability/version.ts: LIBRARY_VERSION = ${version}`);
