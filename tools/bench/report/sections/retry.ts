/** The `retry` scenario: goodput and requests per success against the number of writers, per backoff. */
import { renderLineChart, type ReferenceLine } from "../../../internal/chart.js";
import { growthOf } from "../../stats.js";
import { bullets, count, fmt, get, num, table, times } from "../markdown.js";
import type { SectionWriter } from "./section.js";

interface Row {
  strategy: string;
  writers: number;
  goodputPerSec: number;
  requestsPerSuccess: number;
  conflicts: number;
}

const RAW = "raw-sdk-naive-loop";
const LABELS: Readonly<Record<string, string>> = {
  [RAW]: "raw SDK, naive loop",
  none: "none",
  fixed: "fixed",
  exponential: "exponential",
  "full-jitter": "full jitter",
  "decorrelated-jitter": "decorrelated jitter",
};
const label = (strategy: string) => LABELS[strategy] ?? strategy;

/** The rows of a sweep in the JSON (`results`, `azureLike`). */
const rowsAt = (value: unknown) =>
  (Array.isArray(value) ? (value as Row[]) : []).filter((r) => typeof r.writers === "number");

/** How requests per success grow with the writers, per strategy: "full jitter flat (slope 0.1)". */
function growthLines(rows: readonly Row[], strategies: readonly string[]): string {
  return strategies
    .map((strategy) => {
      const { growth, slope } = growthOf(
        rows.filter((r) => r.strategy === strategy).map((r) => ({ x: r.writers, y: r.requestsPerSuccess })),
      );
      return `${label(strategy)} ${growth ?? "n/a"}${slope === null ? "" : ` (log-log slope ${fmt(slope)})`}`;
    })
    .join(", ");
}

