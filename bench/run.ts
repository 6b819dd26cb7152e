/**
 * `npm run bench -- <scenario> [--json] [scenario flags]`
 *
 * Runs one benchmark scenario (or `all`) on an embedded Azurite, or on the account named by
 * AZURE_STORAGE_CONNECTION_STRING. With --json the last line printed is one JSON object.
 */
import { parseArgs } from "../src/cli/args.js";
import { runScenario, type BenchScenario } from "./harness.js";
import { scenarios } from "./scenarios/index.js";

function usage(): string {
  const names = Object.values(scenarios)
    .map((s: BenchScenario) => `  ${s.name.padEnd(12)} ${s.description}`)
    .join("\n");
  return `Usage: npm run bench -- <scenario|all> [--json] [flags]\n\nScenarios:\n${names}\n`;
}

async function main(): Promise<number> {
  const { positional, flags: args } = parseArgs(process.argv.slice(2));
  const name = positional[0];
  if (!name || args["help"]) {
    process.stdout.write(usage());
    return name ? 0 : 2;
  }
  const chosen = name === "all" ? Object.values(scenarios) : [scenarios[name]];
  if (chosen.some((s) => s === undefined)) {
    process.stderr.write(`Unknown scenario "${name}".\n${usage()}`);
    return 2;
  }
  const results: Record<string, unknown>[] = [];
  for (const scenario of chosen as BenchScenario[]) results.push(await runScenario(scenario, args));
  const output = name === "all" ? { scenario: "all", results } : results[0]!;
  if (args["json"]) process.stdout.write(`${JSON.stringify(output)}\n`);
  else process.stdout.write(`${JSON.stringify(output, null, 2)}\n`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
    process.exit(1);
  },
);
