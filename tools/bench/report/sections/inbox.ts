/** The `inbox` scenario: claim + complete latency as the idempotency inbox grows, and purge()'s rate. */
import { renderLineChart } from "../../../internal/chart.js";
import { bullets, fmt, get, num, table } from "../markdown.js";
import type { SectionWriter } from "./section.js";

interface GrowthPoint {
  readonly rows: number;
  readonly claimCompleteP50Ms: number;
  readonly claimCompleteP99Ms: number;
  readonly rawP50Ms: number;
  readonly rawP99Ms: number;
}

function growthOf(value: unknown): GrowthPoint[] {
  if (!Array.isArray(value)) return [];
  return value.filter(
    (p): p is GrowthPoint => typeof p === "object" && p !== null && typeof (p as { rows?: unknown }).rows === "number",
  );
}

export const inboxSection: SectionWriter = (result) => {
  const f = (path: string) => num(result, path);
  const growth = growthOf(get(result, "growth"));
  const line = (label: string, pick: (p: GrowthPoint) => number, dash?: string) => ({
    label,
    dash,
    points: growth.map((p) => ({ x: p.rows, y: pick(p) })),
  });
  const reading = [
    `From an empty inbox to ${fmt(f("maxRows"))} rows, a claim and its done mark took a median ${fmt(growth[0]?.claimCompleteP50Ms, " ms")} at first and ${fmt(growth[growth.length - 1]?.claimCompleteP50Ms, " ms")} at the end (ratio ${fmt(f("claimCompleteP50GrowthRatio"))}; 99th percentile ratio ${fmt(f("claimCompleteP99GrowthRatio"))}); the same two requests on raw SDK calls: ratio ${fmt(f("rawP50GrowthRatio"))}. Both are point writes on the key's own row: the table's size should not show.`,
    `purge() scanned ${fmt(f("purgeScannedRows"))} rows and deleted the ${fmt(f("purgeDeletedRows"))} that had expired in ${fmt(f("purgeSeconds"), " s")}: ${fmt(f("purgeRowsPerSec"))} rows per second, each delete conditioned on the ETag its scan read (${fmt(f("purgeChangedRows"))} changed since, ${fmt(f("purgeFailedRows"))} failed).`,
  ];
  return {
    title: "Idempotency inbox",
    intro:
      `The inbox table grows in steps to ${fmt(f("maxRows"))} done records (filled in 100-row transactions, not timed; one in ${fmt(f("expiredShare") ? 1 / f("expiredShare")! : undefined)} has expired). ` +
      `At each size, ${fmt(f("samples"))} claim + complete cycles on fresh keys are timed one at a time, for \`TableIdempotencyStore\` and for the same two requests on raw SDK calls, alternating. At the largest size, \`purge()\` deletes the expired records.`,
    charts: [
      {
        name: "growth",
        alt: "Claim + complete latency in milliseconds against the number of rows in the inbox",
        svg: renderLineChart({
          title: "Claim + complete latency as the inbox grows",
          subtitle: `${fmt(f("samples"))} cycles per size, one at a time`,
          xAxis: { label: "rows in the inbox table" },
          yAxis: { label: "milliseconds" },
          series: [
            line("library, median", (p) => p.claimCompleteP50Ms),
            line("library, 99th percentile", (p) => p.claimCompleteP99Ms, "6 3"),
            line("raw SDK, median", (p) => p.rawP50Ms),
            line("raw SDK, 99th percentile", (p) => p.rawP99Ms, "6 3"),
          ],
          markers: true,
        }),
      },
    ],
    body: [
      table(
        ["rows", "library p50 (ms)", "library p99 (ms)", "raw p50 (ms)", "raw p99 (ms)"],
        growth.map((p) => [p.rows, p.claimCompleteP50Ms, p.claimCompleteP99Ms, p.rawP50Ms, p.rawP99Ms]),
      ),
      "",
      "Reading:",
      "",
      bullets(reading),
    ].join("\n"),
  };
};
