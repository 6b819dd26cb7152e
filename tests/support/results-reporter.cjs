// Writes jest's counts to .test-results/summary.json (or $ASC_TEST_SUMMARY), so .ci/run can print `N passed, N failed`
// from jest's own results. A suite that could not run at all counts as one failure. The summary also
// lists the slowest test files (wall time of each), to keep `npm test` under its 8 minutes.
const { mkdirSync, writeFileSync } = require("node:fs");
const { join } = require("node:path");

/** The project names given to `--selectProjects` on jest's command line. */
function selectedProjects(argv) {
  const at = argv.indexOf("--selectProjects");
  if (at < 0) return [];
  const names = [];
  for (const arg of argv.slice(at + 1)) {
    if (arg.startsWith("-")) break;
    names.push(arg);
  }
  return names;
}

class ResultsReporter {
  constructor(globalConfig) {
    this.rootDir = globalConfig.rootDir;
    // `npm run test:processes` (the processes and package projects) writes a summary of its own,
    // so that it does not overwrite `npm test`'s; .ci/run adds them up.
    // jest's globalConfig does not carry --selectProjects (the last CI run's `npm run test:processes`
    // overwrote npm test's summary.json, and summary-processes.json was missing): read the command line.
    const projects = [...(globalConfig.selectProjects ?? []), ...selectedProjects(process.argv)];
    this.file =
      process.env.ASC_TEST_SUMMARY || (projects.includes("processes") ? "summary-processes.json" : "summary.json");
  }

  onRunComplete(_contexts, results) {
    const dir = join(this.rootDir, ".test-results");
    mkdirSync(dir, { recursive: true });
    const summary = {
      passed: results.numPassedTests,
      failed: results.numFailedTests + results.numRuntimeErrorTestSuites,
      skipped: results.numPendingTests + results.numTodoTests,
      suitesFailedToRun: results.numRuntimeErrorTestSuites,
      // What failed, by name, so that CI's log says which test it was even when only its tail is kept.
      failures: results.testResults.flatMap((r) => {
        const file = r.testFilePath.slice(this.rootDir.length + 1);
        if (r.testExecError) return [`${file}: could not run: ${String(r.testExecError.message).split("\n")[0]}`];
        return r.testResults.filter((t) => t.status === "failed").map((t) => `${file}: ${t.fullName}`);
      }),
      node: process.version,
      wallTimeInSeconds: Math.round((Date.now() - results.startTime) / 1000),
      slowestFiles: results.testResults
        .map((r) => ({
          file: r.testFilePath.slice(this.rootDir.length + 1),
          seconds: Math.round((r.perfStats.end - r.perfStats.start) / 100) / 10,
        }))
        .sort((a, b) => b.seconds - a.seconds)
        .slice(0, 15),
    };
    writeFileSync(join(dir, this.file), JSON.stringify(summary, null, 2) + "\n");
  }
}

module.exports = ResultsReporter;
