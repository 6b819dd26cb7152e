/**
 * The benchmark harness: every scenario gets a storage account (a fresh embedded Azurite, or the
 * account the command line names), measures the library against raw SDK calls in the same run, and
 * returns one flat JSON object. `azure-storage-concurrency bench <scenario> --json` (and
 * `npm run bench -- <scenario> --json` from source) prints it as the last line of stdout; progress
 * goes to stderr.
 */
import { cpus, totalmem } from "node:os";
import type { FlagSpec, Flags } from "../internal/args.js";

/** The storage a scenario runs on, opened for it by the command line (src/cli/commands/bench.ts). */
interface BenchStorage {
  readonly connectionString: string;
  /** True for an embedded Azurite started for this scenario. */
  readonly embedded: boolean;
  /** Stops an embedded Azurite; nothing for an account. */
  close(): Promise<void>;
}

/** A storage service a scenario talks to (its endpoint must be in an account's connection string). */
type BenchService = "blob" | "queue" | "table" | "file";

/** What a scenario is given. */
interface BenchContext {
  /** The account to run against. */
  readonly connectionString: string;
  /** True when the harness started an embedded Azurite. */
  readonly embedded: boolean;
  /** The command line's flags (the scenario reads its own). */
  readonly args: Flags;
  /** Progress for the person watching; goes to stderr so stdout stays machine-readable. */
  readonly log: (message: string) => void;
}

/**
 * One benchmark scenario. Its Azure SDKs are loaded by {@link BenchScenario.loadSdks} (through the
 * command line's `importSdk`, so that `bench --help` works without them and a missing one is one
 * clear line) and handed to {@link BenchScenario.run}.
 */
export interface BenchScenario<Sdks = unknown> {
  readonly name: string;
  /** One line for `bench --help`. */
  readonly description: string;
  /** The scenario's own flags for `bench --help`: usage (`--writers <list>`) to meaning and default. */
  readonly flags: Readonly<Record<string, string>>;
  /** The services it uses on an account (on Azurite, `file` is the library's Files responder). */
  readonly services: readonly BenchService[];
  loadSdks(): Promise<Sdks>;
  run(context: BenchContext, sdks: Sdks): Promise<Record<string, unknown>>;
}

/** The names of a scenario's flags, without the dashes (`writers`). */
export function flagNames(scenario: BenchScenario): string[] {
  return Object.keys(scenario.flags).map((usage) => /^--([\w-]+)/.exec(usage)![1]!);
}

/** A scenario's flags for the parser: `--writers <list>` takes a value, a bare `--name` is a boolean. */
export function flagSpec(scenario: BenchScenario): FlagSpec {
  return Object.fromEntries(
    Object.keys(scenario.flags).map((usage) => {
      const [, name, value] = /^--([\w-]+)(\s+<)?/.exec(usage)!;
      return [name!, { type: value ? ("string" as const) : ("boolean" as const) }];
    }),
  );
}

/** The machine a result was measured on, for reports. */
export function machine() {
  return {
    node: process.version,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? "unknown",
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    platform: `${process.platform}-${process.arch}`,
  };
}

/** Runs `scenario` on the storage that `connect()` opens for it (and closes after it). */
export async function runScenario<Sdks>(
  scenario: BenchScenario<Sdks>,
  sdks: Sdks,
  args: Flags,
  connect: () => Promise<BenchStorage>,
  progress: (line: string) => void,
): Promise<Record<string, unknown>> {
  const log = (message: string) => progress(`[${scenario.name}] ${message}`);
  const connection = await connect();
  try {
    log(connection.embedded ? "running against an embedded Azurite" : "running against the given account");
    const started = performance.now();
    const result = await scenario.run(
      { connectionString: connection.connectionString, embedded: connection.embedded, args, log },
      sdks,
    );
    const durationSec = round((performance.now() - started) / 1000, 1);
    log(`done in ${durationSec} s`);
    return {
      scenario: scenario.name,
      target: connection.embedded ? "azurite" : "account",
      ...result,
      durationSec,
      machine: machine(),
    };
  } finally {
    await connection.close();
  }
}

/** Rounds to `digits` decimals. */
export function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** The median of a list of numbers (NaN when empty). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
