/**
 * `azure-storage-concurrency bench`: the benchmarks (tools/bench/), shipped so that anyone can measure
 * the library against raw SDK calls on their own account, or on an embedded Azurite. Runs one
 * scenario or all of them, each on its own storage, with progress on stderr; prints the result as
 * JSON (one line with --json), and with --report writes the Markdown report with SVG charts.
 * From source, `npm run bench -- <args>` is this command.
 */
import { readFile } from "node:fs/promises";
import {
  failedScenario,
  flagNames,
  flagSpec,
  runScenario,
  timeLimitOf,
  type BenchScenario,
} from "../../bench/harness.js";
import type { ScenarioResult } from "../../bench/report/markdown.js";
import { startRun, writeReport, type BenchRun } from "../../bench/report/report.js";
import { scenarios } from "../../bench/scenarios/index.js";
import { redactSecrets } from "azure-storage-concurrency/errors";
import {
  numberFlag,
  shownArgument,
  stringFlag,
  UsageError,
  type FlagSpec,
  type Flags,
  didYouMean,
} from "../../internal/args.js";
import type { Command } from "../command.js";
import { explain } from "../explain.js";
import {
  accountConnection,
  checkReachable,
  chooseLoadTarget,
  LOAD_TARGET_FLAGS,
  openEmbeddedAzurite,
  type Connection,
} from "../target.js";

const NAME = "azure-storage-concurrency";
/** Flags of the command itself, allowed with every scenario. */
const OWN_FLAGS: FlagSpec = {
  json: { type: "boolean" },
  report: { type: "string" },
  from: { type: "string" },
  "time-limit": { type: "string" },
  ...LOAD_TARGET_FLAGS,
};

/** The command's flags and every scenario's (which ones a scenario accepts is checked once it is chosen). */
function allFlags(): FlagSpec {
  const all: Record<string, FlagSpec[string]> = { ...OWN_FLAGS };
  for (const scenario of Object.values(scenarios)) {
    for (const [name, spec] of Object.entries(flagSpec(scenario))) {
      if (all[name] && all[name].type !== spec.type)
        throw new Error(`bench flag --${name} is a ${all[name].type} in one scenario and a ${spec.type} in another`);
      all[name] = spec;
    }
  }
  return all;
}

/**
 * The command line as a report records it: the words as parsed, with the connection string's value
 * replaced (it holds the account key or a SAS), and any other secret redacted.
 */
function recordedCommand(invoked: string, positional: readonly string[], flags: Flags): string {
  const words = [...positional];
  for (const [name, value] of Object.entries(flags)) {
    if (value === undefined) continue;
    words.push(`--${name}`);
    if (typeof value === "string") words.push(name === "connection-string" ? "<redacted>" : value);
  }
  return redactSecrets(`${invoked} ${words.join(" ")}`);
}

/** `text` in lines of at most `width` characters, every line after the first indented by `indent` spaces. */
function wrap(text: string, width: number, indent: number): string {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  lines.push(line);
  return lines.join(`\n${" ".repeat(indent)}`);
}

function scenarioList(): string {
  const all = Object.values(scenarios);
  const width = Math.max(...all.flatMap((s) => Object.keys(s.flags).map((usage) => usage.length)));
  return all
    .map((s) =>
      [
        `  ${s.name.padEnd(11)} ${wrap(`${s.description} (time limit ${timeLimitOf(s)} s)`, 100 - 14, 14)}`,
        ...Object.entries(s.flags).map(
          ([usage, meaning]) => `      ${usage.padEnd(width)}  ${wrap(meaning, 100 - width - 8, width + 8)}`,
        ),
      ].join("\n"),
    )
    .join("\n");
}

const help = `Usage: ${NAME} bench <scenario[,scenario...]|all> [--json] [--report <file>.md] [scenario flags]
       ${NAME} bench --from <results.json> --report <file>.md

Measures the library against raw SDK calls, both in the same run: backoff strategies under
contention, optimistic updates, lease lock handoffs, queue consumers, table transactions, Azure
Files read-modify-write. Each scenario creates its own containers, tables, queues and shares (their
names start with "bench") and deletes them at the end; a run stopped with Ctrl-C may leave some
behind. \`all\` runs every scenario, one after another; a comma-separated list runs those.

Options:
  --json               print the result as one JSON line, the last line on stdout (without it:
                       indented JSON); progress goes to stderr either way
  --report <file>.md   also write a Markdown report with SVG charts; the charts and the run's
                       results.json go in the folder <file>/ beside it
  --from <file>        with --report: write the report of a saved results.json, running nothing
  --time-limit <s>     stop a scenario that runs longer than this many seconds (default: each
                       scenario's own limit, shown below); its result then says so in "error",
                       and \`all\` goes on with the next scenario

Scenarios and their flags:
${scenarioList()}

Target (the first line on stderr says which):
  (default)                 an embedded Azurite, a fresh one per scenario (the azurite package must
                            be installed); AZURE_STORAGE_CONNECTION_STRING alone never sends a
                            benchmark to an account
  --use-env                 the account in AZURE_STORAGE_CONNECTION_STRING
  --connection-string <cs>  that account (visible in the process list: prefer --use-env)
  --azurite                 the embedded Azurite, said explicitly
Azurite runs on your own CPUs: its rates are the emulator's, not Azure's; what carries over is each
comparison within a run, and the request counts. Azure Files is not emulated: on Azurite, \`files\`
runs on the library's Files responder. Worker processes get the connection string through their
environment, and reports record the command line without it.

A scenario needs the Azure SDKs it measures installed beside this tool: @azure/storage-blob (retry,
lock, optimistic), @azure/data-tables (batch, queue), @azure/storage-queue (queue),
@azure/storage-file-share (files).

Exit codes: 0 done, 1 a scenario failed, 2 usage (unknown scenario or flag, missing SDK or azurite).
A scenario fails when it ends with an error or runs past its time limit; with several scenarios,
the others still run, and their figures are printed and reported.

Examples:
  ${NAME} bench retry --writers 1,4,16 --rounds 1 --json
  ${NAME} bench lock --seconds 20 --use-env   # on the account in AZURE_STORAGE_CONNECTION_STRING
  ${NAME} bench all --report benchmarks.md`;

