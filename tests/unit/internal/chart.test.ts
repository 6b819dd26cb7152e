import { XMLParser, XMLValidator } from "fast-xml-parser";
import { formatNumber, niceMax, renderBarChart, renderLineChart, stackCharts } from "../../../tools/internal/chart.js";

type Node = Record<string, unknown>;
const parse = (svg: string) =>
  new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: "",
    isArray: (name) => ["polyline", "circle", "rect", "text", "line", "tspan"].includes(name),
  }).parse(svg) as { svg: Node };
const list = (svg: Node, tag: string) => (svg[tag] ?? []) as Node[];
/** The words of every text element (a wrapped label's lines joined by spaces). */
const texts = (svg: Node) =>
  list(svg, "text").map((t) => {
    if (typeof t !== "object") return textOf(t);
    const spans = (t["tspan"] ?? []) as Node[];
    return spans.length > 0
      ? spans.map((span) => textOf(typeof span === "object" ? span["#text"] : span)).join(" ")
      : textOf(t["#text"] ?? "");
  });
/** A text node's content: fast-xml-parser gives a string, or a number for numeric text. */
function textOf(value: unknown): string {
  if (typeof value === "string" || typeof value === "number") return String(value);
  throw new Error(`not a text node: ${JSON.stringify(value)}`);
}

/** Every number in an attribute that holds coordinates. */
function coordinates(svg: string): number[] {
  return [...svg.matchAll(/\b(?:x|y|x1|x2|y1|y2|cx|cy|width|height|points)="([^"]*)"/g)].flatMap((m) =>
    m[1]!.split(/[ ,]/).map(Number),
  );
}

describe("renderLineChart", () => {
  const spec = {
    title: 'Goodput <by> writers & "strategy"',
    subtitle: "median of 3 rounds",
    xAxis: { label: "writers", scale: "log2" as const },
    yAxis: { label: "increments per second" },
    series: [
      {
        label: "none",
        points: [
          { x: 16, y: 80 },
          { x: 1, y: 300 },
          { x: 4, y: 220 },
          { x: 2, y: 260 },
          { x: 8, y: 210 },
        ],
      },
      {
        label: "full jitter",
        points: [
          { x: 1, y: 310 },
          { x: 2, y: Number.NaN },
          { x: 16, y: 420 },
        ],
      },
    ],
    references: [{ value: 500, label: "goal: 500/s" }],
    markers: true,
  };

  it("draws a valid SVG: one polyline per series with its title, a dot per finite point, ticks at the data's x", () => {
    const svg = renderLineChart(spec);
    expect(XMLValidator.validate(svg)).toBe(true);
    const root = parse(svg).svg;
    expect(root["xmlns"]).toBe("http://www.w3.org/2000/svg");
    const lines = list(root, "polyline");
    expect(lines.map((l) => l["title"])).toEqual(["none", "full jitter"]);
    expect(String(lines[1]!["points"]).split(" ")).toHaveLength(2); // NaN left out
    expect(list(root, "circle")).toHaveLength(7);
    for (const tick of ["1", "2", "4", "8", "16"]) expect(texts(root)).toContain(tick);
    expect(texts(root)).toEqual(
      expect.arrayContaining([
        "writers",
        "increments per second",
        "goal: 500/s",
        "none",
        "full jitter",
        "median of 3 rounds",
      ]),
    );
    expect(svg).toContain("Goodput &lt;by&gt; writers &amp; &quot;strategy&quot;");
    expect(coordinates(svg).every(Number.isFinite)).toBe(true);
  });

  it("spaces doubling x values evenly on a log2 axis and sorts points by x", () => {
    const root = parse(renderLineChart(spec)).svg;
    const xs = String(list(root, "polyline")[0]!["points"])
      .split(" ")
      .map((p) => Number(p.split(",")[0]));
    const gaps = xs.slice(1).map((x, i) => x - xs[i]!);
    expect(gaps.every((g) => g > 0)).toBe(true);
    for (const gap of gaps) expect(Math.abs(gap - gaps[0]!)).toBeLessThan(0.2);
  });

  it("puts the y axis top on a round number above the data and the reference lines", () => {
    const svg = renderLineChart(spec);
    expect(texts(parse(svg).svg)).toContain("600"); // niceMax(500 * 1.05)
    const empty = renderLineChart({ ...spec, series: [], references: [] });
    expect(XMLValidator.validate(empty)).toBe(true);
    expect(coordinates(empty).every(Number.isFinite)).toBe(true);
  });

  it("draws a linear axis from zero with round ticks", () => {
    const svg = renderLineChart({
      ...spec,
      xAxis: { label: "seconds" },
      series: [
        {
          label: "a",
          points: [
            { x: 0, y: 0 },
            { x: 3, y: 1 },
          ],
        },
      ],
    });
    expect(XMLValidator.validate(svg)).toBe(true);
    expect(texts(parse(svg).svg)).toEqual(expect.arrayContaining(["0", "0.5", "1", "1.5", "2", "2.5", "3"]));
  });
});

