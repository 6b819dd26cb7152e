/**
 * The `optimistic` scenario (issue 3): optimistic updates of one blob, the library against raw SDK
 * calls. Reads the figures the issue names; any the scenario does not report show as "n/a".
 */
import { renderBarChart, renderLineChart } from "../../../internal/chart.js";
import { growthOf } from "../../stats.js";
import { bullets, fmt, get, num, table } from "../markdown.js";
import type { SectionWriter } from "./section.js";

/** One point of the scale curve (writers 1 -> 64). */
interface ScalePoint {
  readonly writers: number;
  readonly processes: number;
  readonly perSec: number;
  readonly requestsPerUpdate: number;
  readonly p50LatencyMs: number;
  readonly p99LatencyMs: number;
  readonly fairnessIndex: number;
  readonly minShareOfFair: number;
  readonly historyHeaderBytes: number;
}

const points = (value: unknown) => (Array.isArray(value) ? (value as ScalePoint[]) : []);

/** "flat", "linear (slope 0.93)", or "n/a": how `pick` grows with the writers. */
function growthText(scale: readonly ScalePoint[], pick: (p: ScalePoint) => number): string {
  const { growth, slope } = growthOf(scale.map((p) => ({ x: p.writers, y: pick(p) })));
  return growth === null ? "n/a" : `${growth} (log-log slope ${fmt(slope ?? undefined)})`;
}

const BARS = [
  ["serialPerSec", "1 writer, raw SDK read + If-Match write"],
  ["singleWriterPerSec", "1 writer, library (skips its own read)"],
  ["contendedPerSec", "8 writers, library"],
  ["rawContendedPerSec", "8 writers, raw SDK naive loop"],
  ["coalescedPerSec", "64 updates coalesced, library"],
] as const;