/** Rejects a flag that neither the command nor any chosen scenario knows (a typo would go unseen). */
function checkFlags(flags: Flags, chosen: readonly BenchScenario[]): void {
  const known = new Set([...Object.keys(OWN_FLAGS), ...chosen.flatMap(flagNames)]);
  for (const [flag, value] of Object.entries(flags)) {
    if (value === undefined || known.has(flag)) continue;
    const which = chosen.length === 1 ? `${chosen[0]!.name}'s flags` : "the scenarios' flags";
    throw new UsageError(
      `unknown flag --${flag} for bench ${chosen.length === 1 ? chosen[0]!.name : "all"}; ${which}: ${
        [...known]
          .filter((f) => !(f in OWN_FLAGS))
          .map((f) => `--${f}`)
          .join(", ") || "none"
      } (see \`bench --help\`)`,
    );
  }
}

export const benchCommand: Command = {
  name: "bench",
  summary: "benchmarks: the library against raw SDK calls, on an embedded Azurite or your account",
  help,
  get flags() {
    return allFlags();
  },
  async run({ positional, flags, out, progress }) {
    const report = stringFlag(flags, "report");
    if (report !== undefined && !report.endsWith(".md"))
      throw new UsageError(`--report takes a Markdown file name ending in .md, got ${shownArgument(report)}`);
    const from = stringFlag(flags, "from");
    if (from !== undefined) {
      if (report === undefined) throw new UsageError("--from needs --report <file>.md");
      if (positional.length > 0) throw new UsageError("--from runs nothing: leave out the scenario name");
      const saved = JSON.parse(await readFile(from, "utf8")) as BenchRun;
      for (const file of await writeReport(report, saved)) progress(`wrote ${file}`);
      return 0;
    }

    const [name, ...extra] = positional;
    if (!name) throw new UsageError(`bench needs a scenario or all; run \`${NAME} bench --help\``);
    if (extra.length > 0) throw new UsageError(`unexpected argument ${shownArgument(extra[0]!)}`);
    const names = name === "all" ? Object.keys(scenarios) : name.split(",");
    const unknown = names.find((n) => !scenarios[n]);
    if (unknown !== undefined)
      throw new UsageError(
        `unknown scenario ${shownArgument(unknown)}${didYouMean(unknown, [...Object.keys(scenarios), "all"])}; choose from ${Object.keys(scenarios).join(", ")}, or all`,
      );
    const chosen = names.map((n) => scenarios[n]!);
    checkFlags(flags, chosen);
    const timeLimitInSec = flags["time-limit"] === undefined ? undefined : numberFlag(flags, "time-limit", 0, 0.1);
    const target = chooseLoadTarget(flags);
    const services = chosen.flatMap((scenario) => scenario.services);
    progress(
      target.kind === "account"
        ? target.describe(services[0] ?? "blob")
        : `${target.describe()}${chosen.length > 1 ? ", a fresh one per scenario" : ""}`,
    );
    // Every SDK the run needs, before anything starts: a missing one is one line, not a failure
    // halfway through `all`.
    const sdks: unknown[] = [];
    for (const scenario of chosen) sdks.push(await scenario.loadSdks());
    if (target.kind === "account") {
      for (const service of services) target.account.endpoint(service); // a clear line for a missing endpoint
      await checkReachable(target.account, services);
    }
    const connect = async (): Promise<Connection> =>
      target.kind === "account" ? accountConnection(target.account) : openEmbeddedAzurite();
    const invoked = process.env.npm_lifecycle_event === "bench" ? "npm run bench --" : `${NAME} bench`;
    const finish = startRun(recordedCommand(invoked, positional, flags), target.kind);

    const results: ScenarioResult[] = [];
    for (const [i, scenario] of chosen.entries()) {
      if (chosen.length > 1) progress(`scenario ${i + 1} of ${chosen.length}: ${scenario.name}`);
      const started = performance.now();
      try {
        const result = await runScenario(scenario, sdks[i], flags, { connect, progress, timeLimitInSec });
        results.push(result as ScenarioResult); // runScenario sets `scenario`
      } catch (error) {
        // One scenario alone fails as any command does; within `all`, the others still run and report.
        if (chosen.length === 1 || error instanceof UsageError) throw error;
        const line = explain(error);
        progress(`[${scenario.name}] failed: ${line}`);
        const seconds = Math.round((performance.now() - started) / 100) / 10;
        results.push({ ...failedScenario(scenario, target.kind === "account" ? "account" : "azurite", line, seconds) });
      }
    }
    const failed = results.filter((r) => typeof r["error"] === "string").map((r) => r.scenario);
    if (failed.length > 0 && chosen.length > 1)
      progress(`${failed.length} of ${chosen.length} scenarios did not finish: ${failed.join(", ")}`);
    const run: BenchRun = { scenario: name, run: finish(), results };
    if (report !== undefined) for (const file of await writeReport(report, run)) progress(`wrote ${file}`);
    const output = chosen.length > 1 ? run : results[0]!;
    out(flags["json"] ? JSON.stringify(output) : JSON.stringify(output, null, 2));
    return failed.length > 0 ? 1 : 0;
  },
};
