/**
 * The figures the documentation quotes come from the benchmark results file: every marked figure
 * equals what docs/benchmarks/results.json says (scripts/doc-figures.ts), and no figure that looks
 * measured goes unmarked.
 */
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { checkDocFigures, formatFigure, lookUp, renderFigures, unmarkedFigures } from "../../../scripts/doc-figures.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

const results = {
  run: { machine: { cpus: 2 } },
  results: [
    { scenario: "queue", rawPerSec: 1069.7, ratio: 0.96 },
    { scenario: "lock", holdMs: 50, handoffMedianMs: 13.5 },
    {
      scenario: "retry",
      results: [
        { strategy: "fixed", writers: 8, requestsPerSuccess: 2.44 },
        { strategy: "fixed", writers: 16, requestsPerSuccess: 3.63 },
      ],
    },
    { scenario: "files", dropProbability: 0.1 },
  ],
};

describe("figures in the documentation", () => {
  it("are read from the results by path: keys, array elements picked by their fields, the run, derived figures", () => {
    expect(lookUp(results, "queue.rawPerSec")).toBe(1069.7);
    expect(lookUp(results, "retry.results[strategy=fixed,writers=16].requestsPerSuccess")).toBe(3.63);
    expect(lookUp(results, "run.machine.cpus")).toBe(2);
    expect(lookUp(results, "lock.ceilingPerSec")).toBeCloseTo(1000 / 63.5);
    expect(lookUp(results, "queue.perSec")).toMatch(/'queue\.perSec' is not in .*results\.json/);
    expect(lookUp(results, "stress.x")).toMatch(/no scenario 'stress'/);
  });

  it("are shown with grouped thousands and the decimals asked for", () => {
    expect(formatFigure(53333.3, undefined)).toBe("53,333.3");
    expect(formatFigure(1239.7, ".0")).toBe("1,240");
    expect(formatFigure(0.824, ".2")).toBe("0.82");
    expect(formatFigure(0.0009, "%")).toBe("0.09");
    expect(() => formatFigure(1, "x")).toThrow(/unknown figure format/);
  });

  it("are written from the results, and a figure that differs or names nothing is reported", () => {
    const text = [
      "Raw: 811<!--fig queue.rawPerSec--> messages/s (0.91<!--fig queue.ratio-->x).",
      "Fixed at 16: 3.63<!--fig retry.results[strategy=fixed,writers=16].requestsPerSuccess-->; lost: 10<!--fig files.dropProbability %-->%.",
      "Gone: 5<!--fig queue.gone-->.",
      "The syntax, as code, is no figure: `811<!--fig queue.rawPerSec-->`.",
    ].join("\n");
    const { text: rendered, report } = renderFigures("doc.md", text, results);
    expect(rendered.split("\n")[0]).toBe(
      "Raw: 1,069.7<!--fig queue.rawPerSec--> messages/s (0.96<!--fig queue.ratio-->x).",
    );
    expect(report.figures).toBe(5);
    expect(report.problems).toEqual([
      "doc.md:1: shows 811 for 'queue.rawPerSec', docs/benchmarks/results.json has 1,069.7",
      "doc.md:1: shows 0.91 for 'queue.ratio', docs/benchmarks/results.json has 0.96",
      "doc.md:3: 'queue.gone' is not in docs/benchmarks/results.json (no 'gone')",
    ]);
  });

  it("that look measured but carry no marker are reported; goals, versions, code and stated limits are not", () => {
    const text = [
      "The consumer did 655 messages/s (0.91x raw); the handoff median **19 ms**.", // 3 unmarked
      "A partition takes 500 entities/s; `bench --rate 50/s`; goal ≥ 1.6; SDK 12.30+; 4 × 4 = 16.",
      "",
      "## Measured",
      "| figure | value |",
      "| --- | --- |",
      "| ratio | 2.02 |", // unmarked in a measured section
      "| marked | 2.34<!--fig queue.ratio--> |",
      "",
      "## Other",
      "A lease lasts 1.5 minutes here.",
    ].join("\n");
    expect(unmarkedFigures("doc.md", text).map((problem) => problem.replace(/ looks measured.*/, ""))).toEqual([
      "doc.md:1: '655 messages/s'",
      "doc.md:1: '0.91x'",
      "doc.md:1: 'median **19'",
      "doc.md:7: '2.02'",
    ]);
  });

  it("in README.md and docs/ all come from docs/benchmarks/results.json", () => {
    const report = checkDocFigures(root);
    expect(report.problems).toEqual([]);
    expect(report.figures).toBeGreaterThan(150); // the markers were found
  });
});
