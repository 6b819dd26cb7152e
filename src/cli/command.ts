import type { Flags } from "./args.js";

/** What a subcommand is given. */
export interface CommandContext {
  /** Positionals after the subcommand's name. */
  readonly positional: readonly string[];
  /** Every argument after the subcommand's name, as typed (for records of the command line). */
  readonly argv: readonly string[];
  readonly flags: Flags;
  /** Writes a line to stdout (results). */
  readonly out: (line: string) => void;
  /** Writes a line to stderr (progress). */
  readonly progress: (line: string) => void;
}

/** A subcommand of the command line tool. */
export interface Command {
  /** The word that selects it, e.g. `lock`. */
  readonly name: string;
  /** One line for the command list. */
  readonly summary: string;
  /** The full `--help` text. */
  readonly help: string;
  /** Runs it; resolves with the exit code. */
  run(context: CommandContext): Promise<number>;
}
