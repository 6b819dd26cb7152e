import { XMLParser, XMLValidator } from "fast-xml-parser";
import { renderStressChart, type PartitionStressResult, type StressDesignResult } from "../../../src/index.js";

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
    busiestPartition: { partition: "p", entitiesPerSec: 2 },
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
  it("draws a valid SVG with a line per design and operation, and the 500/s target", () => {
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
    expect(XMLValidator.validate(svg)).toBe(true);
    const parsed = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: "" }).parse(svg) as {
      svg: { polyline: { points: string; title: string }[]; text: (string | { "#text": string })[] };
    };
    const lines = parsed.svg.polyline;
    expect(lines.map((l) => l.title)).toEqual([
      "single GET/s",
      "single PUT/s",
      "single busiest partition/s",
      "bucketed GET/s",
      "bucketed PUT/s",
      "bucketed busiest partition/s",
    ]);
    expect(lines[0]!.points.split(" ")).toHaveLength(4); // the origin and three samples
    for (const line of lines) {
      for (const point of line.points.split(" ")) {
        const [x, y] = point.split(",").map(Number);
        expect(x).toBeGreaterThanOrEqual(70);
        expect(x).toBeLessThanOrEqual(620);
        expect(y).toBeGreaterThanOrEqual(60);
        expect(y).toBeLessThanOrEqual(390);
      }
    }
    // The target is named in the legend (whose labels may wrap over two lines).
    expect(svg.replace(/<\/tspan><tspan[^>]*>/g, " ")).toContain("target of one partition: 500/s");
    expect(svg).toContain("Emulator run");
  });

  it("escapes text and draws an empty run", () => {
    const svg = renderStressChart(result([design("a", [])], false));
    expect(XMLValidator.validate(svg)).toBe(true);
    expect(svg).toContain("&lt;2&gt;");
  });
});
