/**
 * Where the command line tool connects: `--connection-string`, else AZURE_STORAGE_CONNECTION_STRING,
 * else (with `--azurite`) an embedded Azurite started for this run.
 */
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
  if (flags["azurite"]) {
    const { startAzurite } = await import("../testing/azurite.js");
    const azurite = await startAzurite();
    return { connectionString: azurite.connectionString, embedded: true, close: () => azurite.stop() };
  }
  throw new UsageError(
    "no storage account: pass --connection-string, set AZURE_STORAGE_CONNECTION_STRING, or add --azurite for an embedded emulator",
  );
}
