/**
 * Small SVG charts written by hand (no charting dependency): a line chart and a grouped bar chart
 * that share one frame (title, subtitle, y grid from zero or a log-10 y axis, axis labels, a legend
 * on the right that also names the horizontal reference lines, such as goals), and
 * {@link stackCharts} to put several charts, one unit each, in one picture. The command line's
 * partition stress test draws its chart with it, and the benchmark report (tools/bench/report/) its
 * figures. Every piece of text is XML-escaped and every coordinate is a finite number, so the
 * output is a valid standalone SVG document.
 */

/** One line of a {@link renderLineChart} chart. */
export interface LineSeries {
  readonly label: string;
  /** Points in any order; they are drawn sorted by x, and points with a non-finite coordinate are left out. */
  readonly points: readonly { readonly x: number; readonly y: number }[];
  /** CSS colour; by default one of the palette's, by position. */
  readonly colour?: string | undefined;
  /** SVG stroke-dasharray, e.g. "6 3"; solid by default. */
  readonly dash?: string | undefined;
}

/** A labelled horizontal line across the plot, e.g. a goal or a target. */
export interface ReferenceLine {
  readonly value: number;
  readonly label: string;
}

interface ChartFrame {
  readonly title: string;
  /** A grey line under the title. */
  readonly subtitle?: string | undefined;
  readonly yAxis: {
    readonly label: string;
    /** The axis reaches at least this far (it ends on a round number, or on a power of ten). */
    readonly atLeast?: number | undefined;
    /**
     * "linear" (the default) starts at 0; "log10" spans the powers of ten around the data, for
     * values of different orders of magnitude (values of 0 or less are not drawn on it).
     */
    readonly scale?: "linear" | "log10" | undefined;
  };
  readonly references?: readonly ReferenceLine[] | undefined;
}

/** What {@link renderLineChart} draws. */
interface LineChartSpec extends ChartFrame {
  readonly xAxis: {
    readonly label: string;
    /** "log2" spaces 1, 2, 4, 8 evenly (for counts that double); "linear" (the default) starts at 0. */
    readonly scale?: "linear" | "log2" | undefined;
    /** Tick positions; by default every x of the data on a log2 axis, round steps on a linear one. */
    readonly ticks?: readonly number[] | undefined;
  };
  readonly series: readonly LineSeries[];
  /** Draws a dot (with a tooltip) at every point. */
  readonly markers?: boolean | undefined;
}

/** One series of bars of a {@link renderBarChart} chart: one value per group (undefined: no bar). */
interface BarSeries {
  readonly label: string;
  readonly values: readonly (number | undefined)[];
  readonly colour?: string | undefined;
}

/** What {@link renderBarChart} draws: for each group, one bar per series, side by side. */
interface BarChartSpec extends ChartFrame {
  readonly groups: readonly string[];
  readonly series: readonly BarSeries[];
  /** The text above each bar; by default the value with up to three significant decimals. */
  readonly formatValue?: ((value: number) => string) | undefined;
}

const WIDTH = 880;
const PLOT = { left: 70, right: 620, top: 60, bottom: 390 } as const;
const PALETTE = [
  "#1f77b4",
  "#d62728",
  "#2ca02c",
  "#9467bd",
  "#ff7f0e",
  "#8c564b",
  "#e377c2",
  "#17becf",
  "#7f7f7f",
  "#bcbd22",
];

/** The palette's colour for position `index`. */
export function paletteColour(index: number): string {
  return PALETTE[index % PALETTE.length]!;
}