export const optimisticSection: SectionWriter = (result) => {
  const f = (path: string) => num(result, path);
  const serial = f("serialPerSec");
  const processes = f("contendedProcesses");
  const reading = [
    `Contended: 8 writers${processes ? ` over ${fmt(processes)} processes` : ""} made ${fmt(f("contendedPerSec"))} updates per second, ${fmt(f("contendedRatio"))} of one raw writer's rate (goal ≥ 1.5), with ${fmt(f("requestsPerUpdate"))} HTTP requests per update (goal ≤ 2)${f("rawRequestsPerUpdate") === undefined ? "" : `; the raw naive loop made ${fmt(f("rawRequestsPerUpdate"))} requests per update at ${fmt(f("rawContendedRatio"))} of the serial rate`}.`,
    `One writer: skipping the read when this process wrote last gives ${fmt(f("singleWriterRatio"))}× the raw read + write rate (goal ≥ 1.6). Coalescing 64 concurrent updates in one process gives ${fmt(f("coalescedRatio"))}× (goal ≥ 10).`,
    `Overhead: making the same calls as the raw loop (write-skipping off), the library takes ${fmt(f("overheadRatio"))}× the raw loop's time per update (goal ≤ 1.05).`,
  ];
  const scale = points(get(result, "scale"));
  const azure = points(get(result, "azureLike"));
  const roundTrip = f("azureLikeRoundTripMs");
  const azureLabel = `with a ${fmt(roundTrip)} ms round trip (± 30%)`;
  const curve = (label: string, data: readonly ScalePoint[], pick: (p: ScalePoint) => number, dash?: string) => ({
    label,
    ...(dash ? { dash } : {}),
    points: data.map((p) => ({ x: p.writers, y: pick(p) })),
  });
  const scaleChart = (title: string, yLabel: string, pick: (p: ScalePoint) => number, log = false) =>
    renderLineChart({
      title,
      subtitle: `library defaults (write-skipping, coalescing, turns); ${fmt(f("scaleSeconds"))} s per point, up to 8 processes`,
      xAxis: { label: "writers racing on one blob", scale: "log2" },
      yAxis: { label: yLabel, ...(log ? { scale: "log10" as const } : {}) },
      series: [
        curve("Azurite on this machine", scale, pick),
        ...(azure.length > 0 ? [curve(azureLabel, azure, pick, "6 3")] : []),
      ],
      markers: true,
    });
  const scaleRows = (data: readonly ScalePoint[]) =>
    data.map((p) => [
      `${fmt(p.writers)} (${fmt(p.processes)} processes)`,
      fmt(p.perSec),
      fmt(p.requestsPerUpdate),
      fmt(p.p50LatencyMs),
      fmt(p.p99LatencyMs),
      fmt(p.fairnessIndex),
      fmt(p.minShareOfFair),
      fmt(p.historyHeaderBytes),
    ]);
  const scaleHeader = [
    "writers",
    "updates/s",
    "requests/update",
    "p50 ms",
    "p99 ms",
    "fairness",
    "smallest share of fair",
    "history bytes",
  ];
  const growth =
    scale.length > 1
      ? [
          `As the writers grow from ${fmt(scale[0]!.writers)} to ${fmt(scale.at(-1)!.writers)}: requests per update grow ${growthText(scale, (p) => p.requestsPerUpdate)}; the median latency ${growthText(scale, (p) => p.p50LatencyMs)}; the write history stored with the value ${growthText(scale, (p) => p.historyHeaderBytes)}, bounded by its 32 writer slots.`,
          ...(azure.length > 1
            ? [
                `${azureLabel[0]!.toUpperCase()}${azureLabel.slice(1)}: requests per update grow ${growthText(azure, (p) => p.requestsPerUpdate)}, the median latency ${growthText(azure, (p) => p.p50LatencyMs)}. The backoff defaults were chosen for this curve (see docs/optimistic-concurrency.md).`,
              ]
            : []),
        ]
      : [];
  const tail = [
    `Fairness at 8 writers over ${fmt(processes)} processes: Jain's index ${fmt(f("fairnessIndex"))} over the writers' successes (goal ≥ 0.95; the raw naive loop: ${fmt(f("rawFairnessIndex"))}); per-update latency p50 ${fmt(f("p50LatencyMs"))} ms, p99 ${fmt(f("p99LatencyMs"))} ms (${fmt(f("p99ToP50"))}× the p50, goal ≤ 10), longest ${fmt(f("maxLatencyMs"))} ms; the most attempts any update needed: ${fmt(f("contendedMaxAttempts"))} (goal ≤ 10; the default allows 50).`,
    ...(f("azureLikeP99ToP50_8") === undefined
      ? []
      : [
          `The same 8 writers with the Azure-like round trip (the scale curve's point): p99 ${fmt(f("azureLikeP99ToP50_8"))}× the p50 (goal ≤ 10), the least served writer got ${fmt(f("azureLikeMinShareOfFair8"))} of its fair share (goal ≥ 0.5).`,
        ]),
    `At 64 writers over 8 processes: ${fmt(f("requestsPerUpdate64"))} requests per update (goal ≤ 3), the least served writer got ${fmt(f("minShareOfFair64"))} of its fair share (goal ≥ 0.5), Jain's index ${fmt(f("fairnessIndex64"))}, p50 ${fmt(f("p50LatencyMs64"))} ms, p99 ${fmt(f("p99LatencyMs64"))} ms, at ${fmt(f("ratio64"))}× the serial rate.`,
  ];
  return {
    title: "Optimistic updates",
    intro:
      "Updates of one JSON counter blob: read, change, write with If-Match, re-read on 412. One raw SDK writer is the baseline; the library runs alone (skipping its own read when it wrote last), with 8 writers in several processes (library defaults: a process's writers coalesce, processes take turns), and with 64 concurrent updates coalesced in one process.",
    charts: [
      {
        name: "throughput",
        alt: "Updates per second: raw serial writer, library single writer, 8 contended writers (library and raw), 64 coalesced updates",
        svg: renderBarChart({
          title: "Optimistic updates of one blob",
          subtitle: f("rounds") === undefined ? undefined : `median of ${fmt(f("rounds"))} rounds`,
          groups: BARS.map(([, label]) => label),
          series: [{ label: "updates per second", values: BARS.map(([path]) => f(path)) }],
          // A log axis: coalesced updates run two orders of magnitude above the others, which on a
          // linear axis would flatten every other bar into a sliver.
          yAxis: { label: "successful updates per second", scale: "log10" },
          references:
            serial === undefined ? [] : [{ value: serial * 1.5, label: "contended goal: 1.5 × one raw writer" }],
        }),
      },
      ...(scale.length > 0
        ? [
            {
              name: "scale-requests",
              alt: "HTTP requests per successful update against the number of writers, on Azurite and with an Azure-like round trip",
              svg: scaleChart(
                "Requests per update as the writers grow",
                "HTTP requests per successful update",
                (p) => p.requestsPerUpdate,
              ),
            },
            {
              name: "scale-latency",
              alt: "Median and 99th-percentile latency per update against the number of writers",
              svg: scaleChart(
                "Median latency per update as the writers grow",
                "p50 latency per update (ms)",
                (p) => p.p50LatencyMs,
                true,
              ),
            },
            {
              name: "scale-history",
              alt: "Size of the write history stored with the value against the number of writers",
              svg: scaleChart(
                "Write history size as the writers grow",
                "bytes of write history (metadata)",
                (p) => p.historyHeaderBytes,
              ),
            },
          ]
        : []),
    ],
    body: [
      table(
        ["way", "updates/s", "against one raw writer"],
        BARS.map(([path, label]) => [
          label,
          fmt(f(path)),
          path === "serialPerSec" ? "1" : fmt(serial === undefined ? undefined : (f(path) ?? Number.NaN) / serial),
        ]),
      ),
      "",
      "Reading:",
      "",
      bullets([...reading, ...tail, ...growth]),
      ...(scale.length > 0 ? ["", "As the writers grow, on Azurite:", "", table(scaleHeader, scaleRows(scale))] : []),
      ...(azure.length > 0
        ? ["", `As the writers grow, ${azureLabel}:`, "", table(scaleHeader, scaleRows(azure))]
        : []),
    ].join("\n"),
  };
};
