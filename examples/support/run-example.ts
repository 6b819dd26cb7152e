/**
 * How every example runs: against the account in AZURE_STORAGE_CONNECTION_STRING when it is set,
 * otherwise against an embedded Azurite that is started for the example and stopped after it.
 */
import { pathToFileURL } from "node:url";
import { startAzurite, type RunningAzurite } from "azure-storage-concurrency/testing";

/** What an example's `main` is given. */
export interface ExampleContext {
  /** The account to use. */
  readonly connectionString: string;
  /** The embedded Azurite, when no account was configured (examples that inject faults need it). */
  readonly azurite: RunningAzurite | undefined;
  /** Prints a line of the example's story. */
  readonly log: (message: string) => void;
}

/** An example: a title and a `main`. */
export interface Example {
  readonly title: string;
  main(context: ExampleContext): Promise<void>;
}

/** Gives an example its storage: the configured account, or a fresh embedded Azurite. */
export async function withStorage<T>(run: (context: ExampleContext) => Promise<T>): Promise<T> {
  const configured = process.env.AZURE_STORAGE_CONNECTION_STRING;
  const azurite = configured ? undefined : await startAzurite();
  try {
    return await run({
      connectionString: configured || azurite!.connectionString, // "" (unset by the examples test) means none
      azurite,
      log: (message) => console.log(`  ${message}`),
    });
  } finally {
    await azurite?.stop();
  }
}

/** Runs `example` when its file is executed directly (`npx tsx examples/<name>.ts`). */
export function runIfMain(importMetaUrl: string, example: Example): void {
  if (process.argv[1] === undefined || importMetaUrl !== pathToFileURL(process.argv[1]).href) return;
  console.log(example.title);
  withStorage((context) => example.main(context)).catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