/** Escapes text for XML content and attribute values. */
function escapeXml(text: string): string {
  return text.replace(
    /[<>&"']/g,
    (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;", "'": "&apos;" })[c]!,
  );
}

/** A round axis maximum at or above `value` that divides well into five ticks. */
export function niceMax(value: number): number {
  if (!(value > 0) || !Number.isFinite(value)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

/** A number as a short label: no float noise (0.30000000000000004 is "0.3"), at most 3 decimals. */
export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return "n/a";
  return String(Number(value.toFixed(Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : 3)));
}

/** An axis label: whole thousands with separators (16,000), other values as {@link formatNumber}. */
const axisLabel = (value: number) =>
  Number.isInteger(value) && Math.abs(value) >= 1000 ? value.toLocaleString("en-US") : formatNumber(value);

const f1 = (n: number) => n.toFixed(1);
const finite = (n: number | undefined): n is number => n !== undefined && Number.isFinite(n);

/** A y scale: where a value goes, its grid lines, and the bottom of the plot in value terms. */
interface YScale {
  readonly y: (value: number) => number;
  readonly ticks: readonly number[];
  /** Fainter grid lines between the ticks, unlabelled (2× and 5× each power of ten on a log axis). */
  readonly minorTicks: readonly number[];
  /** The value at the bottom of the plot: bars start there (0 on a linear axis). */
  readonly base: number;
  /** Whether a value can be drawn at all (on a log axis, only values above 0). */
  readonly drawable: (value: number) => boolean;
}

function linearScale(top: number): YScale {
  const maxValue = niceMax(top * 1.05);
  const y = (value: number) =>
    PLOT.bottom - ((PLOT.bottom - PLOT.top) * Math.min(Math.max(value, 0), maxValue)) / maxValue;
  return {
    y,
    ticks: Array.from({ length: 6 }, (_, i) => (maxValue * i) / 5),
    minorTicks: [],
    base: 0,
    drawable: finite,
  };
}

function log10Scale(values: readonly number[], top: number): YScale {
  const positive = values.filter((v) => finite(v) && v > 0);
  const low = Math.floor(Math.log10(Math.min(...positive, top > 0 ? top : 1)));
  const high = Math.max(low + 1, Math.ceil(Math.log10(top > 0 ? top * 1.05 : 10)));
  const y = (value: number) => {
    const exponent = Math.min(Math.max(Math.log10(Math.max(value, 10 ** low)), low), high);
    return PLOT.bottom - ((PLOT.bottom - PLOT.top) * (exponent - low)) / (high - low);
  };
  const ticks = Array.from({ length: high - low + 1 }, (_, i) => 10 ** (low + i));
  const minorTicks = ticks.slice(0, -1).flatMap((t) => [2 * t, 5 * t]);
  return { y, ticks, minorTicks, base: 10 ** low, drawable: (value) => finite(value) && value > 0 };
}

/** Opens the document: background, title, subtitle, y grid and axes; returns the y scale. */
function frame(spec: ChartFrame, values: readonly number[], height: number, out: string[]): YScale {
  const references = spec.references ?? [];
  const top = Math.max(
    0,
    spec.yAxis.atLeast ?? 0,
    ...values.filter(finite),
    ...references.map((r) => r.value).filter(finite),
  );
  const scale = spec.yAxis.scale === "log10" ? log10Scale(values, top) : linearScale(top);
  const { y } = scale;
  const middle = (PLOT.top + PLOT.bottom) / 2;
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="12">`,
    `<title>${escapeXml(spec.title)}</title>`,
    `<rect x="0" y="0" width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="${PLOT.left}" y="24" font-size="16" font-weight="bold">${escapeXml(spec.title)}</text>`,
  );
  if (spec.subtitle) out.push(`<text x="${PLOT.left}" y="44" fill="#555555">${escapeXml(spec.subtitle)}</text>`);
  for (const value of scale.minorTicks) {
    out.push(`<line x1="${PLOT.left}" y1="${f1(y(value))}" x2="${PLOT.right}" y2="${f1(y(value))}" stroke="#f2f2f2"/>`);
  }
  for (const value of scale.ticks) {
    out.push(
      `<line x1="${PLOT.left}" y1="${f1(y(value))}" x2="${PLOT.right}" y2="${f1(y(value))}" stroke="#e5e5e5"/>`,
      `<text x="${PLOT.left - 8}" y="${f1(y(value) + 4)}" text-anchor="end">${axisLabel(value)}</text>`,
    );
  }
  out.push(
    `<line x1="${PLOT.left}" y1="${PLOT.top}" x2="${PLOT.left}" y2="${PLOT.bottom}" stroke="#333333"/>`,
    `<line x1="${PLOT.left}" y1="${PLOT.bottom}" x2="${PLOT.right}" y2="${PLOT.bottom}" stroke="#333333"/>`,
    `<text x="18" y="${middle}" text-anchor="middle" transform="rotate(-90 18 ${middle})">${escapeXml(spec.yAxis.label + (spec.yAxis.scale === "log10" ? " (log scale)" : ""))}</text>`,
  );
  return scale;
}

/** Dash patterns that tell reference lines apart, in the plot and in the legend. */
const REFERENCE_DASHES = ["8 4", "3 3", "12 3 3 3"];

/** Reference lines go on top of the data, so that a goal stays visible; they are named in the legend. */
function referenceLines(references: readonly ReferenceLine[], { y, drawable }: YScale, out: string[]): LegendEntry[] {
  return references
    .filter((r) => drawable(r.value))
    .map((reference, i) => {
      const at = f1(y(reference.value));
      const dash = REFERENCE_DASHES[i % REFERENCE_DASHES.length]!;
      out.push(
        `<line x1="${PLOT.left}" y1="${at}" x2="${PLOT.right}" y2="${at}" stroke="#000000" stroke-width="1.5" stroke-dasharray="${dash}"><title>${escapeXml(reference.label)}</title></line>`,
      );
      return { label: reference.label, colour: "#000000", dash, swatch: "line" as const };
    });
}

interface LegendEntry {
  readonly label: string;
  readonly colour: string;
  readonly dash?: string | undefined;
  readonly swatch: "line" | "box";
}

/** Legend labels are wrapped to this many characters, so that they stay inside the picture. */
const LEGEND_WIDTH_CHARS = 28;

function legend(entries: readonly LegendEntry[], out: string[]): void {
  let ly = PLOT.top + 8;
  for (const entry of entries) {
    out.push(
      entry.swatch === "box"
        ? `<rect x="${PLOT.right + 20}" y="${ly - 6}" width="30" height="12" fill="${entry.colour}"/>`
        : `<line x1="${PLOT.right + 20}" y1="${ly}" x2="${PLOT.right + 50}" y2="${ly}" stroke="${entry.colour}" stroke-width="2"${entry.dash ? ` stroke-dasharray="${entry.dash}"` : ""}/>`,
    );
    const lines = wrap(entry.label, LEGEND_WIDTH_CHARS);
    out.push(
      `<text x="${PLOT.right + 56}" y="${ly + 4}">${lines.map((line, i) => `<tspan x="${PLOT.right + 56}" dy="${i === 0 ? 0 : 14}">${escapeXml(line)}</tspan>`).join("")}</text>`,
    );
    ly += 20 + 14 * (lines.length - 1);
  }
}

/** Tall enough for the plot, the labels under it and every legend entry. */
function heightFor(labels: readonly string[]): number {
  const legendHeight = labels.reduce((sum, label) => sum + 20 + 14 * (wrap(label, LEGEND_WIDTH_CHARS).length - 1), 0);
  return Math.max(460, PLOT.top + 40 + legendHeight);
}

/** Linear ticks from 0 in a round step, at most ten of them. */
function linearTicks(max: number): number[] {
  const power = 10 ** Math.floor(Math.log10(max / 10));
  const step = [1, 2, 2.5, 5, 10].map((s) => s * power).find((s) => max / s <= 10) ?? 10 * power;
  const ticks: number[] = [];
  for (let i = 0; i * step <= max + 1e-9; i++) ticks.push(Number((i * step).toPrecision(12)));
  return ticks;
}

/**
 * A line chart: one polyline per series (with a `<title>` naming it), y from zero.
 *
 * @example
 * ```ts
 * import { renderLineChart } from "./chart.js";
 *
 * const svg = renderLineChart({
 *   title: "Goodput",
 *   xAxis: { label: "writers", scale: "log2" },
 *   yAxis: { label: "increments per second" },
 *   series: [{ label: "full jitter", points: [{ x: 1, y: 300 }, { x: 2, y: 380 }] }],
 *   markers: true,
 * });
 * ```
 */
export function renderLineChart(spec: LineChartSpec): string {
  const series = spec.series.map((s, i) => ({
    ...s,
    colour: s.colour ?? paletteColour(i),
    points: s.points
      .filter(
        (p) =>
          finite(p.x) &&
          finite(p.y) &&
          (spec.xAxis.scale !== "log2" || p.x > 0) &&
          (spec.yAxis.scale !== "log10" || p.y > 0),
      )
      .sort((a, b) => a.x - b.x),
  }));
  const xs = series.flatMap((s) => s.points.map((p) => p.x));
  const references = spec.references ?? [];
  const height = heightFor([...series.map((s) => s.label), ...references.map((r) => r.label)]);
  const out: string[] = [];
  const scale = frame(
    spec,
    series.flatMap((s) => s.points.map((p) => p.y)),
    height,
    out,
  );
  const y = scale.y;

  let x: (value: number) => number;
  let ticks: readonly number[];
  if (spec.xAxis.scale === "log2") {
    ticks = (spec.xAxis.ticks ?? [...new Set(xs)]).filter((t) => t > 0).sort((a, b) => a - b);
    const low = Math.log2(Math.min(...ticks, ...xs, Infinity) || 1);
    const high = Math.log2(Math.max(...ticks, ...xs, 0) || 1);
    // A little room at both ends, so that the first and last dots do not sit on the axes.
    const pad = Math.max((high - low) * 0.04, 0.25);
    x = (value) => PLOT.left + ((PLOT.right - PLOT.left) * (Math.log2(value) - low + pad)) / (high - low + 2 * pad);
  } else {
    const max = Math.max(1, ...xs, ...(spec.xAxis.ticks ?? []));
    ticks = spec.xAxis.ticks ?? linearTicks(max);
    x = (value) => PLOT.left + ((PLOT.right - PLOT.left) * value) / max;
  }
  for (const tick of ticks) {
    out.push(
      `<line x1="${f1(x(tick))}" y1="${PLOT.bottom}" x2="${f1(x(tick))}" y2="${PLOT.bottom + 5}" stroke="#333333"/>`,
      `<text x="${f1(x(tick))}" y="${PLOT.bottom + 20}" text-anchor="middle">${formatNumber(tick)}</text>`,
    );
  }
  out.push(
    `<text x="${(PLOT.left + PLOT.right) / 2}" y="${PLOT.bottom + 40}" text-anchor="middle">${escapeXml(spec.xAxis.label)}</text>`,
  );

  for (const s of series) {
    const points = s.points.map((p) => `${f1(x(p.x))},${f1(y(p.y))}`).join(" ");
    out.push(
      `<polyline fill="none" stroke="${s.colour}" stroke-width="2"${s.dash ? ` stroke-dasharray="${s.dash}"` : ""} points="${points}"><title>${escapeXml(s.label)}</title></polyline>`,
    );
    if (spec.markers) {
      for (const p of s.points) {
        out.push(
          `<circle cx="${f1(x(p.x))}" cy="${f1(y(p.y))}" r="3" fill="${s.colour}"><title>${escapeXml(`${s.label}: ${formatNumber(p.x)}, ${formatNumber(p.y)}`)}</title></circle>`,
        );
      }
    }
  }
  const named = referenceLines(references, scale, out);
  legend(
    [...series.map((s): LegendEntry => ({ label: s.label, colour: s.colour, dash: s.dash, swatch: "line" })), ...named],
    out,
  );
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}

/** Splits a label into lines of about `width` characters, at spaces. */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  for (const word of text.split(/\s+/).filter(Boolean)) {
    const last = lines.at(-1);
    if (last !== undefined && last.length + 1 + word.length <= width) lines[lines.length - 1] = `${last} ${word}`;
    else lines.push(word);
  }
  return lines;
}

/**
 * A grouped bar chart: for each group (a category on the x axis) one bar per series, side by side,
 * with its value written above it; y from zero (negative values are drawn at zero, and still written).
 *
 * @example
 * ```ts
 * import { renderBarChart } from "./chart.js";
 *
 * const svg = renderBarChart({
 *   title: "Queue throughput",
 *   groups: ["raw SDK loop", "QueueConsumer"],
 *   series: [{ label: "messages per second", values: [820, 800] }],
 *   yAxis: { label: "messages per second" },
 * });
 * ```
 */
export function renderBarChart(spec: BarChartSpec): string {
  const format = spec.formatValue ?? formatNumber;
  const series = spec.series.map((s, i) => ({ ...s, colour: s.colour ?? paletteColour(i) }));
  const references = spec.references ?? [];
  const height = heightFor([...series.map((s) => s.label), ...references.map((r) => r.label)]);
  const out: string[] = [];
  const scale = frame(
    spec,
    series.flatMap((s) => s.values.filter(finite)),
    height,
    out,
  );
  const { y } = scale;
  const bottom = y(scale.base);
  const groupWidth = (PLOT.right - PLOT.left) / Math.max(1, spec.groups.length);
  const barWidth = Math.min(60, (groupWidth * 0.8) / Math.max(1, series.length));
  spec.groups.forEach((group, g) => {
    const centre = PLOT.left + groupWidth * (g + 0.5);
    const first = centre - (barWidth * series.length) / 2;
    series.forEach((s, i) => {
      const value = s.values[g];
      if (!finite(value)) return;
      const left = first + i * barWidth;
      const top = scale.drawable(value) ? y(value) : bottom;
      out.push(
        `<rect x="${f1(left + 1)}" y="${f1(top)}" width="${f1(barWidth - 2)}" height="${f1(bottom - top)}" fill="${s.colour}"><title>${escapeXml(`${group}, ${s.label}: ${format(value)}`)}</title></rect>`,
        `<text x="${f1(left + barWidth / 2)}" y="${f1(top - 4)}" text-anchor="middle" font-size="${series.length > 3 ? 9 : 11}">${escapeXml(format(value))}</text>`,
      );
    });
    const lines = wrap(group, Math.max(8, Math.floor(groupWidth / 7)));
    out.push(
      `<text x="${f1(centre)}" y="${PLOT.bottom + 18}" text-anchor="middle">${lines
        .map((line, i) => `<tspan x="${f1(centre)}" dy="${i === 0 ? 0 : 14}">${escapeXml(line)}</tspan>`)
        .join("")}</text>`,
    );
  });
  const named = referenceLines(references, scale, out);
  legend([...series.map((s): LegendEntry => ({ label: s.label, colour: s.colour, swatch: "box" })), ...named], out);
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}

/**
 * Several charts (each a standalone SVG document from this module) stacked top to bottom in one
 * document: one panel per unit, read together.
 *
 * @example
 * ```ts
 * import { renderLineChart, stackCharts } from "./chart.js";
 *
 * const rates = renderLineChart({ title: "Requests", xAxis: { label: "seconds" }, yAxis: { label: "per second" }, series: [] });
 * const latency = renderLineChart({ title: "Latency", xAxis: { label: "seconds" }, yAxis: { label: "ms" }, series: [] });
 * const svg = stackCharts("Requests and latency", [rates, latency]);
 * ```
 */
export function stackCharts(title: string, charts: readonly string[]): string {
  let height = 0;
  const panels = charts.map((chart) => {
    const size = /^<svg [^>]*\bheight="(\d+)"/.exec(chart);
    if (!size) throw new TypeError("`charts` must be SVG documents written by this module.");
    const panel = chart.trimEnd().replace(/^<svg /, `<svg x="0" y="${height}" `);
    height += Number(size[1]);
    return panel;
  });
  return `${[
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="12">`,
    `<title>${escapeXml(title)}</title>`,
    ...panels,
    "</svg>",
  ].join("\n")}\n`;
}
