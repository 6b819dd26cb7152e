/**
 * An SVG line chart of a stress test's throughput over time, written by hand (no charting
 * dependency): one colour per key design, a solid line for GET/s, a dashed one for PUT/s, a dotted
 * one for the busiest partition's entities/s, and the 500 entities/s target of one partition.
 */
import { PARTITION_TARGET_ENTITIES_PER_SEC, type PartitionStressResult } from "./engine.js";

const WIDTH = 880;
const PLOT = { left: 70, right: 620, top: 60, bottom: 390 };
const COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];

function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;", "'": "&apos;" })[c]!);
}

/** A round axis maximum at or above `value` that divides well into five ticks. */
function niceMax(value: number): number {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

const fmt = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(1));

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
  const designs = result.designs;
  const HEIGHT = Math.max(460, PLOT.top + 40 + designs.length * 3 * 20);
  const maxSec = Math.max(1, ...designs.flatMap((d) => d.samples.map((s) => s.atSec)));
  const maxValue = niceMax(
    Math.max(PARTITION_TARGET_ENTITIES_PER_SEC, ...designs.flatMap((d) => d.samples.flatMap((s) => [s.getPerSec, s.putPerSec, s.busiestPartitionPerSec]))) * 1.05,
  );
  const x = (sec: number) => PLOT.left + ((PLOT.right - PLOT.left) * sec) / maxSec;
  const y = (value: number) => PLOT.bottom - ((PLOT.bottom - PLOT.top) * value) / maxValue;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<title>Partition stress test: throughput per second</title>`,
    `<rect x="0" y="0" width="${WIDTH}" height="${HEIGHT}" fill="#ffffff"/>`,
    `<text x="${PLOT.left}" y="24" font-size="16" font-weight="bold">Partition stress test: throughput per second</text>`,
    `<text x="${PLOT.left}" y="44" fill="#555555">${escapeXml(
      result.emulator ? "Emulator run: shows the load per partition, not Azure's limits" : `Measured against ${result.endpoint}`,
    )}</text>`,
  );
  // Grid and axes.
  for (let i = 0; i <= 5; i++) {
    const value = (maxValue * i) / 5;
    out.push(
      `<line x1="${PLOT.left}" y1="${y(value).toFixed(1)}" x2="${PLOT.right}" y2="${y(value).toFixed(1)}" stroke="#e5e5e5"/>`,
      `<text x="${PLOT.left - 8}" y="${(y(value) + 4).toFixed(1)}" text-anchor="end">${fmt(value)}</text>`,
    );
  }
  const secStep = [0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600].find((step) => maxSec / step <= 10) ?? 3600;
  for (let sec = 0; sec <= maxSec + 1e-9; sec += secStep) {
    out.push(
      `<line x1="${x(sec).toFixed(1)}" y1="${PLOT.bottom}" x2="${x(sec).toFixed(1)}" y2="${PLOT.bottom + 5}" stroke="#333333"/>`,
      `<text x="${x(sec).toFixed(1)}" y="${PLOT.bottom + 20}" text-anchor="middle">${fmt(sec)}</text>`,
    );
  }
  out.push(
    `<line x1="${PLOT.left}" y1="${PLOT.top}" x2="${PLOT.left}" y2="${PLOT.bottom}" stroke="#333333"/>`,
    `<line x1="${PLOT.left}" y1="${PLOT.bottom}" x2="${PLOT.right}" y2="${PLOT.bottom}" stroke="#333333"/>`,
    `<text x="${(PLOT.left + PLOT.right) / 2}" y="${PLOT.bottom + 40}" text-anchor="middle">seconds</text>`,
    `<text x="18" y="${(PLOT.top + PLOT.bottom) / 2}" text-anchor="middle" transform="rotate(-90 18 ${(PLOT.top + PLOT.bottom) / 2})">operations (entities) per second</text>`,
  );
  // The target of one partition.
  const targetY = y(PARTITION_TARGET_ENTITIES_PER_SEC).toFixed(1);
  out.push(
    `<line x1="${PLOT.left}" y1="${targetY}" x2="${PLOT.right}" y2="${targetY}" stroke="#000000" stroke-width="1.5" stroke-dasharray="8 4"/>`,
    `<text x="${PLOT.right - 4}" y="${(Number(targetY) - 6).toFixed(1)}" text-anchor="end">target of one partition: ${PARTITION_TARGET_ENTITIES_PER_SEC}/s</text>`,
  );
  // One line per design and operation.
  const series: { label: string; colour: string; dash: string }[] = [];
  designs.forEach((design, i) => {
    const colour = COLOURS[i % COLOURS.length]!;
    const lines: [string, string, (s: (typeof design.samples)[number]) => number][] = [
      ["GET/s", "", (s) => s.getPerSec],
      ["PUT/s", "6 3", (s) => s.putPerSec],
      ["busiest partition/s", "2 3", (s) => s.busiestPartitionPerSec],
    ];
    for (const [label, dash, value] of lines) {
      const points = [{ atSec: 0, v: 0 }, ...design.samples.map((s) => ({ atSec: s.atSec, v: value(s) }))]
        .map((p) => `${x(p.atSec).toFixed(1)},${y(p.v).toFixed(1)}`)
        .join(" ");
      out.push(
        `<polyline fill="none" stroke="${colour}" stroke-width="2"${dash ? ` stroke-dasharray="${dash}"` : ""} points="${points}"><title>${escapeXml(`${design.design} ${label}`)}</title></polyline>`,
      );
      series.push({ label: `${design.design} ${label}`, colour, dash });
    }
  });
  // Legend.
  series.forEach((s, i) => {
    const ly = PLOT.top + 8 + i * 20;
    out.push(
      `<line x1="${PLOT.right + 20}" y1="${ly}" x2="${PLOT.right + 50}" y2="${ly}" stroke="${s.colour}" stroke-width="2"${s.dash ? ` stroke-dasharray="${s.dash}"` : ""}/>`,
      `<text x="${PLOT.right + 56}" y="${ly + 4}">${escapeXml(s.label)}</text>`,
    );
  });
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}
