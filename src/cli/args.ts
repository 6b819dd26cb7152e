/**
 * A small argument parser for the command line tool and the benchmarks: positionals, `--name value`,
 * `--name=value` and bare `--flag`.
 */

/** Parsed flags. */
export type Flags = Readonly<Record<string, string | boolean>>;

/** Splits argv into positionals and flags. */
export function parseArgs(argv: readonly string[]): { positional: string[]; flags: Record<string, string | boolean> } {
  const positional: string[] = [];
  const flags: Record<string, string | boolean> = {};
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (!token.startsWith("--") || token === "--") {
      if (token !== "--") positional.push(token);
      continue;
    }
    const eq = token.indexOf("=");
    const name = token.slice(2, eq < 0 ? undefined : eq);
    const next = argv[i + 1];
    if (eq >= 0) flags[name] = token.slice(eq + 1);
    else if (next !== undefined && !next.startsWith("--")) {
      flags[name] = next;
      i++;
    } else flags[name] = true;
  }
  return { positional, flags };
}

/** A usage mistake: printed as one line, exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** A string flag, or `fallback`. */
export function stringFlag(flags: Flags, name: string, fallback?: string): string | undefined {
  const value = flags[name];
  if (value === undefined) return fallback;
  if (value === true) throw new UsageError(`--${name} needs a value`);
  return value as string;
}

/** A numeric flag, or `fallback`; `min` is checked. */
export function numberFlag(flags: Flags, name: string, fallback: number, min = -Infinity): number {
  const value = flags[name];
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (value === true || !Number.isFinite(parsed) || parsed < min) {
    throw new UsageError(
      `--${name} must be a number${min > -Infinity ? ` of at least ${min}` : ""}, got ${String(value)}`,
    );
  }
  return parsed;
}

/** A comma-separated list of positive numbers (`--writers 2,4,8`), or `fallback`. */
export function numberListFlag(flags: Flags, name: string, fallback: readonly number[]): number[] {
  const value = flags[name];
  if (value === undefined) return [...fallback];
  return String(value)
    .split(",")
    .map((part) => {
      const parsed = Number(part);
      if (!Number.isFinite(parsed) || parsed <= 0)
        throw new UsageError(`--${name} takes positive numbers, got ${part}`);
      return parsed;
    });
}
