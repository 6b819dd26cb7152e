/**
 * The benchmark harness: every scenario gets a storage account (an embedded Azurite, or the account
 * named by AZURE_STORAGE_CONNECTION_STRING), measures the library against raw SDK calls in the same
 * run, and returns one flat JSON object. `npm run bench -- <scenario> --json` prints it as the last
 * line; without `--json` a readable summary is printed instead.
 */
import { cpus, totalmem } from "node:os";
import type { Flags } from "../src/cli/args.js";
import { startAzurite } from "../src/testing/index.js";

/** Parsed command line flags: `--name value` or `--flag`. */
export type BenchArgs = Flags;

/** What a scenario is given. */
export interface BenchContext {
  /** The account to run against. */
  readonly connectionString: string;
  /** True when the harness started an embedded Azurite. */
  readonly embedded: boolean;
  /** The scenario's own flags. */
  readonly args: BenchArgs;
  /** Progress for the person watching; goes to stderr so stdout stays machine-readable. */
  readonly log: (message: string) => void;
}

/** One benchmark scenario. */
export interface BenchScenario {
  readonly name: string;
  readonly description: string;
  run(context: BenchContext): Promise<Record<string, unknown>>;
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

/** Runs `scenario` against an embedded Azurite or the configured account. */
export async function runScenario(scenario: BenchScenario, args: BenchArgs): Promise<Record<string, unknown>> {
  const log = (message: string) => process.stderr.write(`[${scenario.name}] ${message}\n`);
  const configured = process.env.AZURE_STORAGE_CONNECTION_STRING;
  const azurite = configured ? undefined : await startAzurite();
  try {
    const connectionString = configured || azurite!.connectionString;
    log(
      configured
        ? "running against the account in AZURE_STORAGE_CONNECTION_STRING"
        : "running against an embedded Azurite",
    );
    const started = performance.now();
    const result = await scenario.run({ connectionString, embedded: !configured, args, log });
    return {
      scenario: scenario.name,
      target: configured ? "account" : "azurite",
      ...result,
      durationSec: round((performance.now() - started) / 1000, 1),
      machine: machine(),
    };
  } finally {
    await azurite?.stop();
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
