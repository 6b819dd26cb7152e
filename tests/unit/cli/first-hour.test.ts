/**
 * Issue 23, item 5: what a newcomer meets on the command line. A mistyped command, action, scenario
 * or design gets a "did you mean" (flags had one already); `bench batch --entities 200` runs exactly
 * 200 one by one (it ran 240: slices of 80 were rounded up).
 */
import { jest } from "@jest/globals";
import { runCli } from "../../../tools/cli/run.js";
import { didYouMean } from "../../../tools/internal/args.js";
import { sliceCounts } from "../../../tools/bench/scenarios/batch.js";

async function capture(...argv: string[]) {
  const err: string[] = [];
  const o = jest.spyOn(process.stdout, "write").mockImplementation(() => true);
  const e = jest.spyOn(process.stderr, "write").mockImplementation((s) => (err.push(String(s)), true));
  try {
    return { code: await runCli(argv), err: err.join("") };
  } finally {
    o.mockRestore();
    e.mockRestore();
  }
}

describe("did you mean", () => {
  it.each([
    [["lokc", "list", "locks"], 'unknown command "lokc" (did you mean lock?)'],
    [["strss"], 'unknown command "strss" (did you mean stress?)'],
    [["lock", "brake", "locks", "x"], 'got "brake" (did you mean break?)'],
    [["semaphore", "lsit", "locks"], 'got "lsit" (did you mean list?)'],
    [["bench", "optimstic"], 'unknown scenario "optimstic" (did you mean optimistic?)'],
    [["stress", "--designs", "bucketted"], 'unknown design "bucketted" (did you mean bucketed?)'],
    [["stress", "--duraton", "3"], "unknown flag --duraton for stress (did you mean --duration?)"],
  ])("%j: a usage error that names the closest word", async (argv, text) => {
    const { code, err } = await capture(...argv);
    expect(code).toBe(2);
    expect(err).toContain(text);
  });

  it("suggests nothing for a word far from every choice, nor for one that may be a secret", () => {
    expect(didYouMean("frobnicate", ["lock", "semaphore", "stress", "bench"])).toBe("");
    const key = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
    expect(didYouMean(key, [key.slice(0, -1)])).toBe("");
  });
});

describe("bench batch --entities", () => {
  it("runs exactly the number asked, the last slice shorter", () => {
    expect(sliceCounts(200, 8)).toEqual([80, 80, 40]);
    expect(sliceCounts(2000, 8)).toEqual(Array.from({ length: 25 }, () => 80));
    expect(sliceCounts(100, 3)).toEqual([30, 30, 30, 10]);
    for (const [entities, partitions] of [
      [200, 8],
      [137, 5],
      [1000, 1],
      [101, 16],
    ] as const)
      expect(sliceCounts(entities, partitions).reduce((a, b) => a + b, 0)).toBe(entities);
  });
});
