/**
 * `azure-storage-concurrency bench` run as a user runs it (a child process, from source, on the test
 * Azurite): a tiny scenario with --json and --report, and one whose workers are processes of their
 * own. (tests/package/pack.test.ts runs the same from the packed package.)
 */
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { XMLValidator } from "fast-xml-parser";
import { spawnWorker } from "../../support/processes.js";
import { blobService, connectionString } from "../../support/storage.js";

async function bench(...args: string[]) {
  const run = spawnWorker("src/cli/main.ts", ["bench", ...args, "--connection-string", connectionString()]);
  const { code } = await run.exited;
  if (code !== 0) throw new Error(`bench exited with ${code}:\n${run.stderr()}`);
  return { last: JSON.parse(run.lines.at(-1)!) as Record<string, unknown>, stderr: run.stderr() };
}

async function benchContainers(): Promise<string[]> {
  const names: string[] = [];
  for await (const c of blobService().listContainers({ prefix: "bench-" })) names.push(c.name);
  return names;
}

describe("bench command", () => {
  it("runs a scenario: progress on stderr, the result as the last stdout line, the report on request", async () => {
    const dir = await mkdtemp(join(tmpdir(), "bench-"));
    try {
      const before = await benchContainers();
      const args = ["retry", "--writers", "2", "--increments", "10", "--rounds", "1", "--json"];
      const { last, stderr } = await bench(...args, "--report", join(dir, "report.md"));

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
      expect(await benchContainers()).toEqual(before); // its containers are deleted
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
});
