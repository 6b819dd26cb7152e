/** The `throttling` scenario: plain retries against the adaptive limiter and budget, and a capacity drop. */
import { renderBarChart, renderLineChart, stackCharts } from "../../../internal/chart.js";
import { bullets, fmt, get, num, table } from "../markdown.js";
import type { SectionWriter } from "./section.js";

interface Case {
  mode: "plain" | "adaptive";
  writers: number;
  partitions: number;
  capacityPerSec: number;
  goodputPerSec: number;
  goodputToCapacity: number;
  throttledShare: number;
  wholeCase?: { goodputToCapacity: number; throttledShare: number };
  gaveUp: number;
  refusedByBudget: number;
  unknown: number;
  lost: number;
  doubled: number;
}

interface Sample {
  atSec: number;
  capacityPerSec: number;
  goodputPerSec: number;
  throttledPerSec: number;
  limiterPerSec: number | null;
}

const casesAt = (value: unknown) => (Array.isArray(value) ? (value as Case[]) : []);
const pct = (share: number | undefined) => (share === undefined ? "n/a" : `${fmt(Math.round(share * 1000) / 10)}%`);
const name = (c: Pick<Case, "writers" | "partitions">) =>
  `${c.writers} writer${c.writers === 1 ? "" : "s"}, ${c.partitions} partition${c.partitions === 1 ? "" : "s"}`;

/** The capacity drop's timeline as one chart per unit: rates (capacity, goodput, limiter), and refusals. */
function dropChart(plain: readonly Sample[], adaptive: readonly Sample[], subtitle: string): string {
  const points = (samples: readonly Sample[], pick: (s: Sample) => number | null) =>
    samples.flatMap((s) => {
      const y = pick(s);
      return y === null ? [] : [{ x: s.atSec, y }];
    });
  const rates = renderLineChart({
    title: "A partition's capacity drops to a quarter and comes back",
    subtitle,
    xAxis: { label: "seconds" },
    yAxis: { label: "per second" },
    series: [
      { label: "modelled capacity", colour: "#000000", dash: "6 3", points: points(adaptive, (s) => s.capacityPerSec) },
      { label: "adaptive: goodput", colour: "#2ca02c", points: points(adaptive, (s) => s.goodputPerSec) },
      { label: "adaptive: limiter's rate", colour: "#1f77b4", points: points(adaptive, (s) => s.limiterPerSec) },
      { label: "plain: goodput", colour: "#d62728", points: points(plain, (s) => s.goodputPerSec) },
    ],
  });
  const refusals = renderLineChart({
    title: "Requests refused (503 ServerBusy, 500 OperationTimedOut)",
    xAxis: { label: "seconds" },
    yAxis: { label: "refused per second" },
    series: [
      { label: "adaptive", colour: "#2ca02c", points: points(adaptive, (s) => s.throttledPerSec) },
      { label: "plain", colour: "#d62728", points: points(plain, (s) => s.throttledPerSec) },
    ],
  });
  return stackCharts("Capacity drop and recovery", [rates, refusals]);
}

