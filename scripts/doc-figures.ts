/**
 * The measured figures the documentation quotes come from the benchmark results file
 * (`docs/benchmarks/results.json`, written by `npm run bench -- all --report docs/benchmarks.md`).
 *
 * In the Markdown, a quoted figure is the number right before a marker that names where it comes
 * from: `811<!--fig queue.rawPerSec--> messages/s`. GitHub shows "811 messages/s". The name is a
 * path into the results file: the scenario, then keys, with `[key=value,...]` to pick an element of
 * an array (`retry.results[strategy=fixed,writers=8].requestsPerSuccess`); `run.` reads the run's
 * own record (machine, date); a few figures derived from others are named in {@link DERIVED}. After
 * the path, a format: `.N` rounds to N decimals (`<!--fig queue.perSec .0-->`), `%` shows a share as
 * a percentage. (Not `|`: it would split a Markdown table's cell, comment or not.)
 *
 * - `npm run docs:figures` writes every marked figure again from the results file (after a new
 *   benchmark run);
 * - `npm run docs:figures -- --check` (and `tests/unit/docs/doc-figures.test.ts` in `npm test`)
 *   fails when a marked figure differs from the file, names nothing in it, or when a figure looks
 *   measured but has no marker (see {@link unmarkedFigures}).
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

/** The results file, relative to the project root. */
export const RESULTS_FILE = "docs/benchmarks/results.json";

/** A figure marker: the number before it, and the path (and format) it names. */
const MARKER = /(-?\d[\d,]*(?:\.\d+)?)?<!--fig ([^\s>]+)(?:\s+([^\s>]+))?\s*-->/g;

type Results = { readonly run: unknown; readonly results: readonly { readonly scenario: string }[] };

/** Figures computed from others, for sentences that quote them. */
const DERIVED: Record<string, (get: (path: string) => number) => number> = {
  /** The most acquisitions a second one lock can give when each holder keeps it `holdMs` and the handoff takes its median. */
  "lock.ceilingPerSec": (get) => 1000 / (get("lock.holdMs") + get("lock.handoffMedianMs")),
};

/** The value at `path` in the results (see the module comment), or an error message. */
export function lookUp(results: Results, path: string): number | string {
  const derived = DERIVED[path];
  if (derived) {
    return derived((inner) => {
      const value = lookUp(results, inner);
      if (typeof value === "string") throw new Error(value);
      return value;
    });
  }
  const [head, ...rest] = path.split(".");
  let node: unknown = head === "run" ? results.run : results.results.find((result) => result.scenario === head);
  if (node === undefined) return `no scenario '${head}' in ${RESULTS_FILE}`;
  for (const step of rest.join(".").match(/[^.[\]]+|\[[^\]]*\]/g) ?? []) {
    if (step.startsWith("[")) {
      const conditions = step
        .slice(1, -1)
        .split(",")
        .map((pair) => pair.split("=") as [string, string]);
      node = Array.isArray(node)
        ? node.find((item: Record<string, unknown>) => conditions.every(([key, value]) => String(item[key]) === value))
        : undefined;
    } else if (/^\d+$/.test(step) && Array.isArray(node)) {
      node = node[Number(step)];
    } else {
      node = typeof node === "object" && node !== null ? (node as Record<string, unknown>)[step] : undefined;
    }
    if (node === undefined) return `'${path}' is not in ${RESULTS_FILE} (no '${step}')`;
  }
  return typeof node === "number" ? node : `'${path}' in ${RESULTS_FILE} is not a number`;
}

/** A figure as the docs show it: grouped thousands, the decimals the format asks for (default: as stored). */
export function formatFigure(value: number, format: string | undefined): string {
  if (format === "%") return formatFigure(Math.round(value * 100 * 100) / 100, undefined);
  if (format !== undefined && !/^\.\d+$/.test(format)) {
    throw new Error(`unknown figure format '${format}' (use .N for N decimals, or %)`);
  }
  const decimals = format === undefined ? undefined : Number(format.slice(1));
  return value.toLocaleString("en-US", {
    useGrouping: true,
    minimumFractionDigits: decimals ?? 0,
    maximumFractionDigits: decimals ?? 20,
  });
}

