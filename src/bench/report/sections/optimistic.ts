/**
 * The `optimistic` scenario (issue 3): optimistic updates of one blob, the library against raw SDK
 * calls. Reads the figures the issue names; any the scenario does not report show as "n/a".
 */
import { renderBarChart } from "../../../internal/chart.js";
import { bullets, fmt, num, table } from "../markdown.js";
import type { SectionWriter } from "./section.js";

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
    `Contended: 8 writers${processes ? ` over ${fmt(processes)} processes` : ""} made ${fmt(f("contendedPerSec"))} updates per second, ${fmt(f("contendedRatio"))} of one raw writer's rate (goal ≥ 0.7), with ${fmt(f("requestsPerUpdate"))} HTTP requests per update (goal ≤ 3)${f("rawRequestsPerUpdate") === undefined ? "" : `; the raw naive loop made ${fmt(f("rawRequestsPerUpdate"))} requests per update at ${fmt(f("rawContendedRatio"))} of the serial rate`}.`,
    `One writer: skipping the read when this process wrote last gives ${fmt(f("singleWriterRatio"))}× the raw read + write rate (goal ≥ 1.6). Coalescing 64 concurrent updates in one process gives ${fmt(f("coalescedRatio"))}× (goal ≥ 10).`,
    `Overhead: making the same calls as the raw loop (write-skipping off), the library takes ${fmt(f("overheadRatio"))}× the raw loop's time per update (goal ≤ 1.05).`,
  ];
  return {
    title: "Optimistic updates",
    intro:
      "Updates of one JSON counter blob: read, change, write with If-Match, re-read on 412. One raw SDK writer is the baseline; the library runs alone (skipping its own read when it wrote last), with 8 writers in several processes (coalescing off), and with 64 concurrent updates coalesced in one process.",
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
            serial === undefined ? [] : [{ value: serial * 0.7, label: "contended goal: 0.7 × one raw writer" }],
        }),
      },
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
      bullets(reading),
    ].join("\n"),
  };
};
