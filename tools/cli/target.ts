/**
 * Which storage a command talks to. Two rules, because the two kinds of command do different harm
 * on the wrong account:
 *
 * - load-generating commands (`stress`, `bench`) run on an embedded Azurite unless the account is
 *   named on the command line: `--connection-string <cs>`, or `--use-env` for the one in
 *   AZURE_STORAGE_CONNECTION_STRING (that variable alone never sends a load test to an account);
 * - operator commands (`lock`) act where the operator points them: `--connection-string`, else
 *   AZURE_STORAGE_CONNECTION_STRING, else Microsoft Entra ID (`--account-name`, see ./entra.ts),
 *   else `--azurite`.
 *
 * Either way the command's first line says which target it acts on, without the key or the SAS.
 */
import { join } from "node:path";
import { UsageError, stringFlag, type FlagSpec, type Flags } from "../internal/args.js";
import { readConnectionString, type AccountConnection, type StorageService } from "./connection-string.js";

/** The environment variable that names an account. */
export const CONNECTION_STRING_VARIABLE = "AZURE_STORAGE_CONNECTION_STRING";

/** Flags of the load-generating commands. */
export const LOAD_TARGET_FLAGS: FlagSpec = {
  "connection-string": { type: "string" },
  "use-env": { type: "boolean" },
  azurite: { type: "boolean" },
};

/** Where a load-generating command runs. */
type LoadTarget =
  | { readonly kind: "azurite"; readonly describe: () => string }
  | { readonly kind: "account"; readonly account: AccountConnection; readonly describe: (s: StorageService) => string };

/** The target of `stress` and `bench`, from their flags (see the module documentation). */
export function chooseLoadTarget(flags: Flags): LoadTarget {
  const given = stringFlag(flags, "connection-string");
  const useEnv = flags["use-env"] === true;
  if (flags["azurite"] && (given !== undefined || useEnv))
    throw new UsageError(
      `--azurite runs on an embedded emulator: leave out ${useEnv ? "--use-env" : "--connection-string"}`,
    );
  if (given !== undefined && useEnv) throw new UsageError("use --connection-string or --use-env, not both");
  if (given !== undefined || useEnv) {
    const text = given ?? process.env[CONNECTION_STRING_VARIABLE];
    if (!text) throw new UsageError(`--use-env: ${CONNECTION_STRING_VARIABLE} is not set`);
    const account = readConnectionString(
      text,
      given !== undefined ? "--connection-string" : CONNECTION_STRING_VARIABLE,
    );
    return { kind: "account", account, describe: (service) => `target: ${account.describe(service)}` };
  }
  const ignored = process.env[CONNECTION_STRING_VARIABLE]
    ? ` (${CONNECTION_STRING_VARIABLE} is set, and not used: add --use-env to run against that account)`
    : "";
  return { kind: "azurite", describe: () => `target: an embedded Azurite, started for this run${ignored}` };
}

/** A connection for one command run; `close()` stops an embedded Azurite. */
export interface Connection {
  readonly connectionString: string;
  readonly embedded: boolean;
  close(): Promise<void>;
}

/** An account's connection (nothing to close). */
export function accountConnection(account: AccountConnection): Connection {
  return { connectionString: account.connectionString, embedded: false, close: async () => {} };
}

/**
 * Starts an embedded Azurite (free ports, data in a temporary folder) for this run. The `azurite` package is looked
 * up from the working directory's project, then from this tool's own location (installed beside
 * it, globally or by `npx -p azurite`); without it, a usage error says what to install.
 */
export async function openEmbeddedAzurite(): Promise<Connection> {
  const { findAzuriteCli, startAzurite } = await import("azure-storage-concurrency/testing");
  const azuriteCliPath = findAzuriteCli([join(process.cwd(), "package.json"), import.meta.url]);
  if (azuriteCliPath === undefined) {
    throw new UsageError(
      "an embedded Azurite needs the azurite package: run `npm install --save-dev azurite` (or add `-p azurite` to npx), or name an account with --connection-string <cs> or --use-env",
    );
  }
  const azurite = await startAzurite({ azuriteCliPath });
  return { connectionString: azurite.connectionString, embedded: true, close: () => azurite.stop() };
}

/** How long the reachability check waits for any answer. */
const REACH_TIMEOUT_IN_MS = 5_000;

/** Resolves when `endpoint` answers a HEAD request with any status; rejects with the network error. */
async function answers(endpoint: string): Promise<void> {
  const { request } = endpoint.startsWith("https:") ? await import("node:https") : await import("node:http");
  await new Promise<void>((resolve, reject) => {
    const sent = request(endpoint, { method: "HEAD", signal: AbortSignal.timeout(REACH_TIMEOUT_IN_MS) }, (response) => {
      response.resume();
      resolve();
    });
    sent.on("error", reject);
    sent.end();
  });
}

/**
 * Checks, before a load test starts, that each endpoint answers at all (any HTTP status will do):
 * an unreachable or misspelt endpoint is one line within seconds, not the SDK's retries for half a
 * minute. Skipped behind an HTTP proxy (the check does not use it; the SDK does).
 */
export async function checkReachable(account: AccountConnection, services: readonly StorageService[]): Promise<void> {
  if (process.env.HTTPS_PROXY || process.env.https_proxy || process.env.HTTP_PROXY || process.env.http_proxy) return;
  for (const service of new Set(services)) {
    const endpoint = account.endpoint(service);
    try {
      await answers(endpoint);
    } catch (error) {
      const e = error as { name?: string; code?: string; message?: string };
      const why =
        e.name === "TimeoutError" || e.name === "AbortError"
          ? `no answer within ${REACH_TIMEOUT_IN_MS / 1000} s`
          : (e.code ?? e.message ?? String(error));
      throw new Error(
        `cannot reach the ${service} endpoint ${endpoint} (${why}): check the endpoint in ${account.source}, the network, and that the service runs`,
      );
    }
  }
}