/** What {@link checkDocFigures} and {@link updateDocFigures} found. */
export interface DocFiguresReport {
  /** How many marked figures the docs have. */
  readonly figures: number;
  /** One line per problem, `file:line: ...`. */
  readonly problems: readonly string[];
}

/** One document's text with every marked figure written from the results, and the problems met. */
export function renderFigures(
  file: string,
  text: string,
  results: Results,
): { text: string; report: DocFiguresReport } {
  const problems: string[] = [];
  let figures = 0;
  const code = [...text.matchAll(/^\s*```[\s\S]*?^\s*```|`[^`\n]*`/gm)].map(
    (m) => [m.index, m.index + m[0].length] as const,
  );
  const rendered = text.replace(
    MARKER,
    (whole, shown: string | undefined, path: string, format: string | undefined, offset: number) => {
      if (code.some(([start, end]) => offset >= start && offset < end)) return whole; // an example of the syntax
      figures += 1;
      const where = `${file}:${text.slice(0, offset).split("\n").length}`;
      const value = lookUp(results, path.trim());
      if (typeof value === "string") {
        problems.push(`${where}: ${value}`);
        return whole;
      }
      const expected = formatFigure(value, format?.trim());
      if (shown === undefined)
        problems.push(`${where}: no figure before the marker of '${path}' (expected ${expected})`);
      else if (shown !== expected)
        problems.push(`${where}: shows ${shown} for '${path}', ${RESULTS_FILE} has ${expected}`);
      return whole.replace(shown ?? "", expected);
    },
  );
  problems.push(...unmarkedFigures(file, text));
  return { text: rendered, report: { figures, problems } };
}

/**
 * Figures that look measured but carry no marker: a rate (`655 messages/s`, `389/s`), a ratio
 * with decimals (`0.91x`, `8.4-10x`) or a latency quoted as a median or percentile; and any number
 * with decimals in a measured passage: a section whose heading starts with "Measured", a paragraph
 * that starts with "Measured" or names `npm run bench`, the table right after such a paragraph, a
 * table with a "measured" column. Code (between backticks or in a fenced block), goals (`≥ 0.7`),
 * versions (`12.30+`, `Node.js 22.18`) and the constants in {@link NOT_MEASURED} are not figures. This is a guard against a figure typed
 * by hand, not a proof that there is none: write every figure a benchmark produced with its marker.
 */
export function unmarkedFigures(file: string, text: string): string[] {
  const found: string[] = [];
  let measuredSection = false;
  let previousBlockMeasured = false;
  let inFence = false;
  // Blocks: runs of lines between blank lines (a paragraph, a table, a list item), outside fences.
  let block: { first: number; lines: string[] } = { first: 0, lines: [] };
  const flush = () => {
    if (block.lines.length === 0) return;
    const joined = block.lines.join("\n");
    const isTable = block.lines.every((line) => line.startsWith("|"));
    const measured =
      measuredSection ||
      /^measured\b/i.test(joined) ||
      /npm run bench/.test(joined) ||
      (isTable && (previousBlockMeasured || /^\|.*\bmeasured\b/i.test(block.lines[0]!)));
    for (const [i, line] of block.lines.entries()) found.push(...figuresIn(file, block.first + i + 1, line, measured));
    previousBlockMeasured = measured && !isTable;
    block = { first: 0, lines: [] };
  };
  for (const [i, line] of text.split("\n").entries()) {
    if (/^\s*```/.test(line)) {
      flush();
      inFence = !inFence;
      continue;
    }
    if (inFence) continue;
    const heading = /^#+\s+(.*)$/.exec(line);
    if (heading || line.trim() === "") {
      flush();
      if (heading) {
        measuredSection = /^measured\b/i.test(heading[1]!);
        previousBlockMeasured = false;
      }
      continue;
    }
    if (/^\s*(?:[-*]|\d+\.)\s/.test(line)) flush(); // each list item is a block of its own
    if (block.lines.length === 0) block.first = i;
    block.lines.push(line);
  }
  flush();
  return found;
}

