/**
 * The benchmark report: `npm run bench -- all --report docs/benchmarks.md` writes a Markdown page,
 * its SVG charts and the run's whole JSON (results.json) into a folder named after the page
 * (docs/benchmarks/). {@link renderReport} is pure (results in, file contents out); each scenario's
 * part comes from its section writer in ./sections, and the goals from ./goals.ts.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { loadavg, release, type as osType } from "node:os";
import { basename, dirname, extname, join, sep } from "node:path";
import { createRequire } from "node:module";
import { machine } from "../harness.js";
import { locatePackage } from "../../internal/package-root.js";
import { evaluateGoals, goalText, type GoalOutcome } from "./goals.js";
import { bullets, fmt, table, type ScenarioResult } from "./markdown.js";
import { genericSection, sectionWriters } from "./sections/index.js";

/** Where and when a run happened. */
interface RunInfo {
  /** ISO 8601, UTC. */
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly durationSec: number;
  readonly machine: ReturnType<typeof machine> & { readonly os: string };
  /** One-minute load averages when the run started and ended (0 on Windows). */
  readonly loadAverage: { readonly atStart: number; readonly atEnd: number };
  /** The version of azure-storage-concurrency measured (absent in runs saved before it was recorded). */
  readonly version?: string;
  /**
   * The commit measured ("abc1234", with "+ uncommitted changes" when the tree was dirty), or
   * "unknown" (an installed package, which is no git checkout).
   */
  readonly commit: string;
  /** The command line, as typed. */
  readonly command: string;
  /** "azurite" (embedded) or "account" (named with --use-env or --connection-string). */
  readonly target: string;
}

/** What `npm run bench -- all --json` prints, and the report is written from. */
export interface BenchRun {
  /** "all", or the one scenario run. */
  readonly scenario: string;
  readonly run: RunInfo;
  readonly results: readonly ScenarioResult[];
}

/**
 * Who the report is for. `"repository"`: this project's own page (docs/benchmarks.md), with the
 * contributors' commands and the issues each goal comes from. `"user"`: a report written in a user's
 * project by the installed tool: its commands (`npx azure-storage-concurrency bench …`), no issue
 * numbers, no instructions about this repository's files, guides linked at the published version.
 */
export type ReportAudience = "repository" | "user";

/**
 * `"repository"` when the tool runs from this project's workspace (a clone: the package's parent is
 * the workspace root `azure-storage-concurrency` that lists `tools`), else `"user"` (installed from npm).
 */
export function reportAudience(moduleUrl: string = import.meta.url): ReportAudience {
  try {
    const { root } = locatePackage(moduleUrl);
    const parent = JSON.parse(readFileSync(join(dirname(root), "package.json"), "utf8")) as {
      name?: unknown;
      workspaces?: unknown;
    };
    return parent.name === "azure-storage-concurrency" &&
      Array.isArray(parent.workspaces) &&
      parent.workspaces.includes("tools")
      ? "repository"
      : "user";
  } catch {
    return "user";
  }
}

/** The report's files, by path relative to the report's folder. */
interface RenderedReport {
  readonly markdown: string;
  readonly files: ReadonlyMap<string, string>;
}

/** Starts a {@link RunInfo}; call the returned function when the run is over. */
export function startRun(command: string, target: string): () => RunInfo {
  const started = new Date();
  const atStart = loadavg()[0] ?? 0;
  return () => {
    const finished = new Date();
    return {
      startedAt: started.toISOString(),
      finishedAt: finished.toISOString(),
      durationSec: Math.round((finished.getTime() - started.getTime()) / 100) / 10,
      machine: { ...machine(), os: `${osType()} ${release()}` },
      loadAverage: { atStart: Math.round(atStart * 100) / 100, atEnd: Math.round((loadavg()[0] ?? 0) * 100) / 100 },
      version: packageVersion(),
      commit: currentCommit(),
      command,
      target,
    };
  };
}

/** The version of the library measured (the one the tools import), not the tools package's own. */
function packageVersion(): string {
  let manifest: string;
  try {
    manifest = createRequire(import.meta.url).resolve("azure-storage-concurrency/package.json");
  } catch {
    manifest = join(locatePackage(import.meta.url).root, "package.json");
  }
  return (JSON.parse(readFileSync(manifest, "utf8")) as { version: string }).version;
}

/**
 * The checkout's commit, when the tools run from one: this repository, where they sit in `tools/`
 * beside the library, so the checkout is their folder's parent. Never the commit of a directory
 * around an installed package (a user's project that is a git checkout): "unknown" there.
 */
