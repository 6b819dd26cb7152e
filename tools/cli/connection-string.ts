/**
 * Reads a storage connection string before any request, so that a wrong one is one line that says
 * what to fix ("has no FileEndpoint", "is not a connection string") instead of the SDK's "Invalid
 * URL" or "Invalid EndpointSuffix", and says which account a command acts on without ever showing
 * the key or the SAS. The endpoints are derived the way the SDKs' `fromConnectionString` derives
 * them: `<Service>Endpoint` when given, else `DefaultEndpointsProtocol://AccountName.<service>.EndpointSuffix`.
 */
import { UsageError } from "../internal/args.js";

/** A storage service, as connection strings name them (`BlobEndpoint`, …). */
export type StorageService = "blob" | "queue" | "table" | "file";

const SERVICE_KEY = { blob: "BlobEndpoint", queue: "QueueEndpoint", table: "TableEndpoint", file: "FileEndpoint" };

/** Azurite's endpoints for `UseDevelopmentStorage=true` (it has no Azure Files). */
const DEVELOPMENT_ENDPOINTS: Partial<Record<StorageService, string>> = {
  blob: "http://127.0.0.1:10000/devstoreaccount1",
  queue: "http://127.0.0.1:10001/devstoreaccount1",
  table: "http://127.0.0.1:10002/devstoreaccount1",
};

/** A checked connection string, and what may be shown of it. */
export interface AccountConnection {
  /** The connection string itself: hand it to the SDK, never print it. */
  readonly connectionString: string;
  /** Where it came from, for messages: `--connection-string` or `AZURE_STORAGE_CONNECTION_STRING`. */
  readonly source: string;
  /** The endpoint of `service` (no query string), or a {@link UsageError} that says what to add. */
  endpoint(service: StorageService): string;
  /** "account 'name' (endpoint), from <source>": no key, no SAS. */
  describe(service: StorageService): string;
  /** How its requests are signed: with the account key (also Azurite's), or with a shared access signature. */
  readonly signIn: "key" | "sas";
}

/** The account name of an endpoint: the first label of the host, or the first path segment for an emulator. */
export function accountOf(endpoint: string): string {
  const url = new URL(endpoint);
  const firstSegment = url.pathname.split("/").find(Boolean);
  return /^[\d.]+$|^localhost$|^\[/.test(url.hostname) && firstSegment ? firstSegment : url.hostname.split(".")[0]!;
}

/**
 * Checks `text` (from `source`) as a storage connection string and reads its endpoints; throws a
 * {@link UsageError} that names what is wrong and never quotes the string (it holds a secret).
 */
export function readConnectionString(text: string, source: string): AccountConnection {
  const parts = new Map<string, string>();
  for (const part of text.split(";")) {
    if (part.trim() === "") continue;
    const eq = part.indexOf("=");
    if (eq <= 0) {
      throw new UsageError(
        `${source} is not a storage connection string: expected Key=Value pairs separated by ";" ` +
          "(DefaultEndpointsProtocol, AccountName, AccountKey and EndpointSuffix; or BlobEndpoint and SharedAccessSignature), " +
          "as the portal's Access keys or Shared access signature page gives it",
      );
    }
    parts.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim());
  }
  const get = (key: string) => parts.get(key.toLowerCase()) || undefined;
  const development = get("UseDevelopmentStorage")?.toLowerCase() === "true";
  const accountKey = get("AccountKey");
  if (!development) {
    if (accountKey !== undefined) {
      if (!get("AccountName")) throw new UsageError(`${source} has an AccountKey but no AccountName`);
      if (!/^[A-Za-z0-9+/]+={0,2}$/.test(accountKey))
        throw new UsageError(`${source}: its AccountKey is not a base64 key (copy it again from the portal)`);
      // The SDKs read a string as an account key string only with DefaultEndpointsProtocol in it.
      if (!/^https?$/i.test(get("DefaultEndpointsProtocol") ?? ""))
        throw new UsageError(`${source} needs DefaultEndpointsProtocol=https (or http for an emulator)`);
    } else if (!get("SharedAccessSignature")) {
      throw new UsageError(
        `${source} has neither an AccountKey nor a SharedAccessSignature: add one (or use --account-name with Microsoft Entra ID for lock commands)`,
      );
    }
  }

  const endpoint = (service: StorageService): string => {
    const key = SERVICE_KEY[service];
    const given = get(key);
    if (given !== undefined) {
      let url: URL;
      try {
        url = new URL(given);
      } catch {
        throw new UsageError(
          `${source}: its ${key} is not a URL (expected https://<account>.${service}.core.windows.net/)`,
        );
      }
      if (url.protocol !== "https:" && url.protocol !== "http:")
        throw new UsageError(`${source}: its ${key} must start with https:// (or http:// for an emulator)`);
      return `${url.origin}${url.pathname}`;
    }
    if (development) {
      const local = DEVELOPMENT_ENDPOINTS[service];
      if (local) return local;
      throw new UsageError(
        `${source} is UseDevelopmentStorage=true, which has no ${key}: Azurite does not emulate Azure Files`,
      );
    }
    const suffix = get("EndpointSuffix");
    if (accountKey !== undefined && suffix !== undefined) {
      return `${get("DefaultEndpointsProtocol")!.toLowerCase()}://${get("AccountName")}.${service}.${suffix}/`;
    }
    throw new UsageError(
      `${source} has no ${key}${accountKey === undefined ? "" : " and no EndpointSuffix"}, which this command needs: ` +
        `add ${key}=https://<account>.${service}.core.windows.net/${accountKey === undefined ? "" : " (or EndpointSuffix=core.windows.net)"}`,
    );
  };

  return {
    connectionString: text,
    source,
    signIn: development || accountKey !== undefined ? "key" : "sas",
    endpoint,
    describe(service) {
      const url = endpoint(service);
      return `account '${get("AccountName") ?? accountOf(url)}' (${url}), from ${source}`;
    },
  };
}
