/**
 * An SVG line chart of a stress test's throughput over time, drawn with the project's small chart
 * writer (src/internal/chart.ts, no charting dependency): one colour per key design, a solid line
 * for GET/s, a dashed one for PUT/s, a dotted one for the busiest partition's entities/s, and the
 * 500 entities/s target of one partition.
 */
import { paletteColour, renderLineChart, type LineSeries } from "../../internal/chart.js";
import { PARTITION_TARGET_ENTITIES_PER_SEC, type PartitionStressResult, type StressDesignResult } from "./engine.js";

type Sample = StressDesignResult["samples"][number];

const LINES: readonly [label: string, dash: string | undefined, value: (s: Sample) => number][] = [
  ["GET/s", undefined, (s) => s.getPerSec],
  ["PUT/s", "6 3", (s) => s.putPerSec],
  ["busiest partition/s", "2 3", (s) => s.busiestPartitionPerSec],
];

/**
 * Renders the result of {@link runPartitionStressTest} as a standalone SVG document.
 *
 * @example
 * ```ts
 * import { readFile, writeFile } from "node:fs/promises";
 * import { renderStressChart, type PartitionStressResult } from "azure-storage-concurrency";
 *
 * // A result saved by `azure-storage-concurrency stress --out result.json` (or runPartitionStressTest).
 * const result = JSON.parse(await readFile("result.json", "utf8")) as PartitionStressResult;
 * await writeFile("stress.svg", renderStressChart(result));
 * ```
 */
export function renderStressChart(result: PartitionStressResult): string {
  const series: LineSeries[] = result.designs.flatMap((design, i) =>
    LINES.map(([label, dash, value]) => ({
      label: `${design.design} ${label}`,
      colour: paletteColour(i),
      dash,
      points: [{ x: 0, y: 0 }, ...design.samples.map((s) => ({ x: s.atSec, y: value(s) }))],
    })),
  );
  return renderLineChart({
    title: "Partition stress test: throughput per second",
    subtitle: result.emulator
      ? "Emulator run: shows the load per partition, not Azure's limits"
      : `Measured against ${result.endpoint}`,
    xAxis: { label: "seconds" },
    yAxis: { label: "operations (entities) per second", atLeast: PARTITION_TARGET_ENTITIES_PER_SEC },
    series,
    references: [
      {
        value: PARTITION_TARGET_ENTITIES_PER_SEC,
        label: `target of one partition: ${PARTITION_TARGET_ENTITIES_PER_SEC}/s`,
      },
    ],
  });
}
