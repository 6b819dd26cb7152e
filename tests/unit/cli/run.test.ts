import { readFileSync } from "node:fs";
import { jest } from "@jest/globals";
import { runCli } from "../../../tools/cli/run.js";
import { flagNames } from "../../../tools/bench/harness.js";
import { scenarios } from "../../../tools/bench/scenarios/index.js";

async function capture(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const o = jest.spyOn(process.stdout, "write").mockImplementation((s) => (out.push(String(s)), true));
  const e = jest.spyOn(process.stderr, "write").mockImplementation((s) => (err.push(String(s)), true));
  try {
    const code = await runCli(argv);
    return { code, out: out.join(""), err: err.join("") };
  } finally {
    o.mockRestore();
    e.mockRestore();
  }
}

const { version } = JSON.parse(readFileSync("package.json", "utf8")) as { version: string };

describe("command line tool", () => {
  it("prints the overview with exit code 2 when no command is given, 0 for --help, -h and help", async () => {
    expect((await capture()).code).toBe(2);
    for (const help of [["--help"], ["-h"], ["help"]]) {
      const run = await capture(...help);
      expect(run.code).toBe(0);
      expect(run.out).toMatch(/^Usage: azure-storage-concurrency <command>/);
      expect(run.out).toMatch(/Exit codes: 0 success/);
    }
  });

  it("prints its version for --version and -V, alone or after a command", async () => {
    for (const argv of [["--version"], ["-V"], ["lock", "--version"], ["stress", "-V"]]) {
      expect(await capture(...argv)).toEqual({ code: 0, out: `${version}\n`, err: "" });
    }
  });

  it("prints a command's help for --help and -h wherever they stand", async () => {
    for (const argv of [
      ["lock", "--help"],
      ["lock", "show", "-h"],
      ["-h", "lock"],
      ["help", "lock"],
    ]) {
      const run = await capture(...argv);
      expect(run.code).toBe(0);
      expect(run.out).toMatch(/^Usage:\n {2}azure-storage-concurrency lock list/);
    }
  });

  it("reports an unknown command, or flags before the command, as one line on stderr, exit code 2", async () => {
    expect(await capture("frobnicate")).toEqual({
      code: 2,
      out: "",
      err: 'azure-storage-concurrency: unknown command "frobnicate"; run `azure-storage-concurrency --help`\n',
    });
    const early = await capture("--connection-string", "AccountKey=c2VjcmV0", "lock", "list", "locks");
    expect(early.code).toBe(2);
    expect(early.err).toBe(
      "azure-storage-concurrency: the command comes first: `azure-storage-concurrency lock [flags and arguments]`\n",
    );
  });

  it.each([
    [["lock", "list", "locks", "--jsn"], /unknown flag --jsn for lock \(did you mean --json\?\)/],
    [["lock", "show", "--file"], /--file needs a value/],
    [["lock", "frob", "locks"], /lock needs an action: list, show or break, got "frob"/],
    [["lock", "list", "locks", "--yes"], /--yes does not apply to lock list/],
    [["stress", "--duraton", "1"], /unknown flag --duraton for stress \(did you mean --duration\?\)/],
    [["stress", "extra"], /unexpected argument "extra"/],
    [["stress", "--use-env", "--azurite"], /--azurite runs on an embedded emulator: leave out --use-env/],
    [["bench", "retry", "--rouds", "1"], /unknown flag --rouds for bench \(did you mean --rounds\?\)/],
  ])("%p is a usage error (exit code 2) before anything starts", async (argv, message) => {
    const run = await capture(...argv);
    expect(run.code).toBe(2);
    expect(run.out).toBe("");
    expect(run.err).toMatch(message);
    expect(run.err.trimEnd().split("\n")).toHaveLength(1);
  });

  it("lists every benchmark scenario and its flags in `bench --help`", async () => {
    const { code, out: help } = await capture("bench", "--help");
    expect(code).toBe(0);
    expect(help).toMatch(/^Usage: azure-storage-concurrency bench <scenario\[,scenario\.\.\.\]\|all>/);
    expect(Object.keys(scenarios)).toEqual([
      "retry",
      "files",
      "lock",
      "semaphore",
      "batch",
      "queue",
      "inbox",
      "messages",
      "optimistic",
      "throttling",
      "schedule",
    ]);
    for (const scenario of Object.values(scenarios)) {
      expect(help).toMatch(new RegExp(`^  ${scenario.name} +\\S`, "m"));
      for (const flag of flagNames(scenario)) expect(help).toMatch(new RegExp(`^ +--${flag} `, "m"));
    }
    expect(help).toMatch(/Exit codes: 0 done, 1 a scenario failed, 2 usage/);
  });

  it("refuses a bench run with an unknown scenario or flag in one line, exit code 2, before starting anything", async () => {
    const runs = [
      await capture("bench", "zigzag"),
      await capture("bench", "retry", "--processes", "2"),
      await capture("bench", "all", "--report", "report.html"),
      await capture("bench"),
    ];
    expect(runs.map((r) => r.code)).toEqual([2, 2, 2, 2]);
    expect(runs.map((r) => r.out)).toEqual(["", "", "", ""]);
    expect(runs.map((r) => r.err)).toEqual([
      'azure-storage-concurrency: unknown scenario "zigzag"; choose from retry, files, lock, semaphore, batch, queue, inbox, messages, optimistic, throttling, schedule, or all\n',
      "azure-storage-concurrency: unknown flag --processes for bench retry; retry's flags: --writers, --increments, --round-trip-ms, --rounds (see `bench --help`)\n",
      'azure-storage-concurrency: --report takes a Markdown file name ending in .md, got "report.html"\n',
      "azure-storage-concurrency: bench needs a scenario or all; run `azure-storage-concurrency bench --help`\n",
    ]);
  });
});
