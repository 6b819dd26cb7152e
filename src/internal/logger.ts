/**
 * The library's logger, through `@azure/logger` under the package's own namespace
 * (`azure:azure-storage-concurrency:<level>`). Nothing is printed unless asked, the same way as for
 * the Azure SDKs: `AZURE_LOG_LEVEL=info` (or `setLogLevel("info")` from `@azure/logger`).
 *
 * Levels: `verbose` for every renewal, poll or retry; `info` for state changes (lock acquired,
 * released, leadership changed, message poisoned); `warning` for trouble that was handled (a lost
 * lock, a conflict budget running low, a renewal that failed transiently); `error` for failures the
 * caller is about to see.
 */
import { createClientLogger } from "@azure/logger";

export const logger = createClientLogger("azure-storage-concurrency");