describe("renderBarChart", () => {
  const spec = {
    title: "Queue throughput",
    groups: ["raw receive + delete loop (SDK)", "QueueConsumer", "QueueConsumer + idempotency"],
    series: [
      { label: "round median", values: [820, 790.25, undefined] },
      { label: "best round", values: [900, 850, 600] },
    ],
    yAxis: { label: "messages per second" },
    references: [{ value: 779, label: "goal: 0.95 x raw" }],
  };

  it("draws a valid SVG with a bar and a value label per finite value, group labels and a legend", () => {
    const svg = renderBarChart(spec);
    expect(XMLValidator.validate(svg)).toBe(true);
    const root = parse(svg).svg;
    const bars = list(root, "rect").filter((r) => r["title"] !== undefined);
    expect(bars.map((b) => b["title"])).toEqual([
      "raw receive + delete loop (SDK), round median: 820",
      "raw receive + delete loop (SDK), best round: 900",
      "QueueConsumer, round median: 790",
      "QueueConsumer, best round: 850",
      "QueueConsumer + idempotency, best round: 600",
    ]);
    expect(texts(root)).toEqual(
      expect.arrayContaining([
        "820",
        "790",
        "600",
        "goal: 0.95 x raw",
        "round median",
        "best round",
        "messages per second",
      ]),
    );
    // Bars stand on the x axis and the tallest one is below the plot's top.
    for (const bar of bars) expect(Number(bar["y"]) + Number(bar["height"])).toBeCloseTo(390, 0);
    expect(Math.min(...bars.map((b) => Number(b["y"])))).toBeGreaterThanOrEqual(60);
    expect(coordinates(svg).every(Number.isFinite)).toBe(true);
  });

  it("names reference lines in the legend with their own dashes, and wraps long legend labels inside the picture", () => {
    const svg = renderBarChart({
      ...spec,
      series: [{ label: "a series label far too long for the legend's width", values: [1, 2, 3] }],
      references: [
        { value: 1, label: "first goal" },
        { value: 2, label: "second goal" },
      ],
    });
    expect(XMLValidator.validate(svg)).toBe(true);
    const root = parse(svg).svg;
    expect(texts(root)).toEqual(
      expect.arrayContaining(["a series label far too long for the legend's width", "first goal", "second goal"]),
    );
    const dashes = list(root, "line")
      .filter((l) => l["title"] !== undefined)
      .map((l) => l["stroke-dasharray"]);
    expect(new Set(dashes).size).toBe(2);
    // Legend lines (left-aligned, right of the plot) end inside the picture at about 7 px a character.
    const width = Number(root["width"]);
    const legendLines = list(root, "text")
      .flatMap((t) => (t["tspan"] ?? []) as Node[])
      .filter((span) => Number(span["x"]) > 620);
    expect(legendLines.length).toBeGreaterThan(3);
    for (const span of legendLines)
      expect(Number(span["x"]) + 7 * String(span["#text"]).length).toBeLessThanOrEqual(width);
  });

  it("wraps long group labels into lines and uses the caller's value format", () => {
    const svg = renderBarChart({
      ...spec,
      groups: ["a label long enough to need more than one line in a narrow group", "b", "c", "d", "e", "f"],
      formatValue: (v) => `${v} msg/s`,
    });
    expect(XMLValidator.validate(svg)).toBe(true);
    const label = list(parse(svg).svg, "text").find((t) => Array.isArray(t["tspan"]))!;
    expect((label["tspan"] as unknown[]).length).toBeGreaterThan(1);
    expect(svg).toContain("820 msg/s");
  });
});

