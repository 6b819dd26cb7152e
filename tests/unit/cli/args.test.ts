/** The one strict command line parser (src/internal/args.ts), with each command's own flags. */
import { numberFlag, parseCommandLine, UsageError } from "../../../tools/internal/args.js";
import { benchCommand } from "../../../tools/cli/commands/bench.js";
import { lockCommand } from "../../../tools/cli/commands/lock.js";
import { stressCommand } from "../../../tools/cli/commands/stress.js";

/** Every order of one flag among the positionals: before, between each, after. */
function everywhere(positional: readonly string[], flag: readonly string[]): string[][] {
  return Array.from({ length: positional.length + 1 }, (_, at) => [
    ...positional.slice(0, at),
    ...flag,
    ...positional.slice(at),
  ]);
}

describe("the command line parser", () => {
  it("lock: a boolean flag never takes the next word, wherever it stands", () => {
    // The defect: `lock break --yes locks nightly-report` read `locks` as the value of --yes.
    for (const argv of everywhere(["break", "locks", "nightly-report"], ["--yes"])) {
      expect(parseCommandLine(argv, lockCommand.flags, "lock")).toEqual({
        positional: ["break", "locks", "nightly-report"],
        flags: { yes: true },
      });
    }
    for (const argv of everywhere(["show", "locks", "leader"], ["--json"])) {
      expect(parseCommandLine(argv, lockCommand.flags, "lock").positional).toEqual(["show", "locks", "leader"]);
    }
    for (const argv of everywhere(["list", "locks"], ["--prefix", "jobs/"])) {
      expect(parseCommandLine(argv, lockCommand.flags, "lock")).toEqual({
        positional: ["list", "locks"],
        flags: { prefix: "jobs/" },
      });
    }
  });

  it("stress: flags in any order mean the same, and it takes no positionals", () => {
    const expected = { positional: [], flags: { json: true, duration: "1", designs: "single" } };
    for (const argv of [
      ["--json", "--duration", "1", "--designs=single"],
      ["--duration=1", "--designs", "single", "--json"],
      ["--designs", "single", "--json", "--duration", "1"],
    ]) {
      const parsed = parseCommandLine(argv, stressCommand.flags, "stress");
      expect(parsed.positional).toEqual(expected.positional);
      expect({ ...parsed.flags }).toEqual(expected.flags);
    }
  });

  it("bench: flags before, between and after the scenario mean the same", () => {
    for (const argv of everywhere(["retry"], ["--json"])) {
      expect(parseCommandLine([...argv, "--rounds", "1"], benchCommand.flags, "bench")).toEqual({
        positional: ["retry"],
        flags: { json: true, rounds: "1" },
      });
    }
    for (const argv of everywhere(["retry"], ["--writers", "1,2"])) {
      expect(parseCommandLine(argv, benchCommand.flags, "bench")).toEqual({
        positional: ["retry"],
        flags: { writers: "1,2" },
      });
    }
  });

  it.each([
    [lockCommand, ["list", "locks", "--jsn"], /^unknown flag --jsn for lock \(did you mean --json\?\)/],
    [stressCommand, ["--duraton", "1"], /^unknown flag --duraton for stress \(did you mean --duration\?\)/],
    [benchCommand, ["retry", "--rouds", "1"], /^unknown flag --rouds for bench \(did you mean --rounds\?\)/],
    [lockCommand, ["break", "locks", "x", "--yes=no"], /^--yes takes no value/],
    [stressCommand, ["--out"], /^--out needs a value$/],
    [
      stressCommand,
      ["--out", "--json"],
      /^--out needs a value \(got "--json"; a value starting with a dash is written --out=--json\)/,
    ],
    [lockCommand, ["show", "-x"], /^unknown flag -x for lock/],
  ])("%# refuses a typo or a misused flag as a usage error", (command, argv, message) => {
    expect(() => parseCommandLine(argv, command.flags, command.name)).toThrow(UsageError);
    expect(() => parseCommandLine(argv, command.flags, command.name)).toThrow(message);
  });

  it("reads numbers strictly", () => {
    expect(numberFlag({ n: "3" }, "n", 1)).toBe(3);
    expect(numberFlag({}, "n", 7)).toBe(7);
    for (const value of ["abc", "", " ", "1x"]) expect(() => numberFlag({ n: value }, "n", 1)).toThrow(UsageError);
    expect(() => numberFlag({ n: "0" }, "n", 1, 1)).toThrow(/--n must be a number of at least 1, got "0"/);
  });
});
