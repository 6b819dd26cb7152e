/**
 * The benchmark harness: every scenario gets a storage account (a fresh embedded Azurite, or the
 * account the command line names), measures the library against raw SDK calls in the same run, and
 * returns one flat JSON object. `azure-storage-concurrency bench <scenario> --json` (and
 * `npm run bench -- <scenario> --json` from source) prints it as the last line of stdout; progress
 * goes to stderr.
 */
import { cpus, totalmem } from "node:os";
import type { FlagSpec, Flags } from "../internal/args.js";

/** The storage a scenario runs on, opened for it by the command line (tools/cli/commands/bench.ts). */
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
  /**
   * Aborted when the scenario runs past its time limit: a scenario may check it between steps to
   * stop early; the harness stops waiting for it either way.
   */
  readonly abortSignal: AbortSignal;
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
  /**
   * How long the scenario may run with its default flags, in seconds, on a 2-core machine running
   * Azurite beside it (with headroom: several times what it takes there). A scenario that runs past
   * it ends with a clear message and a result that says so ({@link ScenarioFailure}), and `bench
   * all` goes on with the others. `bench --time-limit <s>` sets another limit for every scenario.
   * @default 300
   */
  readonly timeLimitInSec?: number;
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

/**
 * What a scenario that did not finish reports instead of its figures: `error` says why in one line
 * (the time limit it ran past, or the error it failed with).
 */
interface ScenarioFailure {
  readonly scenario: string;
  readonly target: "azurite" | "account";
  readonly error: string;
  /** True when the scenario ran past its time limit. */
  readonly timedOut: boolean;
  readonly timeLimitSec: number;
  readonly durationSec: number;
  readonly machine: ReturnType<typeof machine>;
}

/** A scenario's time limit in seconds: its own, or 300. */
export const timeLimitOf = (scenario: { readonly timeLimitInSec?: number | undefined }): number =>
  scenario.timeLimitInSec ?? 300;

/** How long a scenario that ran past its limit gets to clean up (kill its workers, delete its containers). */
const CLEAN_UP_GRACE_IN_MS = 15_000;

/** How to run a scenario: the storage, where progress goes, and the time limit. */
interface RunOptions {
  /** Opens the storage the scenario runs on (closed after it). */
  readonly connect: () => Promise<BenchStorage>;
  readonly progress: (line: string) => void;
  /** Replaces the scenario's own {@link BenchScenario.timeLimitInSec}. */
  readonly timeLimitInSec?: number | undefined;
}

/**
 * Runs `scenario` on the storage that `connect()` opens for it (and closes after it), within its time
 * limit. A scenario that runs past it is told (its `abortSignal`), given {@link CLEAN_UP_GRACE_IN_MS}
 * to clean up after its storage is closed, and reported as a {@link ScenarioFailure}; one that fails
 * with an error throws it.
 */
export async function runScenario<Sdks>(
  scenario: BenchScenario<Sdks>,
  sdks: Sdks,
  args: Flags,
  { connect, progress, timeLimitInSec = timeLimitOf(scenario) }: RunOptions,
): Promise<Record<string, unknown>> {
  const log = (message: string) => progress(`[${scenario.name}] ${message}`);
  const connection = await connect();
  const target = connection.embedded ? "azurite" : "account";
  const limit = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await connection.close();
  };
  const started = performance.now();
  const seconds = () => round((performance.now() - started) / 1000, 1);
  try {
    log(connection.embedded ? "running against an embedded Azurite" : "running against the given account");
    const running = scenario.run(
      {
        connectionString: connection.connectionString,
        embedded: connection.embedded,
        args,
        log,
        abortSignal: limit.signal,
      },
      sdks,
    );
    const timedOut = new Promise<"timed out">((resolve) => {
      timer = setTimeout(() => resolve("timed out"), timeLimitInSec * 1000);
    });
    const outcome = await Promise.race([running, timedOut]);
    if (outcome === "timed out") {
      const error = `ran past its time limit of ${timeLimitInSec} s and was stopped; its figures are left out`;
      log(error);
      limit.abort(new Error(`${scenario.name} ${error}`));
      // Closing the storage makes the scenario's pending requests fail, so that it gets to its own
      // clean-up (its `finally` blocks kill its worker processes); it gets a grace period for that.
      await close();
      const settled = running.then(
        () => undefined,
        () => undefined,
      );
      await Promise.race([settled, new Promise((resolve) => setTimeout(resolve, CLEAN_UP_GRACE_IN_MS).unref())]);
      const failure: ScenarioFailure = {
        scenario: scenario.name,
        target,
        error,
        timedOut: true,
        timeLimitSec: timeLimitInSec,
        durationSec: seconds(),
        machine: machine(),
      };
      return { ...failure };
    }
    const durationSec = seconds();
    log(`done in ${durationSec} s`);
    return { scenario: scenario.name, target, ...outcome, durationSec, machine: machine() };
  } finally {
    clearTimeout(timer);
    await close();
  }
}

/** The {@link ScenarioFailure} of a scenario that failed with `error` after `durationSec`. */
export function failedScenario(
  scenario: BenchScenario,
  target: "azurite" | "account",
  error: string,
  durationSec: number,
): ScenarioFailure {
  return {
    scenario: scenario.name,
    target,
    error,
    timedOut: false,
    timeLimitSec: timeLimitOf(scenario),
    durationSec,
    machine: machine(),
  };
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