export const throttlingSection: SectionWriter = (result) => {
  const cases = casesAt(get(result, "cases"));
  const capacity = num(result, "capacityPerSec");
  const learning = num(result, "learningSec");
  const groups = [...new Set(cases.map(name))];
  const pick = (mode: Case["mode"], group: string) => cases.find((c) => c.mode === mode && name(c) === group);
  const series = (value: (c: Case) => number) =>
    (["plain", "adaptive"] as const).map((mode) => ({
      label: mode === "plain" ? "plain exponential retries" : "adaptive limiter + retry budget",
      colour: mode === "plain" ? "#d62728" : "#2ca02c",
      values: groups.map((g) => {
        const c = pick(mode, g);
        return c ? value(c) : undefined;
      }),
    }));
  const drop = Array.isArray(get(result, "drop"))
    ? (get(result, "drop") as { mode: string; timeline: Sample[] }[])
    : [];
  const timeline = (mode: string) => drop.find((d) => d.mode === mode)?.timeline ?? [];
  const phase = num(result, "phaseSec");
  const rows = groups.flatMap((g) =>
    (["plain", "adaptive"] as const).flatMap((mode) => {
      const c = pick(mode, g);
      return c
        ? [
            [
              g,
              mode,
              fmt(c.goodputPerSec),
              pct(c.goodputToCapacity),
              pct(c.throttledShare),
              pct(c.wholeCase?.goodputToCapacity),
              pct(c.wholeCase?.throttledShare),
              fmt(c.gaveUp),
              fmt(c.refusedByBudget),
              `${fmt(c.lost)} / ${fmt(c.doubled)}`,
            ],
          ]
        : [];
    }),
  );
  return {
    title: "Throttling: an adaptive send rate and a retry budget",
    intro:
      `W writers each add 1 to a counter entity of their own with \`optimisticUpdate\` (one conditional write per update once warm), ` +
      `through the fault proxy's throttling model in front of Azurite: each partition served at its share of ${fmt(capacity)} requests per second, ` +
      `503 ServerBusy past it, and ${pct(num(result, "operationTimedOutShare"))} of the refusals 500 OperationTimedOut after being applied. ` +
      `Each update is one \`retry()\` call (3 retries, the interactive exponential backoff): plain, or with its requests sent through an ` +
      `\`AdaptiveRateLimiter\` and its retries paid from a \`RetryBudget\`. Goodput and the share throttled are measured from ${fmt(learning)} s into each case ` +
      `(the steady state); the whole case is in the table too. Every counter is read back from Azurite at the end: lost and doubled updates.`,
    charts: [
      {
        name: "goodput",
        alt: "Goodput as a share of the modelled capacity, plain retries against the adaptive limiter, per number of writers and partitions",
        svg: renderBarChart({
          title: "Goodput against the modelled capacity",
          subtitle: `Capacity ${fmt(capacity)} requests/s over all partitions; steady state`,
          groups,
          series: series((c) => Math.round(c.goodputToCapacity * 1000) / 10),
          yAxis: { label: "% of capacity", atLeast: 100 },
          references: [{ value: 90, label: "goal at 64 writers: 90%" }],
        }),
      },
      {
        name: "throttled",
        alt: "Share of requests answered 503 or 500, plain retries against the adaptive limiter",
        svg: renderBarChart({
          title: "Requests throttled",
          subtitle: "503 ServerBusy and 500 OperationTimedOut, as a share of all requests; steady state",
          groups,
          series: series((c) => Math.round(c.throttledShare * 1000) / 10),
          yAxis: { label: "% of requests" },
          references: [{ value: 5, label: "goal at 64 writers: 5%" }],
        }),
      },
      ...(drop.length > 0
        ? [
            {
              name: "drop",
              alt: "Goodput, the limiter's rate and refusals over time while the capacity drops to a quarter and recovers",
              svg: dropChart(
                timeline("plain"),
                timeline("adaptive"),
                `64 writers, one partition; ${fmt(phase)} s at ${fmt(capacity)}/s, ${fmt(phase)} s at a quarter, then back`,
              ),
            },
          ]
        : []),
    ],
    body: [
      table(
        [
          "writers, partitions",
          "retries",
          "goodput/s",
          "of capacity",
          "throttled",
          "of capacity (whole case)",
          "throttled (whole case)",
          "gave up",
          "refused by budget",
          "lost / doubled",
        ],
        rows,
      ),
      "",
      bullets([
        `After the capacity came back, goodput reached 90% of it in ${fmt(num(result, "recoverySeconds"))} s with the limiter (plain retries: ${fmt(num(result, "plainRecoverySeconds"))} s; n/a: never within the run); the limiter's rate followed the drop to a quarter in ${fmt(num(result, "limiterDropSeconds"))} s and the recovery in ${fmt(num(result, "limiterRecoverySeconds"))} s.`,
        `Unthrottled (a capacity nobody reaches), the adaptive run's goodput was ${pct(num(result, "unthrottledGoodputRatio"))} of the plain run's: the limiter's cost when nothing is throttled.`,
        `Lost ${fmt(num(result, "lost"))}, doubled ${fmt(num(result, "doubled"))} updates over every case; ${fmt(num(result, "unknown"))} updates ended with OptimisticOutcomeUnknownError (may or may not have been applied: neither counted as done nor as lost).`,
        "Azurite serves every request on the same machine as the writers; the model's capacity is set below what the machine serves unthrottled, so that the model, not the machine, is the bottleneck.",
      ]),
    ].join("\n"),
  };
};
