/**
 * The one command line parser of the command line tool and the benchmarks, over Node's
 * `util.parseArgs`: every command declares its flags and their types, and anything else is a usage
 * error (exit code 2). A boolean flag never takes the next word as its value, so
 * `lock break --yes locks nightly-report` means the same as `lock break locks nightly-report --yes`;
 * flags may come before, between or after the positionals. `--name value` and `--name=value` are
 * the same; a value that starts with a dash must be written `--name=-1`.
 */
import { parseArgs } from "node:util";

/** A usage mistake: printed as one line, exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/**
 * Whether a command line word may be a secret: it carries a connection string's, a SAS's or a
 * token's marker (`AccountKey=`, `SharedAccessSignature=`, `sig=`, `Bearer `, a JWT), or a run of
 * 32 or more characters of the base64 / base64url alphabet mixing upper case, lower case and digits,
 * as an account key (88 characters), a SAS signature (44) or a Microsoft Entra client secret (40)
 * does. Names people choose (containers, shares, scenario names, file names) rarely do.
 */
export function mayBeSecret(value: string): boolean {
  if (/(?:AccountKey|SharedAccessSignature|sig|signature)\s*(?:=|%3D)|\bBearer\s|eyJ[A-Za-z0-9_-]{8,}\./i.test(value))
    return true;
  for (const run of value.match(/[A-Za-z0-9+/=~._-]{32,}/g) ?? []) {
    if (/[A-Z]/.test(run) && /[a-z]/.test(run) && /[0-9]/.test(run)) return true;
  }
  return false;
}

/**
 * A command line word as a message quotes it: in full (JSON-quoted, so control characters are
 * escaped) when it cannot be a secret, else only its length. A key pasted in the wrong place (as
 * `--account-name`, as a container name, as a stray word) must not reach a terminal, a CI log or a
 * bug report: no message of the tool echoes a word in any other way.
 */
export function shownArgument(value: string): string {
  return mayBeSecret(value) ? `(${value.length} characters, not shown: it may be a secret)` : JSON.stringify(value);
}

/** The flags a command accepts, by long name (without the dashes). */
export type FlagSpec = Readonly<
  Record<string, { readonly type: "string" | "boolean"; readonly short?: string | undefined }>
>;

/** Parsed flags: a string flag's value, `true` for a boolean flag given, absent when not given. */
export type Flags = Readonly<Record<string, string | boolean | undefined>>;

/** The words of a command line, split by {@link parseCommandLine}. */
interface ParsedCommandLine {
  readonly positional: readonly string[];
  readonly flags: Flags;
}

/**
 * The known word closest to a typo (`--duraton` -> `--duration`, `brake` -> `break`), if one is
 * close: edit distance with a swap of two neighbours counted as one edit (optimal string alignment),
 * at most one edit per three characters, rounded (at least one).
 */
function closest(name: string, known: readonly string[]): string | undefined {
  const distance = (a: string, b: string) => {
    const d = Array.from({ length: a.length + 1 }, (_, i) =>
      Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
    );
    for (let i = 1; i <= a.length; i++) {
      for (let j = 1; j <= b.length; j++) {
        const cost = a[i - 1] === b[j - 1] ? 0 : 1;
        let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
        if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
          best = Math.min(best, d[i - 2]![j - 2]! + 1);
        d[i]![j] = best;
      }
    }
    return d[a.length]![b.length]!;
  };
  const best = known.map((candidate) => ({ candidate, d: distance(name, candidate) })).sort((x, y) => x.d - y.d)[0];
  return best && best.d <= Math.max(1, Math.round(name.length / 3)) ? best.candidate : undefined;
}

/**
 * `" (did you mean X?)"` when a mistyped word (a command, an action, a scenario, a design) is close
 * to one of `known`, else `""`. A word that may be a secret gets no suggestion (it is not quoted).
 */
export function didYouMean(word: string, known: readonly string[]): string {
  if (mayBeSecret(word)) return "";
  const suggestion = closest(word, known);
  return suggestion === undefined || suggestion === word ? "" : ` (did you mean ${suggestion}?)`;
}

/**
 * Splits `argv` into positionals and the flags of `spec`, strictly: an unknown flag, a string flag
 * without a value, or a value given to a boolean flag is a {@link UsageError}. `command` names the
 * command in messages (`lock`; empty for the tool itself).
 */
export function parseCommandLine(argv: readonly string[], spec: FlagSpec, command: string): ParsedCommandLine {
  const { tokens } = parseArgs({
    args: [...argv],
    options: spec,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const positional: string[] = [];
  const flags: Record<string, string | boolean> = {};
  for (const token of tokens) {
    if (token.kind === "positional") positional.push(token.value);
    if (token.kind !== "option") continue;
    const option = spec[token.name];
    if (!option) {
      const suggestion = closest(token.name, Object.keys(spec));
      throw new UsageError(
        `unknown flag ${mayBeSecret(token.rawName) ? shownArgument(token.rawName) : token.rawName}${command ? ` for ${command}` : ""}${suggestion ? ` (did you mean --${suggestion}?)` : ""}; ` +
          `run \`azure-storage-concurrency ${command ? `${command} ` : ""}--help\``,
      );
    }
    if (option.type === "boolean") {
      if (token.value !== undefined) throw new UsageError(`--${token.name} takes no value, got ${token.rawName}=…`);
      flags[token.name] = true;
      continue;
    }
    // util.parseArgs gives a string flag the next word whatever it is; a word that is itself a flag
    // means the value was forgotten (`--out --json`).
    if (token.value === undefined || (token.inlineValue === false && token.value.startsWith("-"))) {
      throw new UsageError(
        `--${token.name} needs a value${token.value === undefined ? "" : ` (got ${shownArgument(token.value)}; a value starting with a dash is written --${token.name}=${mayBeSecret(token.value) ? "<value>" : token.value})`}`,
      );
    }
    flags[token.name] = token.value;
  }
  return { positional, flags };
}

/** A string flag, or `fallback`. */
export function stringFlag(flags: Flags, name: string, fallback?: string): string | undefined {
  const value = flags[name];
  if (value === undefined) return fallback;
  if (typeof value !== "string") throw new UsageError(`--${name} needs a value`);
  return value;
}

/** A numeric flag, or `fallback`; `min` is checked. */
export function numberFlag(flags: Flags, name: string, fallback: number, min = -Infinity): number {
  const value = flags[name];
  if (value === undefined) return fallback;
  const parsed = typeof value === "string" && value.trim() !== "" ? Number(value) : Number.NaN;
  if (!Number.isFinite(parsed) || parsed < min) {
    throw new UsageError(
      `--${name} must be a number${min > -Infinity ? ` of at least ${min}` : ""}, got ${typeof value === "string" ? shownArgument(value) : "no value"}`,
    );
  }
  return parsed;
}

/** A comma-separated list of positive numbers (`--writers 2,4,8`), or `fallback`. */
export function numberListFlag(flags: Flags, name: string, fallback: readonly number[]): number[] {
  const value = stringFlag(flags, name);
  if (value === undefined) return [...fallback];
  return value.split(",").map((part) => {
    const parsed = part.trim() === "" ? Number.NaN : Number(part);
    if (!Number.isFinite(parsed) || parsed <= 0)
      throw new UsageError(`--${name} takes positive numbers, got ${shownArgument(part)}`);
    return parsed;
  });
}
