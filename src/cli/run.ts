/**
 * `azure-storage-concurrency <command> [...]`: the command line tool.
 *
 * Exit codes: 0 success; 1 the operation failed (the message says why); 2 usage error; 3 refused
 * because a confirmation flag was missing; 4 not found.
 */
import { redactSecrets } from "../errors.js";
import { parseArgs, UsageError } from "./args.js";
import { commands } from "./commands/index.js";

const NAME = "azure-storage-concurrency";

function overview(): string {
  const width = Math.max(8, ...commands.map((c) => c.name.length));
  return [
    `Usage: ${NAME} <command> [options]`,
    "",
    "Commands:",
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    "",
    "Connection (for commands that talk to storage): --connection-string <cs>, or",
    "AZURE_STORAGE_CONNECTION_STRING, or --azurite for an embedded emulator.",
    "",
    `Run \`${NAME} <command> --help\` for a command's options.`,
    "Exit codes: 0 success, 1 operation failed, 2 usage error, 3 confirmation missing, 4 not found.",
  ].join("\n");
}

/** Runs the tool with `argv` (without node and script); resolves with the exit code. */
export async function runCli(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  const out = (line: string) => void process.stdout.write(`${line}\n`);
  const progress = (line: string) => void process.stderr.write(`${line}\n`);
  if (!name || name === "--help" || name === "help") {
    out(overview());
    return name ? 0 : 2;
  }
  const command = commands.find((c) => c.name === name);
  try {
    if (!command) throw new UsageError(`unknown command "${name}"; run \`${NAME} --help\``);
    const { positional, flags } = parseArgs(rest);
    if (flags["help"]) {
      out(command.help);
      return 0;
    }
    return await command.run({ positional, argv: rest, flags, out, progress });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    progress(`${NAME}: ${redactSecrets(message.split("\n")[0]!)}`);
    return error instanceof UsageError ? 2 : 1;
  }
}
