import { jest } from "@jest/globals";
import { parseArgs, numberFlag, UsageError } from "../../../src/cli/args.js";
import { runCli } from "../../../src/cli/run.js";
import { flagNames } from "../../../src/bench/harness.js";
import { scenarios } from "../../../src/bench/scenarios/index.js";

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  const o = jest.spyOn(process.stdout, "write").mockImplementation((s) => (out.push(String(s)), true));
  const e = jest.spyOn(process.stderr, "write").mockImplementation((s) => (err.push(String(s)), true));
  return { out, err, restore: () => (o.mockRestore(), e.mockRestore()) };
}

describe("command line tool", () => {
  it("prints the overview with exit code 2 when no command is given, 0 for --help", async () => {
    const c = capture();
    try {
      expect(await runCli([])).toBe(2);
      expect(await runCli(["--help"])).toBe(0);
    } finally {
      c.restore();
    }
    expect(c.out.join("")).toMatch(/Usage: azure-storage-concurrency <command>/);
    expect(c.out.join("")).toMatch(/Exit codes: 0 success/);
  });

  it("reports an unknown command as one line on stderr, exit code 2", async () => {
    const c = capture();
    try {
      expect(await runCli(["frobnicate"])).toBe(2);
    } finally {
      c.restore();
    }
    expect(c.err).toEqual([
      'azure-storage-concurrency: unknown command "frobnicate"; run `azure-storage-concurrency --help`\n',
    ]);
  });

  it("parses positionals, --name value, --name=value and bare flags", () => {
    expect(parseArgs(["lock", "show", "--container", "locks", "--yes", "--n=3", "x"])).toEqual({
      positional: ["lock", "show", "x"],
      flags: { container: "locks", yes: true, n: "3" },
    });
    expect(() => numberFlag({ n: "abc" }, "n", 1)).toThrow(UsageError);
    expect(numberFlag({}, "n", 7)).toBe(7);
  });

  it("lists every benchmark scenario and its flags in `bench --help`", async () => {
    const c = capture();
    try {
      expect(await runCli(["bench", "--help"])).toBe(0);
    } finally {
      c.restore();
    }
    const help = c.out.join("");
    expect(help).toMatch(/^Usage: azure-storage-concurrency bench <scenario\|all>/);
    expect(Object.keys(scenarios)).toEqual(["retry", "files", "lock", "batch", "queue", "optimistic"]);
    for (const scenario of Object.values(scenarios)) {
      expect(help).toMatch(new RegExp(`^  ${scenario.name} +\\S`, "m"));
      for (const flag of flagNames(scenario)) expect(help).toMatch(new RegExp(`^ +--${flag} `, "m"));
    }
    expect(help).toMatch(/Exit codes: 0 done, 1 a scenario failed, 2 usage/);
  });

  it("refuses a bench run with an unknown scenario or flag in one line, exit code 2, before starting anything", async () => {
    const c = capture();
    try {
      expect(await runCli(["bench", "zigzag"])).toBe(2);
      expect(await runCli(["bench", "retry", "--writrs", "2"])).toBe(2);
      expect(await runCli(["bench", "all", "--report", "report.html"])).toBe(2);
      expect(await runCli(["bench"])).toBe(2);
    } finally {
      c.restore();
    }
    expect(c.out).toEqual([]);
    expect(c.err).toEqual([
      'azure-storage-concurrency: unknown scenario "zigzag"; choose from retry, files, lock, batch, queue, optimistic, or all\n',
      "azure-storage-concurrency: unknown flag --writrs; retry's flags: --writers, --increments, --rounds (see `bench --help`)\n",
      "azure-storage-concurrency: --report takes a Markdown file name ending in .md, got report.html\n",
      "azure-storage-concurrency: bench needs a scenario or all; run `azure-storage-concurrency bench --help`\n",
    ]);
  });
});
