import { XMLValidator } from "fast-xml-parser";
import { evaluateGoals } from "../../../tools/bench/report/goals.js";
import type { ScenarioResult } from "../../../tools/bench/report/markdown.js";
import { renderReport, type BenchRun } from "../../../tools/bench/report/report.js";

const machine = { node: "v22.23.3", cpus: 2, cpuModel: "Test CPU 3000", memoryGiB: 24, platform: "linux-x64" };

const retryRows = ["raw-sdk-naive-loop", "none", "fixed", "exponential", "full-jitter", "decorrelated-jitter"].flatMap(
  (strategy, s) =>
    [1, 2, 4].map((writers) => ({
      strategy,
      writers,
      requestsPerSuccess: writers === 1 ? 2 : s < 2 ? 2 + writers : 2 + writers / 10,
      goodputPerSec: writers === 1 ? 400 : s < 2 ? 400 / writers : 450 + s,
      conflicts: 0,
    })),
);

const results: ScenarioResult[] = [
  {
    scenario: "retry",
    rounds: 3,
    incrementsPerWriter: 20,
    minSuccessesPerRace: 160,
    strategies: { fixed: "retry(): 20 ms every time" },
    results: retryRows,
    durationSec: 50,
    machine,
  },
  {
    scenario: "lock",
    contenders: 8,
    processes: 4,
    overlaps: 0,
    handoffMedianMs: 17.6,
    handoffP90Ms: 38,
    waitMedianMs: 322,
    requestsPerWaiterPerSec: 12.2,
    acquisitions: 140,
    acquisitionsPerSec: 13.9,
    rawCyclePerSec: 463,
    libraryCyclePerSec: 263,
    uncontendedRatio: 0.57,
    handoffToAnchor: 0.15,
    requestsToAnchor: 7.6,
    longestWaitToMeanWait: 3.1,
    scale: [
      { contenders: 2, handoffMedianMs: 10, requestsPerWaiterPerSec: 2, longestWaitToMeanWait: 1.5 },
      { contenders: 32, handoffMedianMs: 11, requestsPerWaiterPerSec: 0.5, longestWaitToMeanWait: 2 },
    ],
    latency: {
      delayInMs: 10,
      jitterInMs: 5,
      handoffMedianMs: 40,
      anchorHandoffMedianMs: 150,
      scale: [
        { contenders: 2, handoffMedianMs: 40, requestsPerWaiterPerSec: 2, longestWaitToMeanWait: 1.5 },
        { contenders: 32, handoffMedianMs: 100, requestsPerWaiterPerSec: 0.5, longestWaitToMeanWait: 2 },
      ],
    },
    // A scenario's own verdicts are not trusted: the report compares the figures itself.
    goals: { overlaps: true, handoffMedianMs: false, requestsPerWaiterPerSec: true },
    anchor: {
      handoffMedianMs: 114,
      handoffP90Ms: 319,
      waitMedianMs: 3,
      requestsPerWaiterPerSec: 1.6,
      acquisitions: 109,
      selfReacquisitions: 62,
      overlaps: 0,
    },
    durationSec: 30,
    machine,
  },
  {
    scenario: "batch",
    singlePerSec: 3774,
    batchedPerSec: 27100,
    batchedSameConcurrencyPerSec: 24239,
    rawTransactionPerSec: 25256,
    ratio: 7.18,
    ratioSameConcurrency: 6.42,
    rawRatio: 6.91,
    batchedVsRaw: 0.96,
    concurrency: 1,
    partitions: 8,
    rounds: 5,
    runs: { single: [3774], rawTransactions: [25256], batchedSameConcurrency: [24239], batched: [27100] },
    durationSec: 16,
    machine,
  },
  {
    scenario: "optimistic",
    serialPerSec: 100,
    contendedPerSec: 80,
    contendedRatio: 0.8,
    requestsPerUpdate: 2.5,
    singleWriterRatio: 1.7,
    coalescedRatio: 12,
    overheadRatio: 1.2,
    durationSec: 60,
    machine,
  },
  {
    scenario: "files",
    increments: 40,
    dropProbability: 0.1,
    filesTarget: "files-responder",
    raw: { finalValue: 47, reportedIncrements: 40, requestsPerIncrement: 4.7, tornReads: 94, reads: 382, ms: 345 },
    library: { finalValue: 40, reportedIncrements: 40, requestsPerIncrement: 2.1, tornReads: 0, reads: 171, ms: 129 },
    rawExtraIncrements: 7,
    libraryExtraIncrements: 0,
    durationSec: 1,
    machine,
  },
  { scenario: "future", widgetsPerSec: 42.5, durationSec: 2, machine },
];

