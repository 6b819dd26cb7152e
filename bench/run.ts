/**
 * `npm run bench -- <scenario|all> [--json] [--report <file>.md] [scenario flags]`
 *
 * Runs one benchmark scenario, or all of them one after another, each on its own embedded Azurite
 * (or on the account named by AZURE_STORAGE_CONNECTION_STRING). With --json the last line printed is
 * one JSON object. With --report, also writes a Markdown report with SVG charts and the run's JSON
 * (bench/report/). `--from <results.json> --report <file>.md` writes the report of a saved run
 * without running anything.
 */
import { readFile } from "node:fs/promises";
import { parseArgs } from "../src/cli/args.js";
import { runScenario, type BenchScenario } from "./harness.js";
import type { ScenarioResult } from "./report/markdown.js";
import { startRun, writeReport, type BenchRun } from "./report/report.js";
import { scenarios } from "./scenarios/index.js";

function usage(): string {
  const names = Object.values(scenarios)
    .map((s: BenchScenario) => `  ${s.name.padEnd(12)} ${s.description}`)
    .join("\n");
  return (
    `Usage: npm run bench -- <scenario|all> [--json] [--report <file>.md] [flags]\n` +
    `       npm run bench -- --from <results.json> --report <file>.md\n\n` +
    `  --json              print the result as one JSON line (the last line of the output)\n` +
    `  --report <file>.md  also write a Markdown report, with its charts and results.json in <file>/\n` +
    `  --from <file>       with --report: write the report of a saved results.json, running nothing\n\n` +
    `Scenarios:\n${names}\n`
  );
}

async function main(): Promise<number> {
  const { positional, flags: args } = parseArgs(process.argv.slice(2));
  const name = positional[0];
  const report = args["report"];
  const from = args["from"];
  if (report !== undefined && (typeof report !== "string" || !report.endsWith(".md"))) {
    process.stderr.write(`--report takes a Markdown file name ending in .md.\n${usage()}`);
    return 2;
  }
  if (from !== undefined) {
    if (typeof from !== "string" || typeof report !== "string") {
      process.stderr.write(`--from takes a results.json file and needs --report.\n${usage()}`);
      return 2;
    }
    const saved = JSON.parse(await readFile(from, "utf8")) as BenchRun;
    for (const file of await writeReport(report, saved)) process.stderr.write(`wrote ${file}\n`);
    return 0;
  }
  if (!name || args["help"]) {
    process.stdout.write(usage());
    return name ? 0 : 2;
  }
  const chosen = name === "all" ? Object.values(scenarios) : [scenarios[name]];
  if (chosen.some((s) => s === undefined)) {
    process.stderr.write(`Unknown scenario "${name}".\n${usage()}`);
    return 2;
  }
  const finish = startRun(
    `npm run bench -- ${process.argv.slice(2).join(" ")}`,
    process.env.AZURE_STORAGE_CONNECTION_STRING ? "account" : "azurite",
  );
  const results: ScenarioResult[] = [];
  for (const scenario of chosen as BenchScenario[]) results.push((await runScenario(scenario, args)) as ScenarioResult); // it sets `scenario`
  const run: BenchRun = { scenario: name, run: finish(), results };
  if (typeof report === "string") {
    for (const file of await writeReport(report, run)) process.stderr.write(`wrote ${file}\n`);
  }
  const output = name === "all" ? run : results[0]!;
  if (args["json"]) process.stdout.write(`${JSON.stringify(output)}\n`);
  else process.stdout.write(`${JSON.stringify(output, null, 2)}\n`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
