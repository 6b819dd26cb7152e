/**
 * The command line tool and the benchmarks load an Azure SDK only when a command needs it, so
 * `--help` and commands for one service work without the other SDKs installed, and a missing SDK is
 * one clear line that says how to get it (in a project, or with npx on a machine with nothing
 * installed).
 */
import { UsageError } from "./args.js";

/** Loads a package (`@azure/storage-blob`, `@azure/identity`), or fails with a message that says what to install. */
export async function importSdk<T>(load: () => Promise<T>, packageName: string): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") {
      throw new UsageError(
        `this command needs ${packageName}: run \`npm install ${packageName}\` in your project, or ` +
          `\`npx -p azure-storage-concurrency-cli -p ${packageName} azure-storage-concurrency …\``,
      );
    }
    throw error;
  }
}
