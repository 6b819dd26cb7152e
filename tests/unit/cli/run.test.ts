import { jest } from "@jest/globals";
import { parseArgs, numberFlag, UsageError } from "../../../src/cli/args.js";
import { runCli } from "../../../src/cli/run.js";

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
});
