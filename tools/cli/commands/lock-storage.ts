/**
 * The storage a `lock` command acts on (an operator's command: it goes where the operator points
 * it, see ../target.ts): `--connection-string`, Microsoft Entra ID (`--account-name`,
 * `--blob-endpoint`, `--file-endpoint`), `--azurite`, or else AZURE_STORAGE_CONNECTION_STRING.
 *
 * Its SDK clients retry little and quickly, and every call the command makes carries a time limit
 * ({@link callTimeout}): a wrong or unreachable endpoint is one line within seconds, not the SDK's
 * default retries for half a minute.
 */
import type { BlobServiceClient } from "@azure/storage-blob";
import type { ShareServiceClient } from "@azure/storage-file-share";
import { serviceCodeOf } from "azure-storage-concurrency/errors";
import { UsageError, stringFlag, type FlagSpec, type Flags } from "../../internal/args.js";
import { importSdk } from "../../internal/sdk.js";
import { accountOf, readConnectionString, type AccountConnection } from "../connection-string.js";
import { defaultCredential, ENTRA_FLAGS, readEntraTarget, type EntraTarget } from "../entra.js";
import type { SignIn } from "../explain.js";
import { CONNECTION_STRING_VARIABLE, openEmbeddedAzurite } from "../target.js";

/** The connection flags of `lock`. */
export const LOCK_STORAGE_FLAGS: FlagSpec = {
  "connection-string": { type: "string" },
  azurite: { type: "boolean" },
  ...ENTRA_FLAGS,
};

/** A few quick retries: enough for a blip, short enough that a dead endpoint fails in seconds. */
const RETRY_OPTIONS = { maxTries: 3, retryDelayInMs: 200, maxRetryDelayInMs: 1_000 };

/** The time limit of one call the command makes (a listing page, a HEAD, a break). */
const CALL_TIME_LIMIT_IN_MS = 10_000;

/**
 * Runs one call of the command with its time limit; a call cut by it fails with a line that names
 * the endpoint that did not answer.
 */
export async function timed<T>(
  storage: LockStorage,
  service: "blob" | "file",
  call: (abortSignal: AbortSignal) => Promise<T>,
): Promise<T> {
  const abortSignal = AbortSignal.timeout(CALL_TIME_LIMIT_IN_MS);
  const started = performance.now();
  try {
    return await call(abortSignal);
  } catch (error) {
    // Cut by this limit, or by the lock's own client-side limit on a request it makes (shorter).
    if (!abortSignal.aborted && serviceCodeOf(error) !== "ClientTimeout") throw error;
    const seconds = Math.max(1, Math.round((performance.now() - started) / 1000));
    throw new Error(
      `no answer from ${storage.endpoint(service)} within ${seconds} s: check the endpoint, the network and any firewall`,
      { cause: error },
    );
  }
}

/** Where a lock command acts. */
export interface LockStorage {
  /** "account 'name' (endpoint), from …": what the command prints first; no key, no SAS. */
  describe(service: "blob" | "file"): string;
  /** The service's endpoint (no query string). */
  endpoint(service: "blob" | "file"): string;
  /** How requests are signed: Microsoft Entra ID, the account key, or a SAS (the advice on a 403 depends on it). */
  readonly signIn: SignIn;
  blobService(): Promise<BlobServiceClient>;
  shareService(): Promise<ShareServiceClient>;
  /** Stops an embedded Azurite. */
  close(): Promise<void>;
}

/** Reads which storage the flags and the environment name (before any request). */
export function chooseLockStorage(flags: Flags): () => Promise<LockStorage> {
  const given = stringFlag(flags, "connection-string");
  const entra = readEntraTarget(flags);
  const named = [
    given !== undefined && "--connection-string",
    entra && "Microsoft Entra ID (--account-name, --blob-endpoint, --file-endpoint)",
    flags["azurite"] === true && "--azurite",
  ].filter(Boolean);
  if (named.length > 1) throw new UsageError(`use one of ${named.join(" or ")}, not several`);
  if (entra) return () => Promise.resolve(entraStorage(entra));
  if (flags["azurite"]) {
    return async () => {
      const azurite = await openEmbeddedAzurite();
      const storage = connectionStringStorage(readConnectionString(azurite.connectionString, "--azurite"));
      return {
        ...storage,
        describe: () => "an embedded Azurite, started for this run",
        close: () => azurite.close(),
      };
    };
  }
  const text = given ?? process.env[CONNECTION_STRING_VARIABLE];
  if (!text) {
    throw new UsageError(
      `no storage account: set ${CONNECTION_STRING_VARIABLE}, pass --connection-string <cs>, or sign in with Microsoft Entra ID: --account-name <name>`,
    );
  }
  const account = readConnectionString(text, given !== undefined ? "--connection-string" : CONNECTION_STRING_VARIABLE);
  return () => Promise.resolve(connectionStringStorage(account));
}

function connectionStringStorage(account: AccountConnection): LockStorage {
  return {
    describe: (service) => account.describe(service),
    endpoint: (service) => account.endpoint(service),
    signIn: account.signIn,
    async blobService() {
      account.endpoint("blob"); // a clear line when it has none
      const { BlobServiceClient } = await importSdk(() => import("@azure/storage-blob"), "@azure/storage-blob");
      return BlobServiceClient.fromConnectionString(account.connectionString, { retryOptions: RETRY_OPTIONS });
    },
    async shareService() {
      account.endpoint("file");
      const { ShareServiceClient } = await importSdk(
        () => import("@azure/storage-file-share"),
        "@azure/storage-file-share",
      );
      return ShareServiceClient.fromConnectionString(account.connectionString, { retryOptions: RETRY_OPTIONS });
    },
    close: async () => {},
  };
}

function entraStorage(target: EntraTarget): LockStorage {
  const endpoint = (service: "blob" | "file") => {
    const url = service === "blob" ? target.blobEndpoint : target.fileEndpoint;
    if (url === undefined)
      throw new UsageError(`this command needs the ${service} endpoint: pass --account-name or --${service}-endpoint`);
    return url;
  };
  return {
    endpoint,
    signIn: "entra",
    describe: (service) =>
      `account '${accountOf(endpoint(service))}' (${endpoint(service)}), signed in with Microsoft Entra ID (DefaultAzureCredential)`,
    async blobService() {
      const url = endpoint("blob");
      const credential = await defaultCredential();
      const { BlobServiceClient } = await importSdk(() => import("@azure/storage-blob"), "@azure/storage-blob");
      return new BlobServiceClient(url, credential, { retryOptions: RETRY_OPTIONS });
    },
    async shareService() {
      const url = endpoint("file");
      const credential = await defaultCredential();
      const { ShareServiceClient } = await importSdk(
        () => import("@azure/storage-file-share"),
        "@azure/storage-file-share",
      );
      // OAuth over Azure Files REST needs the backup intent (and a File Data Privileged role).
      return new ShareServiceClient(url, credential, {
        retryOptions: RETRY_OPTIONS,
        fileRequestIntent: "backup",
      });
    },
    close: async () => {},
  };
}
