/** The chart of `stress --svg`: two panels, one unit each, and only measured points. */
import { XMLParser, XMLValidator } from "fast-xml-parser";
import * as main from "../../../src/index.js";
import type { PartitionStressResult, StressDesignResult } from "../../../tools/index.js";
import { renderStressChart } from "../../../tools/cli/stress-chart.js";

interface Panel {
  polyline?: { points: string; title: string }[];
  line?: { title?: string }[];
  text: (string | number | { "#text": string; transform?: string })[];
}
const parse = (svg: string) =>
  new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: "",
    isArray: (name) => ["svg", "polyline", "line", "text"].includes(name),
  }).parse(svg) as { svg: { svg: Panel[] }[] };
/** The y axis label of a panel: its rotated text. */
const yLabel = (panel: Panel) =>
  panel.text.find((t): t is { "#text": string; transform: string } => typeof t === "object" && !!t.transform)?.[
    "#text"
  ];

function design(name: string, samples: [number, number, number][]): StressDesignResult {
  return {
    design: name,
    description: `${name} <design> & "keys"`,
    table: `t${name}`,
    preloaded: 10,
    durationSec: samples.length,
    operations: { reads: 1, inserts: 1, updates: 1, errors: 0, throttled: 0 },
    getPerSec: 1,
    putPerSec: 1,
    entitiesPerSec: 2,
    partitionKeysTouched: 1,
    partitionsTouched: 1,
    busiestPartition: { partition: "p", entitiesPerSec: 2, share: 1 },
    sustainableEntitiesPerSec: 500,
    hotPartition: true,
    overTarget: false,
    latencyMs: { get: { p50: 1, p95: 2, p99: 3 }, put: { p50: 1, p95: 2, p99: 3 } },
    errorSamples: [],
    verdict: "",
    samples: samples.map(([getPerSec, putPerSec, busiest], i) => ({
      atSec: i + 1,
      getPerSec,
      putPerSec,
      busiestPartitionPerSec: busiest,
      errorsPerSec: 0,
    })),
  };
}

function result(designs: StressDesignResult[], emulator = true): PartitionStressResult {
  return {
    tool: "partition-stress-test",
    endpoint: "https://acct.table.core.windows.net/?a=1&b=<2>",
    emulator,
    note: "",
    targetEntitiesPerSecPerPartition: 500,
    settings: {
      durationInSeconds: 3,
      workers: 1,
      preloadEntities: 10,
      mix: { read: 0.5, insert: 0.25, update: 0.25 },
      targetOpsPerSec: null,
      entityBytes: 1,
    },
    startedAt: "",
    finishedAt: "",
    aborted: false,
    tablesKept: false,
    designs,
  };
}

describe("renderStressChart", () => {
  const svg = renderStressChart(
    result([
      design("single", [
        [900, 800, 1700],
        [1000, 900, 1900],
        [950, 850, 1800],
      ]),
      design("bucketed", [
        [400, 300, 60],
        [420, 310, 70],
      ]),
    ]),
  );

  it("draws a valid SVG of two panels: operations per second, and the busiest partition against the target", () => {
    expect(XMLValidator.validate(svg)).toBe(true);
    const [throughput, busiest] = parse(svg).svg[0]!.svg;
    expect(throughput!.polyline!.map((l) => l.title)).toEqual([
      "single GET/s (point reads)",
      "single PUT/s (inserts, updates)",
      "bucketed GET/s (point reads)",
      "bucketed PUT/s (inserts, updates)",
    ]);
    expect(busiest!.polyline!.map((l) => l.title)).toEqual(["single busiest partition", "bucketed busiest partition"]);
    // One unit per panel.
    expect(yLabel(throughput!)).toBe("successful operations per second");
    expect(yLabel(busiest!)).toBe("entities per second, busiest partition");
    expect(busiest!.line!.map((l) => l.title).filter(Boolean)).toEqual(["target of one partition: 500 entities/s"]);
    expect(svg).toContain("Emulator run");
  });

  it("draws the measured samples only: no line starts at a made-up origin", () => {
    const [throughput, busiest] = parse(svg).svg[0]!.svg;
    for (const panel of [throughput!, busiest!]) {
      for (const line of panel.polyline!) {
        const points = line.points.split(" ").map((p) => p.split(",").map(Number) as [number, number]);
        expect(points).toHaveLength(line.title.startsWith("single") ? 3 : 2);
        for (const [x, y] of points) {
          expect(x).toBeGreaterThan(70); // the first sample is at 1 s, right of the y axis
          expect(x).toBeLessThanOrEqual(620);
          expect(y).toBeGreaterThanOrEqual(60);
          expect(y).toBeLessThan(390); // every sample here is above 0
        }
      }
    }
  });

  it("escapes text and draws an empty run", () => {
    const empty = renderStressChart(result([design("a", [])], false));
    expect(XMLValidator.validate(empty)).toBe(true);
    expect(empty).toContain("&lt;2&gt;");
  });

  it("is not part of the library's entry point (CommonJS users do not load the SVG writer)", () => {
    expect(Object.keys(main)).not.toContain("renderStressChart");
  });
});
