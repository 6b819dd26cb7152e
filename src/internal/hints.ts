/**
 * What the library's error messages add so that a failure says what to fix (issue 23):
 *
 * - a request the SDK refused before sending it (an http endpoint without `allowInsecureConnection`,
 *   a token credential over http): it was not sent, so nothing was applied, and it is a setup error
 *   that no retry fixes. The texts are the SDK's own (`Cannot connect to … while
 *   allowInsecureConnection is false.` in @typespec/ts-http-runtime's nodeHttpClient; `… is not
 *   permitted for non-TLS protected (non-https) URLs.` in @azure/core-rest-pipeline's
 *   bearerTokenAuthenticationPolicy);
 * - a network failure's meaning (ECONNREFUSED: nothing listens there), as the command line tool says;
 * - a 403 (the credential may not do this) and a bad resource name (the naming rules).
 */

/** The SDK's messages for requests it refuses to send, and what to do about each. */
const REFUSED_BEFORE_SENDING: readonly (readonly [RegExp, string])[] = [
  [
    /while allowInsecureConnection is false/,
    "an http:// endpoint needs `allowInsecureConnection: true` in the client's options (for an emulator such as Azurite; use https for Azure)",
  ],
  [
    /not permitted for non-TLS protected \(non-https\) URLs/,
    "a token credential (Entra ID) is only sent over https: use an https endpoint, or a key or SAS for an emulator",
  ],
];

/**
 * For an error the SDK threw before sending the request (a setup error): what to fix. `undefined`
 * for anything else.
 */
export function refusedBeforeSending(error: unknown): string | undefined {
  const message = (error as { message?: unknown } | null)?.message;
  if (typeof message !== "string") return undefined;
  return REFUSED_BEFORE_SENDING.find(([pattern]) => pattern.test(message))?.[1];
}

/** What a network failure's code means: the one table the library's messages and the command line tool use. */
const NETWORK_HINTS: Readonly<Record<string, string>> = {
  ECONNREFUSED: "nothing listens there: check the endpoint and port, or start the emulator",
  ENOTFOUND: "no such host: check the account name or endpoint",
  EAI_AGAIN: "the host name could not be resolved now: check the network and DNS",
  ETIMEDOUT: "no answer: check the endpoint, the network and any firewall",
  UND_ERR_CONNECT_TIMEOUT: "no answer: check the endpoint, the network and any firewall",
  EHOSTUNREACH: "no route to the host: check the network",
  ENETUNREACH: "no route to the network: check the network",
  ECONNRESET: "the connection was cut: check the endpoint's protocol (https or http) and any proxy",
};

/**
 * What a network failure's code means and what to check, as the library's error messages say it
 * (`ECONNREFUSED`: "nothing listens there: …"); `undefined` for a code it has no advice for.
 *
 * @example
 * ```ts
 * import { networkHint, readRestError } from "azure-storage-concurrency/errors";
 *
 * await container.createIfNotExists().catch((error: unknown) => {
 *   const code = readRestError(error)?.networkCode;
 *   throw new Error(`cannot reach the storage account (${code}): ${networkHint(code) ?? "check the network"}`);
 * });
 * ```
 */
export function networkHint(code: string | undefined): string | undefined {
  return code === undefined ? undefined : NETWORK_HINTS[code];
}

/** How the refused request was signed, read from the SDK error's request (never its secret). */
type CredentialKind = "sas" | "entra" | "key" | undefined;

/** The credential kind of the request behind `error`: a SAS (`sig=` in the URL), Entra (Bearer) or a key. */
function credentialKindOf(error: unknown): CredentialKind {
  try {
    const request = (error as { request?: { url?: unknown; headers?: { get?: (name: string) => unknown } } } | null)
      ?.request;
    if (typeof request?.url === "string" && /[?&]sig=/i.test(request.url)) return "sas";
    const authorization = request?.headers?.get?.("authorization");
    if (typeof authorization === "string") {
      if (/^bearer\s/i.test(authorization)) return "entra";
      if (/^sharedkey(lite)?\s/i.test(authorization)) return "key";
    }
  } catch {
    // an odd error object: no hint about the credential
  }
  return undefined;
}

/**
 * What to fix when the service refused a request, as the library's error messages say it: a 403
 * (which credential was refused, read from the SDK error's request when `error` is given: a SAS, an
 * Entra identity or a key) or a bad resource name (`InvalidResourceName`, `OutOfRangeInput`: the
 * naming rules); `undefined` for anything else.
 *
 * @example
 * ```ts
 * import { readRestError, statusHint } from "azure-storage-concurrency/errors";
 *
 * await blobServiceClient.getContainerClient("Invoices_2026").createIfNotExists().catch((error: unknown) => {
 *   const info = readRestError(error);
 *   console.error(statusHint(info?.statusCode, info?.serviceCode, error)); // container … names are 3 to 63 characters of lower-case letters …
 *   throw error;
 * });
 * ```
 */
export function statusHint(
  statusCode: number | undefined,
  serviceCode: string | undefined,
  error?: unknown,
): string | undefined {
  if (statusCode === 403) {
    switch (credentialKindOf(error)) {
      case "sas":
        return "the SAS may not do this: check its permissions, resource types, services and expiry";
      case "entra":
        return "the identity may not do this: check its data role (for example Storage Blob Data Contributor) on this resource";
      case "key":
        return "the account key was refused: check that it is the account's current key";
      default:
        return (
          "the credential may not do this: check the account key, the SAS's permissions, resource types and expiry, " +
          "or the identity's data role (for example Storage Blob Data Contributor)"
        );
    }
  }
  if (serviceCode === "InvalidResourceName" || serviceCode === "OutOfRangeInput") {
    return (
      "if a name is at fault: container, share and queue names are 3 to 63 characters of lower-case letters, digits and " +
      "single hyphens, starting with a letter or digit; table names are 3 to 63 letters and digits, starting with a letter"
    );
  }
  return undefined;
}