/** The unmarked figures of one line (see {@link unmarkedFigures}). */
function figuresIn(file: string, lineNumber: number, line: string, measured: boolean): string[] {
  const prose = line
    .replace(/`[^`]*`/g, "`…`")
    .replace(/[≥≤<>]=?\s*\d[\d,.]*/g, "GOAL")
    .replace(/\b\d+(?:\.\d+)+\+|\b(?:v|version |Node\.js |Node |Azurite )\d+(?:\.\d+)+/g, "VERSION")
    .replace(/-?\d[\d,]*(?:\.\d+)?<!--fig [^>]*-->/g, "FIG")
    .replace(/\]\([^)]*\)/g, "]()");
  const patterns = [
    /\b\d[\d,.]*(?:\s*[-–]\s*\d[\d,.]*)?\s*(?:[A-Za-z]+\s*)?\/s\b/g,
    /\b\d+\.\d+(?:\s*[-–]\s*\d+(?:\.\d+)?)?[x×](?![\w-])/g,
    /\b(?:median|p\d\d)\W{0,4}\d[\d,.]*/gi,
    ...(measured ? [/(?<![\w.])\d+\.\d+\b/g] : []),
  ];
  const found: string[] = [];
  for (const pattern of patterns) {
    for (const match of prose.matchAll(pattern)) {
      if (NOT_MEASURED.some((constant) => constant.test(match[0].trim()))) continue;
      found.push(
        `${file}:${lineNumber}: '${match[0].trim()}' looks measured: mark it with <!--fig path--> (scripts/doc-figures.ts)`,
      );
    }
  }
  return found;
}

/** Numbers in the docs that look like figures but are stated limits or settings, not measurements. */
const NOT_MEASURED: readonly RegExp[] = [
  /^500\s*(entities\s*)?\/s$/, // the partitioning guide's target for one partition
];

/** The Markdown files whose figures are checked: README.md and docs/ (not the generated API reference). */
export function documentFiles(root: string): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return path === join(root, "docs", "api") ? [] : walk(path);
      return entry.name.endsWith(".md") ? [path] : [];
    });
  // benchmarks.md is the report itself, written from the same file by `bench --report`.
  return [join(root, "README.md"), ...walk(join(root, "docs"))]
    .filter((path) => path !== join(root, "docs", "benchmarks.md"))
    .sort();
}

function run(root: string, write: boolean): DocFiguresReport {
  const results = JSON.parse(readFileSync(join(root, RESULTS_FILE), "utf8")) as Results;
  const problems: string[] = [];
  let figures = 0;
  for (const path of documentFiles(root)) {
    const file = relative(root, path).split(sep).join("/");
    const text = readFileSync(path, "utf8");
    const { text: rendered, report } = renderFigures(file, text, results);
    figures += report.figures;
    if (write) {
      if (rendered !== text) writeFileSync(path, rendered);
      problems.push(...report.problems.filter((problem) => !/: shows /.test(problem)));
    } else {
      problems.push(...report.problems);
    }
  }
  return { figures, problems };
}

/** Checks every marked figure of the docs against the results file, and looks for unmarked ones. */
export function checkDocFigures(root: string): DocFiguresReport {
  return run(root, false);
}

/** Writes every marked figure of the docs again from the results file; reports what it could not. */
export function updateDocFigures(root: string): DocFiguresReport {
  return run(root, true);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
  const check = process.argv.includes("--check");
  const report = check ? checkDocFigures(root) : updateDocFigures(root);
  for (const problem of report.problems) console.log(problem);
  console.log(
    `${report.figures} figures ${check ? "checked against" : "written from"} ${RESULTS_FILE}, ${report.problems.length} problems`,
  );
  process.exitCode = report.problems.length ? 1 : 0;
}