const run: BenchRun = {
  scenario: "all",
  run: {
    startedAt: "2025-03-04T05:06:07.890Z",
    finishedAt: "2025-03-04T05:09:07.890Z",
    durationSec: 180,
    machine: { ...machine, os: "Linux 6.1" },
    loadAverage: { atStart: 0.2, atEnd: 0.3 },
    version: "1.2.3",
    commit: "abc1234",
    command: "npm run bench -- all --report docs/benchmarks.md",
    target: "azurite",
  },
  results,
};

describe("renderReport", () => {
  const { markdown, files } = renderReport(run, { assets: "benchmarks", audience: "repository" });

  it("states the machine, the date, the version, the commit and how to reproduce the run", () => {
    for (const text of [
      "| azure-storage-concurrency | 1.2.3 |",
      "v22.23.3",
      "Test CPU 3000, 2 logical CPUs",
      "24 GiB",
      "Linux 6.1",
      "2025-03-04 05:06:07",
      "`abc1234`",
      "npm run bench -- all --report docs/benchmarks.md",
    ]) {
      expect(markdown).toContain(text);
    }
    expect(markdown).not.toContain("was not idle"); // load 0.2 / 0.3 on 2 CPUs
    const busy = renderReport(
      { ...run, run: { ...run.run, loadAverage: { atStart: 3.5, atEnd: 2 } } },
      { assets: "benchmarks" },
    );
    expect(busy.markdown).toContain("The machine was not idle during this run (load average 3.5");
  });

  it("prints met / not met per goal from the figures, skipping scenarios that did not run", () => {
    const row = (scenario: string, figure: string) =>
      markdown.split("\n").find((line) => line.startsWith(`| \`${scenario}\` | \`${figure}\` |`));
    expect(row("lock", "handoffMedianMs")).toContain("| 17.6 | met |");
    expect(row("lock", "uncontendedRatio")).toContain("| 0.57 | **not met** |");
    expect(row("lock", "longestWaitToMeanWait")).toContain("| 3.1 | met |");
    expect(row("batch", "ratio")).toContain("| 7.18 | **not met** |");
    expect(row("optimistic", "contendedRatio")).toContain("| ≥ 1.5 | 0.8 | **not met** |");
    expect(row("optimistic", "overheadRatio")).toContain("| 1.2 | **not met** |");
    expect(row("files", "lockedExtraIncrements")).toContain("| n/a | not reported |");
    expect(row("queue", "ratio")).toBeUndefined();
    expect(markdown).not.toContain("## Queue throughput");
    const outcomes = evaluateGoals(results);
    const met = outcomes.filter((g) => g.status === "met").length;
    expect(markdown).toContain(`${met} of ${outcomes.length} goals met in this run.`);
  });

  it("says when a scenario's result comes from a run of its own", () => {
    const rerun = "re-run alone after `bench all` (the first run failed)";
    const withRerun = {
      ...run,
      results: run.results.map((r) => (r.scenario === "batch" ? { ...r, rerun } : r)),
    };
    const rendered = renderReport(withRerun, { assets: "benchmarks" }).markdown;
    const batch = rendered.slice(rendered.indexOf("## Batch"));
    expect(batch.slice(0, batch.indexOf("\n## ", 3))).toContain(`> This scenario was ${rerun}.`);
    expect(markdown).not.toContain("> This scenario was");
  });

  it("says why each goal not met was missed, and only those", () => {
    const reasons = markdown.slice(markdown.indexOf("Why the goals not met were missed:"));
    const missed = evaluateGoals(results).filter((g) => g.status === "not met");
    expect(missed.length).toBeGreaterThan(0);
    for (const goal of missed) {
      const line = reasons.split("\n").find((l) => l.startsWith(`- \`${goal.scenario}\` \`${goal.figure}\`: `));
      expect(line).toBeDefined();
      expect(line).not.toContain("no analysis recorded");
    }
    expect(reasons).not.toContain("`lock` `handoffMedianMs`");
    expect(reasons).toContain("three requests");
  });

  it("writes each chart it links, as valid SVG next to the report, and the run's JSON", () => {
    const links = [...markdown.matchAll(/!\[[^\]]+\]\(([^)]+)\)/g)].map((m) => m[1]!);
    expect(links).toEqual(
      expect.arrayContaining([
        "benchmarks/retry-goodput.svg",
        "benchmarks/retry-requests.svg",
        "benchmarks/lock-latency.svg",
        "benchmarks/lock-scale-handoff.svg",
        "benchmarks/lock-latency-compared.svg",
        "benchmarks/batch-throughput.svg",
        "benchmarks/optimistic-throughput.svg",
        "benchmarks/files-correctness.svg",
      ]),
    );
    for (const link of links) {
      expect(files.has(link)).toBe(true);
      expect(XMLValidator.validate(files.get(link)!)).toBe(true);
    }
    // Coalesced updates run orders of magnitude above the other ways: a log axis keeps them all readable.
    expect(files.get("benchmarks/optimistic-throughput.svg")).toContain("(log scale)");
    // The growth of each lock curve is stated in words.
    expect(markdown).toContain("the handoff median is flat (x1.1 from 2 to 32 contenders)");
    expect(markdown).toContain("handoff sublinear (x2.5 from 2 to 32 contenders)");
    expect(JSON.parse(files.get("benchmarks/results.json")!)).toEqual(run);
    expect(markdown).toContain("[benchmarks/results.json](benchmarks/results.json)");
  });

  it("orders the sections, reads the figures in the text, and keeps each scenario's JSON", () => {
    const headings = markdown.split("\n").filter((line) => line.startsWith("## "));
    expect(headings).toEqual([
      "## The run",
      "## How to reproduce",
      "## Goals",
      "## Retries under contention",
      "## Optimistic updates",
      "## Lock handoff",
      "## Batching",
      "## Files: read-modify-write under a lease",
      "## Scenario `future`",
    ]);
    expect(markdown).toContain("the raw naive loop needs 6 requests per success at 4 writers (4 at 2)");
    expect(markdown).toContain("| `widgetsPerSec` | 42.5 |");
    expect(markdown.match(/<details><summary>This scenario's JSON<\/summary>/g)).toHaveLength(results.length);
    expect(markdown).toContain('"handoffMedianMs": 17.6');
  });
});

