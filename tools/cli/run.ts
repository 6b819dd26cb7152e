/**
 * `azure-storage-concurrency <command> [...]`: the command line tool.
 *
 * Every command's command line goes through one strict parser (../internal/args.ts) with the flags
 * the command declares, plus `--help` (`-h`) and `--version` (`-V`); anything else is a usage error.
 *
 * Exit codes: 0 success; 1 the operation failed (the message says why); 2 usage error; 3 refused
 * because a confirmation flag was missing; 4 not found.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { didYouMean, parseCommandLine, shownArgument, UsageError, type FlagSpec } from "../internal/args.js";
import { locatePackage } from "../internal/package-root.js";
import { commands } from "./commands/index.js";
import { explain } from "./explain.js";

const NAME = "azure-storage-concurrency";

/** Flags every command accepts. */
const GLOBAL_FLAGS: FlagSpec = {
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "V" },
};

function overview(): string {
  const width = Math.max(8, ...commands.map((c) => c.name.length));
  return [
    `Usage: ${NAME} <command> [options]`,
    `       ${NAME} --version | --help`,
    "",
    "Commands:",
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    "",
    "Storage: `lock` and `semaphore` act on AZURE_STORAGE_CONNECTION_STRING (or --connection-string, or Microsoft Entra",
    "ID with --account-name); `stress` and `bench` run on an embedded Azurite unless --use-env or",
    "--connection-string names an account. Each says on its first line which account it acts on.",
    "",
    `Run \`${NAME} <command> --help\` for a command's options. Flags may come before, between or`,
    "after the other words; `-h` is --help, `-V` is --version.",
    "Exit codes: 0 success, 1 operation failed, 2 usage error, 3 confirmation missing, 4 not found.",
  ].join("\n");
}

const commandNames = () => commands.map((c) => c.name);

/** This package's version, from its package.json. */
function version(): string {
  const { root } = locatePackage(import.meta.url);
  return (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string }).version;
}

/** Runs the tool with `argv` (without node and script); resolves with the exit code. */
export async function runCli(argv: readonly string[]): Promise<number> {
  const out = (line: string) => void process.stdout.write(`${line}\n`);
  const progress = (line: string) => void process.stderr.write(`${line}\n`);
  try {
    const [name, ...rest] = argv;
    if (name === undefined || name === "help" || name.startsWith("-")) {
      const named = commands.find((c) => argv.includes(c.name));
      // Not echoed: the words may hold a connection string.
      if (named && name !== "help" && !argv.some((word) => /^-(h|V|-help|-version)$/.test(word)))
        throw new UsageError(`the command comes first: \`${NAME} ${named.name} [flags and arguments]\``);
      const { positional, flags } = parseCommandLine(argv, GLOBAL_FLAGS, "");
      if (flags["version"]) {
        out(version());
        return 0;
      }
      if (flags["help"] || positional[0] === "help") {
        out(named?.help ?? overview());
        return 0;
      }
      if (positional.length > 0)
        throw new UsageError(
          `unknown command ${shownArgument(positional[0]!)}${didYouMean(positional[0]!, commandNames())}; run \`${NAME} --help\``,
        );
      out(overview());
      return 2;
    }
    const command = commands.find((c) => c.name === name);
    if (!command)
      throw new UsageError(
        `unknown command ${shownArgument(name)}${didYouMean(name, commandNames())}; run \`${NAME} --help\``,
      );
    const { positional, flags } = parseCommandLine(rest, { ...command.flags, ...GLOBAL_FLAGS }, command.name);
    if (flags["help"]) {
      out(command.help);
      return 0;
    }
    if (flags["version"]) {
      out(version());
      return 0;
    }
    const { help: _help, version: _version, ...own } = flags;
    return await command.run({ positional, argv: rest, flags: own, out, progress });
  } catch (error) {
    progress(`${NAME}: ${explain(error)}`);
    return error instanceof UsageError ? 2 : 1;
  }
}
