/**
 * `azure-storage-concurrency bench` run as a user runs it (a child process, from source, on the test
 * Azurite): a tiny scenario with --json and --report, and one whose workers are processes of their
 * own. (tests/package/pack.test.ts runs the same from the packed package.)
 */
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { XMLValidator } from "fast-xml-parser";
import { BlobServiceClient } from "@azure/storage-blob";
import { startAzurite } from "../../../src/testing/index.js";
import { spawnWorker } from "../../support/processes.js";
import { connectionString } from "../../support/storage.js";

async function bench(...args: string[]) {
  const { code, last, stderr } = await benchExiting(...args);
  if (code !== 0) throw new Error(`bench exited with ${code}:\n${stderr}`);
  return { last, stderr };
}

/** Runs `bench` to its end, whatever its exit code (on the test Azurite unless `--connection-string` is given). */
async function benchExiting(...args: string[]) {
  const target = args.includes("--connection-string") ? [] : ["--connection-string", connectionString()];
  const run = spawnWorker("tools/cli/main.ts", ["bench", ...args, ...target]);
  const { code } = await run.exited;
  const line = run.lines.at(-1);
  return { code, last: (line ? JSON.parse(line) : {}) as Record<string, unknown>, stderr: run.stderr() };
}

async function benchContainers(account: string): Promise<string[]> {
  const names: string[] = [];
  for await (const c of BlobServiceClient.fromConnectionString(account).listContainers({ prefix: "bench-" }))
    names.push(c.name);
  return names;
}

describe("bench command", () => {
  it("runs a scenario: progress on stderr, the result as the last stdout line, the report on request", async () => {
    const dir = await mkdtemp(join(tmpdir(), "bench-"));
    // An Azurite of its own: other test files run benchmarks on the shared one at the same time.
    await using azurite = await startAzurite({ persistence: "memory" });
    try {
      const before = await benchContainers(azurite.connectionString);
      const args = ["retry", "--writers", "2", "--increments", "10", "--rounds", "1", "--round-trip-ms", "0", "--json"];
      const { last, stderr } = await bench(
        ...args,
        "--report",
        join(dir, "report.md"),
        "--connection-string",
        azurite.connectionString,
      );

      expect(stderr).toMatch(/^\[retry\] running against the given account$/m);
      expect(stderr).toMatch(/^\[retry\] round 1\/1, 2 writers: requests per success raw-sdk-naive-loop \d/m);
      expect(stderr).toMatch(/^\[retry\] done in [\d.]+ s$/m);
      expect(last).toMatchObject({ scenario: "retry", target: "account", writers: [2], rounds: 1 });
      const rows = last["results"] as { strategy: string; writers: number; requestsPerSuccess: number }[];
      expect(rows.map((r) => r.strategy)).toEqual([
        "raw-sdk-naive-loop",
        "none",
        "fixed",
        "exponential",
        "full-jitter",
        "decorrelated-jitter",
      ]);
      for (const row of rows) expect(row.requestsPerSuccess).toBeGreaterThanOrEqual(2); // a read and a write at least

      const report = await readFile(join(dir, "report.md"), "utf8");
      expect(report).toContain("Scenario `retry`");
      expect(report).toContain("| storage | a real account |");
      const assets = await readdir(join(dir, "report"));
      expect(assets).toContain("results.json");
      const charts = assets.filter((f) => f.endsWith(".svg"));
      expect(charts.length).toBeGreaterThan(0);
      for (const chart of charts)
        expect(XMLValidator.validate(await readFile(join(dir, "report", chart), "utf8"))).toBe(true);
      const saved = JSON.parse(await readFile(join(dir, "report", "results.json"), "utf8")) as {
        run: { command: string };
        results: unknown[];
      };
      expect(saved.run.command).toMatch(/^azure-storage-concurrency bench retry --writers 2 /);
      expect(saved.results).toEqual([last]);
      expect(await benchContainers(azurite.connectionString)).toEqual(before); // its containers are deleted
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("runs a scenario whose contenders are processes of their own (workers through tsx from source)", async () => {
    // prettier-ignore
    const { last, stderr } = await bench(
      "lock", "--processes", "2", "--contenders", "2", "--seconds", "1",
      "--scale", "2", "--scale-seconds", "1", "--latency", "10", "--list-locks", "20", "--json",
    );
    expect(stderr).toMatch(/^\[lock\] 2 contenders in 2 processes for 1 s/m);
    expect(last).toMatchObject({
      scenario: "lock",
      processes: 2,
      contenders: 2,
      overlaps: 0,
      fencingTokensUnique: true,
    });
    expect(last["acquisitions"]).toBeGreaterThan(1);
    expect(last["anchor"]).toMatchObject({ overlaps: 0 });
    expect(last).toMatchObject({
      scale: [{ contenders: 2, overlaps: 0 }],
      latency: { delayInMs: 10, overlaps: 0, scale: [{ contenders: 2, overlaps: 0 }] },
      list: { locks: 20, rows: 20 },
    });
    for (const figure of ["uncontendedRatio", "anchorRequestsPerWaiterPerSec", "longestWaitToMeanWait"])
      expect(typeof last[figure]).toBe("number");
  }, 150_000);

  it("stops a scenario that runs past its time limit, and still runs, prints and reports the others", async () => {
    const dir = await mkdtemp(join(tmpdir(), "bench-"));
    try {
      // retry with 64 writers making 100,000 increments each cannot finish in 8 s; batch with 100 entities can.
      const { code, last, stderr } = await benchExiting(
        "retry,batch",
        ...["--time-limit", "8", "--writers", "64", "--increments", "100000", "--rounds", "1"],
        ...["--entities", "100", "--partitions", "1", "--skip-scale", "--json", "--report", join(dir, "report.md")],
      );
      expect(stderr).toMatch(/^\[retry\] ran past its time limit of 8 s and was stopped; its figures are left out$/m);
      expect(stderr).toMatch(/^1 of 2 scenarios did not finish: retry$/m);
      expect(code).toBe(1);
      const results = last["results"] as Record<string, unknown>[];
      expect(results.map((r) => r["scenario"])).toEqual(["retry", "batch"]);
      expect(results[0]).toMatchObject({ timedOut: true, timeLimitSec: 8 });
      expect(results[0]).not.toHaveProperty("results");
      expect(results[1]).not.toHaveProperty("error");
      expect(results[1]!["singlePerSec"]).toBeGreaterThan(0);

      const report = await readFile(join(dir, "report.md"), "utf8");
      expect(report).toContain("## Scenario `retry`: did not finish");
      expect(report).toContain("Scenario `batch`");
      const saved = JSON.parse(await readFile(join(dir, "report", "results.json"), "utf8")) as { results: unknown[] };
      expect(saved.results).toEqual(results);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
