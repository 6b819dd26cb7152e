/**
 * The consumer's own requests: each one gets a client-side time limit, and each failure is sorted
 * into one of three kinds the consumer acts on.
 *
 * - Time limit: every call the consumer makes on its own (receive, heartbeat, delete, visibility
 *   change, poison send, idempotency store call) runs under the library's one client-side time
 *   limit (`internal/time-limit.ts`, `requestTimeoutInMs`; a call cut off by it fails with code
 *   `RequestTimedOut`). The SDK's `tryTimeoutInMs` is the *server-side* timeout (the `timeout`
 *   query parameter): it does not help when the answer never comes (a hung connection, a dead
 *   proxy). The limit covers one call, the SDK's own retries inside it included.
 * - Ambiguous: the request may or may not have been applied (a network failure, a 5xx, our own
 *   time limit). The consumer finds out by trying again with what it holds (see `hold.ts`).
 * - Resource failure: the queue or the table is gone (404 QueueNotFound / TableNotFound), or the
 *   credential is refused (401, 403): `isResourceFailure` of the classifier (`retry/classify.ts`).
 *   Retrying will not help and no message is at fault: the consumer ends with a
 *   {@link ConsumerResourceError}.
 *
 * Transience is decided by the library's one classifier (`retry/classify.ts`); the service codes
 * are read through `errors.ts`.
 */
import { serviceCodeOf, statusOf } from "../errors.js";
import { classifyError } from "../retry/index.js";
import { isResourceFailure } from "../retry/internal.js";
import { ConsumerResourceError, MessageOwnershipLostError, type ConsumerResource } from "./errors.js";
import { describeError, stringProperty } from "../internal/describe-error.js";

/** The classifier's resource failures, which the consumer's requests are sorted by too. */
export { isResourceFailure } from "../retry/internal.js";

/** The request may have been applied, and trying again may succeed: a network failure, a 5xx, a time limit. */
export function isAmbiguous(error: unknown): boolean {
  return classifyError(error).transient;
}

/** 400 PopReceiptMismatch: the message has another pop receipt than the one sent. */
export function isReceiptMismatch(error: unknown): boolean {
  return statusOf(error) === 400 && serviceCodeOf(error) === "PopReceiptMismatch";
}

/** 404 that is about the message (not its queue): it was deleted, or it expired. */
export function isMessageGone(error: unknown): boolean {
  return statusOf(error) === 404 && !isResourceFailure(error);
}

/** What to do about a resource, by the failure's status and code. */
function fixFor(
  resource: ConsumerResource,
  name: string,
  status: number | undefined,
  code: string | undefined,
): string {
  const what = RESOURCE_WORDS[resource](name);
  if (status === 404) {
    return resource === "idempotencyStore"
      ? `${capitalize(what)} does not exist. Create it once (\`await tableClient.createTable()\`, or \`az storage table create --name ${name}\`) before starting the consumer.`
      : `${capitalize(what)} does not exist. Create it once (\`await queueClient.create()\`, or \`az storage queue create --name ${name}\`), or point the consumer at the right queue.`;
  }
  if (code === "AuthorizationPermissionMismatch" || code === "AuthorizationFailure") {
    return (
      `The credential may not do this on ${what}. The consumer needs process (p) and update (u) rights on its queue, ` +
      "add (a) on the poison queue (and create rights while it does not exist), and read, add, update and delete on the idempotency table."
    );
  }
  if (status === 401 || status === 403) {
    return `${capitalize(what)} refused the credential. Check the account key or the SAS (its signature, start and expiry), or the identity's role assignment.`;
  }
  if (status === undefined)
    return `${capitalize(what)} could not be reached. Check its endpoint (the account name, the host, the network).`;
  return `Check ${what}.`;
}

const RESOURCE_WORDS: Record<ConsumerResource, (name: string) => string> = {
  queue: (name) => `the queue '${name}'`,
  poisonQueue: (name) => `the poison queue '${name}'`,
  idempotencyStore: (name) => `the idempotency store's table '${name}'`,
  claimCheck: (name) => `the claim-check container '${name}'`,
};

function capitalize(text: string): string {
  return text[0]!.toUpperCase() + text.slice(1);
}

/** The {@link ConsumerResourceError} for a failure of `operation` on a resource. */
export function resourceError(
  resource: ConsumerResource,
  resourceName: string,
  operation: string,
  cause: unknown,
): ConsumerResourceError {
  const status = statusOf(cause);
  const code = serviceCodeOf(cause);
  const { transient } = classifyError(cause);
  const answer = status === undefined ? `no answer (${describeFailure(cause)})` : `${status}${code ? ` ${code}` : ""}`;
  return new ConsumerResourceError(
    `Could not ${operation}: ${answer}. ${fixFor(resource, resourceName, status, code)}`,
    { resource, resourceName, transient, statusCode: status, serviceCode: code, cause },
  );
}

function describeFailure(error: unknown): string {
  return stringProperty(error, "code") ?? describeError(error).split("\n")[0]!;
}

/** The error that reports a lost idempotency claim. */
export function claimLost(messageId: string, operation: string, cause: unknown): MessageOwnershipLostError {
  return new MessageOwnershipLostError(
    `Another consumer took over the idempotency claim of message '${messageId}'; its done mark and effects were not written.`,
    { messageId, lost: "claim", operation, cause },
  );
}
