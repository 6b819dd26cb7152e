/**
 * Where the command line tool connects: `--connection-string`, else AZURE_STORAGE_CONNECTION_STRING,
 * else (with `--azurite`) an embedded Azurite started for this run.
 */
import { join } from "node:path";
import { UsageError, stringFlag, type Flags } from "./args.js";

/** A connection for one command run; `close()` stops an embedded Azurite. */
export interface Connection {
  readonly connectionString: string;
  readonly embedded: boolean;
  close(): Promise<void>;
}

/** Opens the connection the flags and environment ask for. */
export async function openConnection(flags: Flags): Promise<Connection> {
  const given = stringFlag(flags, "connection-string") ?? process.env.AZURE_STORAGE_CONNECTION_STRING;
  if (given) return { connectionString: given, embedded: false, close: async () => {} };
  if (flags["azurite"]) return openEmbeddedAzurite();
  throw new UsageError(
    "no storage account: pass --connection-string, set AZURE_STORAGE_CONNECTION_STRING, or add --azurite for an embedded emulator",
  );
}

/**
 * Starts an embedded Azurite (in memory, free ports) for this run. The `azurite` package is looked
 * up from the working directory's project, then from this tool's own location (a global install
 * beside it); without it, a usage error says what to install.
 */
export async function openEmbeddedAzurite(): Promise<Connection> {
  const { findAzuriteCli, startAzurite } = await import("../testing/azurite.js");
  const azuriteCliPath = findAzuriteCli([join(process.cwd(), "package.json"), import.meta.url]);
  if (azuriteCliPath === undefined) {
    throw new UsageError(
      "an embedded Azurite needs the azurite package: run `npm install --save-dev azurite`, or pass --connection-string <cs>",
    );
  }
  const azurite = await startAzurite({ azuriteCliPath });
  return { connectionString: azurite.connectionString, embedded: true, close: () => azurite.stop() };
}
