/** Small helpers for the report: reading figures out of a scenario's JSON, and Markdown pieces. */
import { formatNumber } from "../../internal/chart.js";

/** One scenario's JSON, as `npm run bench -- <scenario> --json` prints it. */
export type ScenarioResult = Readonly<Record<string, unknown>> & { readonly scenario: string };

/** The value at a dotted path ("anchor.handoffMedianMs"), or undefined. */
export function get(value: unknown, path: string): unknown {
  let at = value;
  for (const key of path.split(".")) {
    if (at === null || typeof at !== "object") return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

/** The finite number at a dotted path, or undefined. */
export function num(value: unknown, path: string): number | undefined {
  const at = get(value, path);
  return typeof at === "number" && Number.isFinite(at) ? at : undefined;
}

/** A figure for the text: "n/a" when missing, else the number (at most 3 decimals) and the unit. */
export function fmt(value: number | undefined, unit = ""): string {
  return value === undefined || !Number.isFinite(value) ? "n/a" : `${formatNumber(value)}${unit}`;
}

/** `a / b` as "2.4×", or "n/a". */
export function times(a: number | undefined, b: number | undefined): string {
  if (a === undefined || b === undefined || b === 0) return "n/a";
  const ratio = a / b;
  return `${Number(ratio.toFixed(ratio >= 10 ? 0 : ratio >= 1 ? 1 : 2))}×`;
}

const cell = (value: string | number | undefined) =>
  (typeof value === "number" ? fmt(value) : (value ?? "")).replace(/\|/g, "\\|").replace(/\r?\n/g, " ");

/** A Markdown table. */
export function table(header: readonly string[], rows: readonly (readonly (string | number | undefined)[])[]): string {
  return [
    `| ${header.map(cell).join(" | ")} |`,
    `| ${header.map(() => "---").join(" | ")} |`,
    ...rows.map((row) => `| ${row.map(cell).join(" | ")} |`),
  ].join("\n");
}

/** "1 round", "3 rounds". */
export const count = (n: number | undefined, noun: string) => `${fmt(n)} ${noun}${n === 1 ? "" : "s"}`;

/** A bullet list. */
export const bullets = (lines: readonly string[]) => lines.map((line) => `- ${line}`).join("\n");
