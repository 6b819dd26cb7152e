/**
 * Microsoft Entra ID for the operator commands: many accounts have shared-key access disabled, so
 * `lock` can sign in with `DefaultAzureCredential` (Azure CLI login, environment variables, managed
 * or workload identity, ...). `@azure/identity` is an optional peer dependency, loaded only when
 * `--account-name`, `--blob-endpoint` or `--file-endpoint` asks for it.
 *
 * The identity needs a data role on the account: Storage Blob Data Reader to list and show blob
 * locks, Storage Blob Data Contributor to break them; for Azure Files, the Storage File Data
 * Privileged Reader or Contributor role (requests carry the `backup` file request intent, as OAuth
 * over Azure Files REST requires).
 */
import type { TokenCredential } from "@azure/identity";
import { mayBeSecret, shownArgument, UsageError, stringFlag, type FlagSpec, type Flags } from "../internal/args.js";
import { importSdk } from "../internal/sdk.js";

/** The Entra ID flags. */
export const ENTRA_FLAGS: FlagSpec = {
  "account-name": { type: "string" },
  "blob-endpoint": { type: "string" },
  "file-endpoint": { type: "string" },
};

/** Where to sign in to: the endpoints the flags give (an account name gives both public-cloud endpoints). */
export interface EntraTarget {
  readonly blobEndpoint: string | undefined;
  readonly fileEndpoint: string | undefined;
}

function endpointFlag(flags: Flags, name: string): string | undefined {
  const value = stringFlag(flags, name);
  if (value === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(
      `--${name} takes a URL such as https://<account>.blob.core.windows.net, got ${shownArgument(value)}${keyHint(value)}`,
    );
  }
  if (url.protocol !== "https:")
    throw new UsageError(`--${name} must be https:// (Microsoft Entra tokens are sent over TLS only)`);
  if (url.search)
    throw new UsageError(
      `--${name} takes the endpoint alone, without a query string (a SAS goes in --connection-string)`,
    );
  return `${url.origin}${url.pathname}`;
}

/** What to do with a key (or SAS, or token) typed where a name or an endpoint goes. */
function keyHint(value: string): string {
  return mayBeSecret(value)
    ? ": it looks like a key, a SAS or a token, which never goes on the command line (the process list shows it). " +
        "Put a connection string in AZURE_STORAGE_CONNECTION_STRING, or sign in with Microsoft Entra ID and give --account-name the account's name"
    : "";
}

/** The Entra ID target the flags ask for, or undefined when they name none. */
export function readEntraTarget(flags: Flags): EntraTarget | undefined {
  const accountName = stringFlag(flags, "account-name");
  const blobEndpoint = endpointFlag(flags, "blob-endpoint");
  const fileEndpoint = endpointFlag(flags, "file-endpoint");
  if (accountName === undefined && blobEndpoint === undefined && fileEndpoint === undefined) return undefined;
  if (accountName !== undefined && !/^[a-z0-9]{3,24}$/.test(accountName))
    throw new UsageError(
      `--account-name takes a storage account name (3-24 lowercase letters and digits), got ${shownArgument(accountName)}${keyHint(accountName)}`,
    );
  return {
    blobEndpoint: blobEndpoint ?? (accountName && `https://${accountName}.blob.core.windows.net/`),
    fileEndpoint: fileEndpoint ?? (accountName && `https://${accountName}.file.core.windows.net/`),
  };
}

/** A `DefaultAzureCredential`, from `@azure/identity` (loaded now). */
export async function defaultCredential(): Promise<TokenCredential> {
  const { DefaultAzureCredential } = await importSdk(() => import("@azure/identity"), "@azure/identity");
  return new DefaultAzureCredential();
}