export const retrySection: SectionWriter = (result) => {
  const rows = rowsAt(get(result, "results"));
  const azure = rowsAt(get(result, "azureLike"));
  const roundTrip = num(result, "azureLikeRoundTripMs");
  const strategies = [...new Set(rows.map((r) => r.strategy))];
  const writers = [...new Set(rows.map((r) => r.writers))].sort((a, b) => a - b);
  const row = (strategy: string, w: number) => rows.find((r) => r.strategy === strategy && r.writers === w);
  const settings = (get(result, "strategies") ?? {}) as Record<string, string>;
  const rounds = num(result, "rounds");
  const series = (from: readonly Row[], pick: (r: Row) => number) =>
    strategies.map((strategy) => ({
      label: label(strategy),
      ...(strategy === RAW ? { colour: "#000000", dash: "6 3" } : {}),
      points: from.filter((r) => r.strategy === strategy).map((r) => ({ x: r.writers, y: pick(r) })),
    }));
  const subtitle = `Writers racing read, +1, write-with-If-Match on one blob${rounds ? `; median of ${count(rounds, "round")}` : ""}`;
  /** One line per strategy against the number of writers. */
  const sweepChart = (
    title: string,
    yLabel: string,
    pick: (r: Row) => number,
    references: ReferenceLine[] = [],
    from: readonly Row[] = rows,
    sub = subtitle,
  ) =>
    renderLineChart({
      title,
      subtitle: sub,
      xAxis: { label: "writers racing on one blob", scale: "log2" },
      yAxis: { label: yLabel },
      series: series(from, pick),
      references,
      markers: true,
    });
  const azureSubtitle = `The same races through a proxy adding a ${fmt(roundTrip)} ms round trip (± 30%) to every request; one round`;

  const reading: string[] = [];
  const one = writers[0];
  if (one !== undefined) {
    const at1 = strategies.map((s) => row(s, one)?.requestsPerSuccess);
    if (one === 1 && at1.every((v) => v === 2)) {
      const goodputs = strategies.map((s) => row(s, one)?.goodputPerSec).filter((v): v is number => v !== undefined);
      reading.push(
        `With one writer there is nothing to retry: every way makes 2 requests per success (a read and a write) and none of them waits, so the spread of their goodput (${fmt(Math.min(...goodputs))} to ${fmt(Math.max(...goodputs))} increments/s) is this run's noise.`,
      );
    }
  }
  const most = writers.at(-1);
  if (most !== undefined && most > 1) {
    const raw = row(RAW, most);
    const none = row("none", most);
    const backoffs = strategies
      .filter((s) => s !== RAW && s !== "none")
      .map((s) => row(s, most)!)
      .filter(Boolean);
    const fewest = [...backoffs].sort((a, b) => a.requestsPerSuccess - b.requestsPerSuccess)[0];
    const most_ = [...backoffs].sort((a, b) => b.requestsPerSuccess - a.requestsPerSuccess)[0];
    const fastest = [...rows.filter((r) => r.writers === most)].sort((a, b) => b.goodputPerSec - a.goodputPerSec)[0];
    if (raw) {
      const first = writers.find((w) => w > 1);
      const rawFirst = first === undefined ? undefined : row(RAW, first);
      reading.push(
        `Retrying at once does not scale: the raw naive loop needs ${fmt(raw.requestsPerSuccess)} requests per success at ${most} writers` +
          (rawFirst && first !== most ? ` (${fmt(rawFirst.requestsPerSuccess)} at ${first})` : "") +
          `, because every success invalidates the ETag the others just read.`,
      );
    }
    if (raw && none) {
      reading.push(
        `\`retry()\` with no wait is the control: it makes the same calls as the raw loop, so the two should match; the gap between them (${fmt(none.requestsPerSuccess)} against ${fmt(raw.requestsPerSuccess)} requests per success, ${fmt(none.goodputPerSec)} against ${fmt(raw.goodputPerSec)} increments/s) shows how far this run's noise reaches.`,
      );
    }
    if (raw && fewest && most_) {
      reading.push(
        `${most_.requestsPerSuccess < raw.requestsPerSuccess ? "Every backoff cuts the waste" : "Requests per success with a backoff"} at ${most} writers: from ${fmt(most_.requestsPerSuccess)} (${label(most_.strategy)}) down to ${fmt(fewest.requestsPerSuccess)} requests per success (${label(fewest.strategy)}), ${times(raw.requestsPerSuccess, fewest.requestsPerSuccess)} fewer than the raw loop. Two requests is the floor.`,
      );
    }
    if (raw && fastest) {
      reading.push(
        fastest.strategy === RAW
          ? `The raw loop had the highest goodput at ${most} writers (${fmt(raw.goodputPerSec)} increments/s): waiting bought nothing here.`
          : `Goodput at ${most} writers: ${label(fastest.strategy)} finished fastest with ${fmt(fastest.goodputPerSec)} increments/s, ${times(fastest.goodputPerSec, raw.goodputPerSec)} the raw loop's ${fmt(raw.goodputPerSec)}. A backoff that waits longer saves requests but can leave the blob idle while everyone waits, so the fewest requests and the highest goodput need not come from the same strategy.`,
      );
    }
  }
  if (writers.length > 1) {
    reading.push(
      `How requests per success grow from ${fmt(writers[0])} to ${fmt(writers.at(-1))} writers: ${growthLines(rows, strategies)}.`,
    );
  }
  if (azure.length > 0) {
    reading.push(
      `With a ${fmt(roundTrip)} ms round trip (a region's distance to Azure), the collision window between a read and its write is that much wider: requests per success grow ${growthLines(azure, strategies)}. The library's backoff defaults were chosen for this curve (see docs/retries.md).`,
    );
  }
  reading.push(
    "Azurite serves every request on the same two CPUs as the writers, so each wasted request also slows the service for everyone: the goodput lost to retrying at once is larger here than against Azure, where the cost is round trips and the account's request budget. Requests per success carries over better than goodput.",
    "The waits are scaled for a local emulator (milliseconds). Against Azure a round trip takes longer, the window between read and write is wider and collisions are more frequent; scale the backoff's base with the round-trip time.",
  );

  const header = ["strategy", ...writers.map((w) => `${w} writer${w === 1 ? "" : "s"}`)];
  const goodput = strategies.map((s) => [label(s), ...writers.map((w) => fmt(row(s, w)?.goodputPerSec))]);
  const requests = strategies.map((s) => [label(s), ...writers.map((w) => fmt(row(s, w)?.requestsPerSuccess))]);
  return {
    title: "Retries under contention",
    intro:
      `W writers each add 1 to a counter blob: read it (with its ETag), write it back with If-Match; a 412 means another writer won, so wait and try again. ` +
      `The baseline is a hand-written loop on raw SDK calls that retries at once; each backoff strategy runs the same loop through the library's \`retry()\`. ` +
      `SDK retries are off, so every request counted went over the wire, and every run checks that no increment was lost. ` +
      `Each race makes at least ${fmt(num(result, "minSuccessesPerRace") ?? 0)} increments (${fmt(num(result, "incrementsPerWriter"))} per writer at least)` +
      `${rounds ? `; every figure is the median of ${count(rounds, "round")}, the strategies' order rotating from round to round` : ""}.`,
    charts: [
      {
        name: "goodput",
        alt: "Goodput (successful increments per second) against the number of writers, per backoff strategy",
        svg: sweepChart("Goodput under contention", "successful increments per second", (r) => r.goodputPerSec),
      },
      {
        name: "requests",
        alt: "HTTP requests per successful increment against the number of writers, per backoff strategy",
        svg: sweepChart(
          "Requests per success under contention",
          "HTTP requests per successful increment",
          (r) => r.requestsPerSuccess,
          [{ value: 2, label: "floor: a read and a write" }],
        ),
      },
      ...(azure.length > 0
        ? [
            {
              name: "azure-like-goodput",
              alt: `Goodput against the number of writers, per backoff strategy, with a ${fmt(roundTrip)} ms round trip`,
              svg: sweepChart(
                `Goodput with a ${fmt(roundTrip)} ms round trip`,
                "successful increments per second",
                (r) => r.goodputPerSec,
                [],
                azure,
                azureSubtitle,
              ),
            },
            {
              name: "azure-like-requests",
              alt: `HTTP requests per successful increment against the number of writers, with a ${fmt(roundTrip)} ms round trip`,
              svg: sweepChart(
                `Requests per success with a ${fmt(roundTrip)} ms round trip`,
                "HTTP requests per successful increment",
                (r) => r.requestsPerSuccess,
                [{ value: 2, label: "floor: a read and a write" }],
                azure,
                azureSubtitle,
              ),
            },
          ]
        : []),
    ],
    body: [
      "Goodput (successful increments per second):",
      "",
      table(header, goodput),
      "",
      "HTTP requests per successful increment:",
      "",
      table(header, requests),
      ...(azure.length > 0
        ? [
            "",
            `With a ${fmt(roundTrip)} ms round trip, goodput and requests per success:`,
            "",
            table(
              header,
              strategies.map((s) => [
                label(s),
                ...writers.map((w) => {
                  const r = azure.find((x) => x.strategy === s && x.writers === w);
                  return r ? `${fmt(r.goodputPerSec)} / ${fmt(r.requestsPerSuccess)}` : "n/a";
                }),
              ]),
            ),
          ]
        : []),
      "",
      "The strategies:",
      "",
      bullets(strategies.map((s) => `${label(s)} (\`${s}\`): ${settings[s] ?? "see bench/scenarios/retry.ts"}`)),
      "",
      "Reading:",
      "",
      bullets(reading),
    ].join("\n"),
  };
};
