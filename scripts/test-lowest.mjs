// `npm run test:lowest`: the package tests on the LOWEST version of each peer dependency range.
// A user's `npm install` may pick any version inside a declared range (issue 23: 12.31.0 of
// @azure/storage-file-share lacked an option the library used, and the Files write hung), so the
// bottom of every range is tested, not only the versions in package-lock.json.
//
// It installs, from the registry, the minimum of each range of package.json's peerDependencies into
// a scratch project, then runs the package tests that run the README's examples and the recipes
// (tests/package/runnable-docs.test.ts) with ASC_PEERS_DIR naming that project: the scratch app the
// test builds from the packed tarball links the peers from there (tests/support/packed.ts).
// jest's counts go to .test-results/summary-lowest.json (ASC_TEST_SUMMARY), which .ci/run adds up.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const TESTS = ["tests/package/runnable-docs.test.ts"];

/** The lowest version a range allows: only the simple forms package.json uses (`^1.2.3`, `~1.2.3`, `>=1.2.3`, `1.2.3`). */
function lowest(name, range) {
  const match = /^(?:\^|~|>=)?(\d+\.\d+\.\d+)$/.exec(range.trim());
  if (!match)
    throw new Error(`peerDependencies['${name}'] is '${range}': test:lowest knows only ^x.y.z, ~x.y.z, >=x.y.z`);
  return match[1];
}

const started = Date.now();
const { peerDependencies } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const wanted = Object.entries(peerDependencies).map(([name, range]) => `${name}@${lowest(name, range)}`);
const peers = mkdtempSync(join(tmpdir(), "asc-lowest-peers-"));
let status = 1;
try {
  writeFileSync(join(peers, "package.json"), JSON.stringify({ name: "lowest-peers", private: true }));
  console.log(`== installing the lowest peer versions: ${wanted.join(" ")}`);
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--ignore-scripts", "--save-exact", ...wanted], {
    cwd: peers,
    stdio: ["ignore", "ignore", "inherit"],
  });
  for (const name of Object.keys(peerDependencies)) {
    const { version } = JSON.parse(readFileSync(join(peers, "node_modules", name, "package.json"), "utf8"));
    console.log(`   ${name} ${version}`);
  }
  const jest = spawnSync(
    process.execPath,
    [
      "--experimental-vm-modules",
      "--no-warnings=ExperimentalWarning",
      join(root, "node_modules", "jest", "bin", "jest.js"),
      "--selectProjects",
      "package",
      "--",
      ...TESTS,
    ],
    {
      cwd: root,
      stdio: "inherit",
      env: { ...process.env, ASC_PEERS_DIR: peers, ASC_TEST_SUMMARY: "summary-lowest.json" },
    },
  );
  status = jest.status ?? 1;
} finally {
  rmSync(peers, { recursive: true, force: true });
  console.log(`== test:lowest took ${Math.round((Date.now() - started) / 1000)} s`);
}
process.exit(status);