describe("a report written in a user's project (issue 23: it printed this repository's instructions and issue numbers)", () => {
  const userRun: BenchRun = {
    ...run,
    run: { ...run.run, command: "azure-storage-concurrency bench all --report bench.md", commit: "unknown" },
  };
  const { markdown } = renderReport(userRun, { assets: "bench", audience: "user" });

  it("gives the installed command, never this repository's scripts, files or issues", () => {
    expect(markdown).toContain("npx azure-storage-concurrency bench all --report benchmarks.md");
    expect(markdown).toContain("Scenario `lock`: `npx azure-storage-concurrency bench lock --json`.");
    expect(markdown).not.toMatch(/npm run bench|npm ci|tools\/bench|Change tools\/|docs\/benchmarks\.md/);
    expect(markdown).not.toMatch(/\bissues? \d+/i);
    expect(markdown).toContain("| scenario | figure | goal | measured |  |");
  });

  it("links the guides it names to the published copy of the measured version", () => {
    const linked = /\[docs\/([\w/-]+\.md)\]\(https:\/\/unpkg\.com\/azure-storage-concurrency@1\.2\.3\/docs\/\1\)/g;
    expect(markdown.match(linked)?.length).toBeGreaterThan(0);
    expect(markdown.replace(linked, "").match(/docs\/[\w/-]+\.md/g)).toBeNull();
  });

  it("is the default of renderReport, and the repository's page is asked for by name", () => {
    expect(renderReport(userRun, { assets: "bench" }).markdown).toBe(markdown);
  });
});

describe("reportAudience", () => {
  it("is the repository inside this workspace, a user anywhere else", async () => {
    const { reportAudience } = await import("../../../tools/bench/report/report.js");
    expect(reportAudience(new URL("../../../tools/bench/report/report.ts", import.meta.url).href)).toBe("repository");
    expect(reportAudience(new URL("../../../package.json", import.meta.url).href)).toBe("user");
  });
});
