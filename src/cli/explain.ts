/**
 * Turns a failure of a command into the one line the tool prints: what went wrong and what to fix,
 * for the failures an operator meets first (an endpoint that does not answer, a key or SAS that is
 * refused, a Microsoft Entra sign-in that found no credential, an identity without a data role).
 * Everything else is its message's first line. Every line is redacted of secrets.
 */
import { readRestError, redactSecrets } from "../errors.js";
import { describeError } from "../internal/describe-error.js";

const NETWORK_HINTS: Readonly<Record<string, string>> = {
  ECONNREFUSED: "nothing listens there",
  ENOTFOUND: "no such host: check the account name or endpoint",
  EAI_AGAIN: "the host name could not be resolved now: check the network and DNS",
  ETIMEDOUT: "no answer: check the endpoint, the network and any firewall",
  EHOSTUNREACH: "no route to the host: check the network",
  ENETUNREACH: "no route to the network",
  ECONNRESET: "the connection was cut: check the endpoint's protocol (https or http) and any proxy",
  UND_ERR_CONNECT_TIMEOUT: "no answer: check the endpoint, the network and any firewall",
};

/** What `@azure/identity` throws when no credential of the chain could even try. */
const NO_CREDENTIAL = new Set(["AggregateAuthenticationError", "CredentialUnavailableError"]);

/** The error and its causes, outermost first. */
function chain(error: unknown): unknown[] {
  const all: unknown[] = [];
  for (let at = error; at !== undefined && at !== null && all.length < 8; at = (at as { cause?: unknown }).cause) {
    all.push(at);
    if (typeof at !== "object") break;
  }
  return all;
}

/** The request's endpoint (scheme, host and port), when an SDK error names it. */
function endpointOf(error: unknown): string | undefined {
  const url = (error as { request?: { url?: unknown } }).request?.url;
  if (typeof url !== "string") return undefined;
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

/**
 * The first line of a message; for a service's XML error body (which some SDK errors carry as their
 * message), its code and message instead of `<?xml …?>`.
 */
function firstLine(message: string): string {
  const xmlCode = /<Code>([^<]*)<\/Code>/.exec(message)?.[1];
  const xmlMessage = /<Message>([^<\n]*)/.exec(message)?.[1];
  if (message.trimStart().startsWith("<?xml") && (xmlCode || xmlMessage))
    return [xmlCode, xmlMessage].filter(Boolean).join(": ");
  return message.split("\n")[0]!;
}

/** One line for `error`, without secrets. */
export function explain(error: unknown): string {
  const errors = chain(error);
  const first = firstLine(describeError(error));
  for (const e of errors) {
    const name = (e as { name?: unknown }).name;
    if (name === "AuthenticationError") {
      return redactSecrets(`Microsoft Entra ID sign-in failed: ${firstLine(describeError(e))}`);
    }
    if (typeof name === "string" && NO_CREDENTIAL.has(name)) {
      return redactSecrets(
        "Microsoft Entra ID sign-in found no credential (DefaultAzureCredential): run `az login`, set AZURE_TENANT_ID, " +
          "AZURE_CLIENT_ID and AZURE_CLIENT_SECRET, or run where a managed identity is assigned; or use a connection string",
      );
    }
    if (
      name === "TimeoutError" ||
      (name === "AbortError" && errors.some((x) => (x as { name?: unknown }).name === "TimeoutError"))
    ) {
      return redactSecrets(`${first} (no answer in time: check the endpoint, the network and any firewall)`);
    }
    const info = readRestError(e);
    if (!info) continue;
    const where = endpointOf(e);
    if (info.networkCode) {
      const hint = NETWORK_HINTS[info.networkCode] ?? "check the endpoint and the network";
      return redactSecrets(`cannot reach ${where ?? "the storage endpoint"} (${info.networkCode}): ${hint}`);
    }
    if (info.statusCode === 403 && info.serviceCode === "AuthorizationPermissionMismatch") {
      return redactSecrets(
        `${first} (403 AuthorizationPermissionMismatch: the signed-in identity has no data role that allows this; ` +
          "assign Storage Blob Data Reader to list and show, Storage Blob Data Contributor to break)",
      );
    }
    if (info.statusCode === 403 && info.serviceCode === "AuthenticationFailed") {
      return redactSecrets(
        `${first} (403 AuthenticationFailed: the account key or SAS was refused: was the key rotated, or the SAS expired?)`,
      );
    }
  }
  return redactSecrets(first);
}
