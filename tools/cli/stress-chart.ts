/**
 * The SVG chart of `azure-storage-concurrency stress --svg`, drawn with the project's small chart
 * writer (tools/internal/chart.ts, no charting dependency). Two panels, one unit each: the operations
 * per second the load achieved (a solid line for GET, a dashed one for PUT, one colour per key
 * design), and the busiest partition's entities per second against the 500 entities/s target of
 * one partition. Each point is one sample, at the end of its interval: no line starts at a made-up
 * origin.
 */
import { paletteColour, renderLineChart, stackCharts, type LineSeries } from "../internal/chart.js";
import { PARTITION_TARGET_ENTITIES_PER_SEC, type PartitionStressResult, type StressSample } from "../stress/engine.js";

function series(
  result: PartitionStressResult,
  lines: readonly [label: string, dash: string | undefined, value: (s: StressSample) => number][],
): LineSeries[] {
  return result.designs.flatMap((design, i) =>
    lines.map(([label, dash, value]) => ({
      label: `${design.design} ${label}`,
      colour: paletteColour(i),
      dash,
      points: design.samples.map((s) => ({ x: s.atSec, y: value(s) })),
    })),
  );
}

/** Renders the result of `runPartitionStressTest` (or a saved `stress --out` file) as an SVG document. */
export function renderStressChart(result: PartitionStressResult): string {
  const subtitle = result.emulator
    ? "Emulator run: shows the load per partition, not Azure's limits"
    : `Measured against ${result.endpoint}`;
  const xAxis = { label: "seconds since the load started" };
  const markers = result.designs.every((d) => d.samples.length <= 60);
  const throughput = renderLineChart({
    title: "Partition stress test: operations per second",
    subtitle,
    xAxis,
    yAxis: { label: "successful operations per second" },
    markers,
    series: series(result, [
      ["GET/s (point reads)", undefined, (s) => s.getPerSec],
      ["PUT/s (inserts, updates)", "6 3", (s) => s.putPerSec],
    ]),
  });
  const busiest = renderLineChart({
    title: "Busiest partition: entities per second",
    subtitle: "The partition that took the most entities in each sample, against the target of one partition",
    xAxis,
    yAxis: { label: "entities per second, busiest partition", atLeast: PARTITION_TARGET_ENTITIES_PER_SEC },
    markers,
    series: series(result, [["busiest partition", undefined, (s) => s.busiestPartitionPerSec]]),
    references: [
      {
        value: PARTITION_TARGET_ENTITIES_PER_SEC,
        label: `target of one partition: ${PARTITION_TARGET_ENTITIES_PER_SEC} entities/s`,
      },
    ],
  });
  return stackCharts("Partition stress test", [throughput, busiest]);
}
