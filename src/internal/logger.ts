/**
 * The library's logger, through `@azure/logger` under the package's own namespace
 * (`azure:azure-storage-concurrency:<level>`). Nothing is printed unless asked, the same way as for
 * the Azure SDKs: `AZURE_LOG_LEVEL=info` (or `setLogLevel("info")` from `@azure/logger`), and
 * `AzureLogger.log` can be pointed elsewhere.
 *
 * Levels: `verbose` for every renewal, heartbeat, retry or conflict round; `info` for state changes
 * (lock acquired, released or broken, leadership changed, consumer started or stopped); `warning`
 * for trouble that was handled (a lost lock or message, a poisoned message, a retry budget used up,
 * a failed table transaction, a renewal that failed transiently); `error` for a user callback that
 * threw where nobody else would hear of it.
 *
 * Every line passes through {@link redactSecrets} (an error message may quote a URL with a SAS),
 * and is computed into one string, so `AzureLogger.log` receives the whole line as its only argument
 * after the namespace.
 *
 * Logging never throws into the library: a log sink that throws (`AzureLogger.log` pointed at a
 * broken writer) loses that line, and nothing else. Describe thrown values with
 * `describeError` (`./describe-error.ts`), never `String(error)`: the line is built before it gets here.
 */
import { createClientLogger } from "@azure/logger";
import { redactSecrets } from "../errors.js";

const azureLogger = createClientLogger("azure-storage-concurrency");

type Level = "verbose" | "info" | "warning" | "error";

function at(level: Level): (message: string) => void {
  const debug = azureLogger[level];
  return (message) => {
    try {
      if (debug.enabled) debug(redactSecrets(message));
    } catch {
      // The application's log sink threw: the line is lost, the library goes on.
    }
  };
}

/** Logs one line at a level; a level that is off costs a property read. */
export const logger: Readonly<Record<Level, (message: string) => void>> = Object.freeze({
  verbose: at("verbose"),
  info: at("info"),
  warning: at("warning"),
  error: at("error"),
});
