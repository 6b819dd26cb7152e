/**
 * Turns a failure of a command into the one line the tool prints: what went wrong and what to fix,
 * for the failures an operator meets first (an endpoint that does not answer, a key or SAS that is
 * refused, a Microsoft Entra sign-in that found no credential, an identity without a data role).
 * Everything else is its message's first line. Every line is redacted of secrets.
 */
import { describeError, networkHint, readRestError, redactSecrets, statusHint } from "azure-storage-concurrency/errors";
import { mayBeSecret, shownArgument } from "../internal/args.js";

/** How a command's requests were signed, so that the advice on a refusal fits it. */
export type SignIn = "entra" | "key" | "sas";

/**
 * A command's failure, with how it signed in: an identity without a data role is told which role to
 * assign, a SAS without a right which right to add; neither is told about the other.
 */
export class SignedInFailure extends Error {
  readonly signIn: SignIn;
  constructor(signIn: SignIn, cause: unknown) {
    super("a command failed", { cause });
    this.name = "SignedInFailure";
    this.signIn = signIn;
  }
}

/** What to do about a 403 that says the credential may not do this, by how the command signed in. */
const NOT_ALLOWED: Readonly<Record<SignIn | "unknown", string>> = {
  entra:
    "the signed-in identity has no data role that allows this; " +
    "assign Storage Blob Data Reader to list and show, Storage Blob Data Contributor to break",
  sas:
    "the SAS does not allow this: a container SAS or an account SAS needs read and list (r, l) to list and show locks, " +
    "and write (w) to break one (an account SAS also needs the container and object resource types, srt=co)",
  key: "the account refuses this request even with its key: check the account's network rules and any policy",
  unknown: "the credential may not do this: check the key, the SAS's rights or the identity's data role",
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

/**
 * `message` with each file path a Node.js error names (`ENOENT: …, open '<path>'`) shown as the
 * tool shows any word typed on its command line: by its length when it may be a secret.
 */
function withoutPaths(message: string, errors: readonly unknown[]): string {
  let text = message;
  for (const e of errors) {
    const path = (e as { path?: unknown } | null)?.path;
    if (typeof path === "string" && mayBeSecret(path)) text = text.split(path).join(shownArgument(path));
  }
  return text;
}

/** One line for `error`, without secrets (nor any file path that may be one). */
export function explain(error: unknown): string {
  const cause = error instanceof SignedInFailure ? error.cause : error;
  const line = explainSignedIn(cause, error instanceof SignedInFailure ? error.signIn : undefined);
  return withoutPaths(line, chain(cause));
}

function explainSignedIn(error: unknown, signIn: SignIn | undefined): string {
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
      const hint = networkHint(info.networkCode) ?? "check the endpoint and the network";
      return redactSecrets(`cannot reach ${where ?? "the storage endpoint"} (${info.networkCode}): ${hint}`);
    }
    if (
      info.statusCode === 403 &&
      (info.serviceCode === "AuthorizationPermissionMismatch" ||
        info.serviceCode === "AuthorizationResourceTypeMismatch" ||
        (info.serviceCode === "AuthorizationFailure" && signIn === "sas"))
    ) {
      return redactSecrets(`${first} (403 ${info.serviceCode}: ${NOT_ALLOWED[signIn ?? "unknown"]})`);
    }
    if (info.statusCode === 403 && info.serviceCode === "AuthenticationFailed") {
      return redactSecrets(
        `${first} (403 AuthenticationFailed: the account key or SAS was refused: was the key rotated, or the SAS expired?)`,
      );
    }
    // A bad container or share name: the library's hint, with the naming rules.
    const nameHint = info.statusCode === 403 ? undefined : statusHint(info.statusCode, info.serviceCode, e);
    if (nameHint) return redactSecrets(`${first} (${info.statusCode} ${info.serviceCode}: ${nameHint})`);
  }
  return redactSecrets(first);
}