function currentCommit(): string {
  const { root } = locatePackage(import.meta.url);
  const checkout = [root, dirname(root)].find((dir) => existsSync(join(dir, ".git")));
  if (checkout === undefined || root.split(sep).includes("node_modules")) return "unknown";
  try {
    const git = (...args: string[]) =>
      execFileSync("git", ["-C", checkout, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    const head = git("rev-parse", "--short", "HEAD");
    return git("status", "--porcelain", "--untracked-files=no") ? `${head} + uncommitted changes` : head;
  } catch {
    return "unknown";
  }
}

/** JSON with arrays of plain numbers or strings kept on one line. */
function compactJson(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(
    /\[\s+((?:-?[\d.e+-]+|"[^"\n]*"|true|false|null)(?:,\s+(?:-?[\d.e+-]+|"[^"\n]*"|true|false|null))*)\s+\]/g,
    (_, items: string) => `[${items.split(/,\s+/).join(", ")}]`,
  );
}

const STATUS = { met: "met", "not met": "**not met**", "not reported": "not reported" } as const;

function goalRows(outcomes: readonly GoalOutcome[], withScenario: boolean, withSource: boolean) {
  return outcomes.map((g) => [
    ...(withScenario ? [`\`${g.scenario}\``] : []),
    `\`${g.figure}\``,
    goalText(g),
    fmt(g.value),
    STATUS[g.status],
    ...(withSource ? [g.source] : []),
  ]);
}

/** Why each goal not met was missed, as a list under the goals table. */
function missedReasons(outcomes: readonly GoalOutcome[]): string[] {
  const missed = outcomes.filter((g) => g.status === "not met");
  if (missed.length === 0) return [];
  const why = (g: GoalOutcome) => g.whyMissed ?? "no analysis recorded for this goal yet.";
  return [
    "",
    "Why the goals not met were missed:",
    "",
    bullets(missed.map((g) => `\`${g.scenario}\` \`${g.figure}\`: ${why(g)}`)),
  ];
}

/**
 * Renders the report of `run`. `assets` is the folder, relative to the report, that the charts and
 * results.json go in (and the Markdown links to).
 */
export function renderReport(
  run: BenchRun,
  { assets, audience = "user" }: { assets: string; audience?: ReportAudience },
): RenderedReport {
  const files = new Map<string, string>();
  const repository = audience === "repository";
  // How the reader runs a scenario: this project's script in a clone, the installed command elsewhere.
  const bench = repository ? "npm run bench --" : "npx azure-storage-concurrency bench";
  const { run: info, results } = run;
  const known = Object.keys(sectionWriters);
  const ordered = [
    ...known.flatMap((name) => results.filter((r) => r.scenario === name)),
    ...results.filter((r) => !known.includes(r.scenario)),
  ];
  const goals = evaluateGoals(ordered);
  const met = goals.filter((g) => g.status === "met").length;
  const m = info.machine;
  const busy = info.loadAverage.atStart > m.cpus * 0.5 || info.loadAverage.atEnd > m.cpus * 0.5;

  const out: string[] = [
    "# Benchmarks",
    "",
    repository
      ? `<!-- Written by \`${info.command}\`. Change tools/bench/report/ and run it again rather than editing this page. -->`
      : `<!-- Written by \`${info.command}\`. -->`,
    "",
    "What the library costs and saves against raw SDK calls, every comparison measured in one run on the machine below. " +
      (info.target === "azurite"
        ? "The storage is an embedded Azurite on the same machine: absolute rates are the emulator's on these CPUs, not Azure's; what carries over is each comparison within a run, and the request counts."
        : "The storage is a real account, named on the command line (`--use-env` or `--connection-string`)."),
    "",
    "## The run",
    "",
    table(
      ["", ""],
      [
        ["date (UTC)", `${info.startedAt.replace("T", " ").replace(/\.\d+Z$/, "")}, ${fmt(info.durationSec)} s in all`],
        ["Node.js", m.node],
        ["CPU", `${m.cpuModel}, ${m.cpus} logical CPU${m.cpus === 1 ? "" : "s"}`],
        ["memory", `${m.memoryGiB} GiB`],
        ["OS", `${m.os} (${m.platform})`],
        ["load average (1 min) at start / end", `${fmt(info.loadAverage.atStart)} / ${fmt(info.loadAverage.atEnd)}`],
        ...(info.version === undefined ? [] : [["azure-storage-concurrency", info.version]]),
        ["commit", `\`${info.commit}\``],
        [
          "storage",
          info.target === "azurite"
            ? "embedded Azurite (data in a temporary folder), one per scenario"
            : "a real account",
        ],
        [
          "scenarios",
          ordered
            .map(
              (r) =>
                `\`${r.scenario}\` (${fmt(typeof r["durationSec"] === "number" ? r["durationSec"] : undefined)} s${typeof r["error"] === "string" ? ", did not finish" : ""})`,
            )
            .join(", "),
        ],
      ],
    ),
    "",
    ...(busy
      ? [
          `> The machine was not idle during this run (load average ${fmt(info.loadAverage.atStart)} at the start, ${fmt(info.loadAverage.atEnd)} at the end, on ${m.cpus} CPUs): expect noisy figures, and rerun on a quiet machine before comparing with another run.`,
          "",
        ]
      : []),
    "## How to reproduce",
    "",
    "```sh",
    ...(repository
      ? [
          "npm ci",
          "npm run bench -- all --report docs/benchmarks.md   # this page, its charts and results.json",
          "npm run bench -- all --json                        # the same figures, as one JSON line",
          "npm run bench -- <scenario> --json                 # one scenario; npm run bench -- --help lists them and their flags",
        ]
      : [
          `${bench} all --report benchmarks.md   # a page like this one, its charts and results.json`,
          `${bench} all --json                   # the same figures, as one JSON line`,
          `${bench} <scenario> --json            # one scenario; ${bench} --help lists them and their flags`,
        ]),
    "```",
    "",
    "Scenarios run one after another, each on its own embedded Azurite; add `--use-env` to run them against the account in `AZURE_STORAGE_CONNECTION_STRING` instead. " +
      (repository
        ? "The package ships the same benchmarks as a command, to measure your own account: `npx azure-storage-concurrency-cli bench all --report benchmarks.md --use-env`. "
        : "") +
      `Every figure below comes from this run's JSON: [${assets}/results.json](${assets}/results.json), and each section shows its scenario's part.`,
    "",
    "## Goals",
    "",
    ...(goals.length === 0
      ? ["No scenario with goals ran."]
      : [
          `${met} of ${goals.length} goals met in this run. Each is read from the scenario's JSON and compared here.`,
          "",
          repository
            ? table(["scenario", "figure", "goal", "measured", "", "from"], goalRows(goals, true, true))
            : table(["scenario", "figure", "goal", "measured", ""], goalRows(goals, true, false)),
          ...missedReasons(goals),
        ]),
    "",
  ];

  for (const result of ordered) {
    const section =
      typeof result["error"] === "string"
        ? failedSection(result, result["error"])
        : (sectionWriters[result.scenario] ?? genericSection)(result);
    out.push(
      `## ${section.title}`,
      "",
      `Scenario \`${result.scenario}\`: \`${bench} ${result.scenario} --json\`.`,
      "",
      section.intro,
      "",
    );
    for (const chart of section.charts) {
      const file = `${assets}/${result.scenario}-${chart.name}.svg`;
      files.set(file, chart.svg);
      out.push(`![${chart.alt}](${file})`, "");
    }
    if (section.body) out.push(section.body, "");
    // A scenario run again on its own and put into this run's results (its JSON says why and how).
    if (typeof result["rerun"] === "string") out.push(`> This scenario was ${result["rerun"]}.`, "");
    const own = goals.filter((g) => g.scenario === result.scenario);
    if (own.length > 0) {
      out.push(
        "Goals:",
        "",
        bullets(own.map((g) => `\`${g.figure}\` ${fmt(g.value)} (goal ${goalText(g)}): ${STATUS[g.status]}`)),
        "",
      );
    }
    out.push(
      "<details><summary>This scenario's JSON</summary>",
      "",
      "```json",
      compactJson(result),
      "```",
      "",
      "</details>",
      "",
    );
  }
  const text = repository ? out.join("\n") : forUsers(out.join("\n"), info.version);
  const markdown = `${text.replace(/\n{3,}/g, "\n\n").trimEnd()}\n`;
  files.set(`${assets}/results.json`, `${JSON.stringify(run, null, 2)}\n`);
  return { markdown, files };
}

/**
 * The report as a user's project gets it: this repository's commands as the installed tool's, and
 * each guide it names (`docs/x.md`) linked to the published copy of that version (the package ships
 * its guides; unpkg serves the files of every npm tarball).
 */
function forUsers(markdown: string, version: string | undefined): string {
  const published = `https://unpkg.com/azure-storage-concurrency@${version ?? "latest"}/`;
  return markdown
    .replace(/npm run bench -- /g, "npx azure-storage-concurrency bench ")
    .replace(
      /(?<!\]\()(?<![\w/[])docs\/([\w/-]+\.md)(?![\w\]])/g,
      (_, page: string) => `[docs/${page}](${published}docs/${page})`,
    );
}

/** The section of a scenario that did not finish: why, and no figures. */
function failedSection(result: ScenarioResult, error: string) {
  return {
    title: `Scenario \`${result.scenario}\`: did not finish`,
    intro: `This scenario did not finish in this run: ${error}. Its goals show as not reported; the other scenarios ran as usual.`,
    charts: [],
    body: "",
  };
}

/** Writes the report to `reportPath` and its charts and results.json into the folder named after it. */
export async function writeReport(
  reportPath: string,
  run: BenchRun,
  audience: ReportAudience = reportAudience(),
): Promise<string[]> {
  const assets = basename(reportPath, extname(reportPath));
  const { markdown, files } = renderReport(run, { assets, audience });
  const folder = dirname(reportPath);
  await mkdir(join(folder, assets), { recursive: true });
  const written = [reportPath];
  await writeFile(reportPath, markdown);
  for (const [file, content] of files) {
    await writeFile(join(folder, file), content);
    written.push(join(folder, file));
  }
  return written;
}
