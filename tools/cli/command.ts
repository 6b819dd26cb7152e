import type { FlagSpec, Flags } from "../internal/args.js";

/** What a subcommand is given. */
export interface CommandContext {
  /** Positionals after the subcommand's name. */
  readonly positional: readonly string[];
  /** Every argument after the subcommand's name, as typed (for records of the command line: redact before keeping). */
  readonly argv: readonly string[];
  /** The flags, parsed by the command's {@link Command.flags}. */
  readonly flags: Flags;
  /** Writes a line to stdout (results). */
  readonly out: (line: string) => void;
  /** Writes a line to stderr (the target, progress). */
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
  /** Every flag it accepts (`--help` and `--version` are added for all); any other is a usage error. */
  readonly flags: FlagSpec;
  /** Runs it; resolves with the exit code. */
  run(context: CommandContext): Promise<number>;
}