describe("axis numbers", () => {
  it("rounds axis maxima up to steps that divide into five ticks, and formats without float noise", () => {
    expect([niceMax(0), niceMax(0.9), niceMax(105), niceMax(630), niceMax(Number.NaN)]).toEqual([1, 1, 150, 800, 1]);
    expect([formatNumber(0.1 + 0.2), formatNumber(1234.5), formatNumber(12.345), formatNumber(Number.NaN)]).toEqual([
      "0.3",
      "1235",
      "12.3",
      "n/a",
    ]);
  });
});

describe("a log-10 value axis", () => {
  // The optimistic benchmark's figures: coalesced updates two orders of magnitude above the rest.
  const values = [680, 1240, 1736, 352, 53_333];
  const spec = {
    title: "Optimistic updates",
    groups: ["serial", "single writer", "8 writers", "8 raw writers", "coalesced"],
    series: [{ label: "updates per second", values }],
    yAxis: { label: "updates per second", scale: "log10" as const },
  };

  it("keeps every bar readable where a linear axis would flatten all but one into a sliver", () => {
    const heights = (svg: string) =>
      list(parse(svg).svg, "rect")
        .filter((r) => r["title"] !== undefined)
        .map((bar) => Number(bar["height"]));
    const log = heights(renderBarChart(spec));
    const linear = heights(renderBarChart({ ...spec, yAxis: { label: "updates per second" } }));
    const plot = 390 - 60;
    expect(Math.min(...linear)).toBeLessThan(plot * 0.03); // the defect: a sliver
    expect(Math.min(...log)).toBeGreaterThan(plot * 0.15);
    // Taller bars for larger values, still.
    const order = (hs: number[]) => [...hs.keys()].sort((a, b) => hs[a]! - hs[b]!);
    expect(order(log)).toEqual(order(values));
  });

  it("labels the powers of ten around the data and says it is a log scale", () => {
    const svg = renderBarChart(spec);
    expect(XMLValidator.validate(svg)).toBe(true);
    expect(texts(parse(svg).svg)).toEqual(
      expect.arrayContaining(["100", "1,000", "10,000", "100,000", "updates per second (log scale)"]),
    );
    expect(coordinates(svg).every(Number.isFinite)).toBe(true);
  });

  it("leaves out points of 0 or less on a line chart instead of drawing them at minus infinity", () => {
    const svg = renderLineChart({
      title: "t",
      xAxis: { label: "x" },
      yAxis: { label: "y", scale: "log10" },
      series: [
        {
          label: "s",
          points: [
            { x: 1, y: 0 },
            { x: 2, y: 10 },
            { x: 3, y: 1000 },
          ],
        },
      ],
    });
    expect(String(list(parse(svg).svg, "polyline")[0]!["points"]).split(" ")).toHaveLength(2);
    expect(coordinates(svg).every(Number.isFinite)).toBe(true);
  });
});

describe("stackCharts", () => {
  it("puts charts one under the other in one valid document", () => {
    const one = renderLineChart({ title: "a", xAxis: { label: "x" }, yAxis: { label: "y" }, series: [] });
    const two = renderBarChart({
      title: "b",
      groups: ["g"],
      series: [{ label: "s", values: [1] }],
      yAxis: { label: "y" },
    });
    const svg = stackCharts("both", [one, two]);
    expect(XMLValidator.validate(svg)).toBe(true);
    const heights = [one, two].map((chart) => Number(/height="(\d+)"/.exec(chart)![1]));
    expect(svg).toMatch(new RegExp(`^<svg [^>]*height="${heights[0]! + heights[1]!}"`));
    expect(svg).toContain(`<svg x="0" y="0" `);
    expect(svg).toContain(`<svg x="0" y="${heights[0]}" `);
    expect(() => stackCharts("x", ["<p/>"])).toThrow(TypeError);
  });
});
