/**
 * The consumer's `claimCheck` option: what it asks of a claim-check (`ClaimCheck` from
 * `azure-storage-concurrency` is one), and how it reads what a resolve answered.
 *
 * - On receive, before decoding: the message text as it was sent (a payload read from its blob) and
 *   the idempotency key it carries, which becomes the default key (an outbox row's id).
 * - After a message was deleted (processed, or a duplicate): its payload is deleted
 *   (`message-settler.ts`). A payload is never deleted before its message.
 * - Before a message goes to the poison queue: its payload is kept, and the poison envelope names it
 *   (`message-settler.ts`). When that fails, the message is not poisoned now: it comes back.
 *
 * A payload that is gone means another copy of the message was settled (docs/claim-check.md): with
 * an idempotency store keyed by the message's own key, the consumer asks the store (`claim.ts`):
 * done, and the message is deleted as a duplicate; not done, and it is poisoned. Without one, it is
 * poisoned: the consumer cannot tell.
 */
import { isStorageConcurrencyError } from "../errors.js";
import { describeError, stringProperty } from "../internal/describe-error.js";
import { isMessageDecodeError, MessageDecodeError } from "./errors.js";

/** Options of the calls the consumer makes to its claim-check. */
export interface ConsumerClaimCheckCallOptions {
  /** Cancels the requests. */
  readonly abortSignal?: AbortSignal;
  /** A shorter client-side time limit per request than the claim-check's own. */
  readonly timeLimitInMs?: number;
}

/** What the consumer's `claimCheck` option must do: `ClaimCheck` does it. */
export interface ConsumerClaimCheck {
  /** The claim-check's sweep grace: the consumer's visibility timeout must be shorter. */
  readonly sweepGraceInMs: number;
  /** The text as it was sent, and the idempotency key it carries (see `ClaimCheck.resolve`). */
  resolve(
    messageText: string,
    options?: ConsumerClaimCheckCallOptions,
  ): Promise<{
    /** The message's text as it was sent (the payload, read back from its blob when it was stored there). */
    readonly messageText: string;
    /** The idempotency key the message carries, if any. */
    readonly idempotencyKey: string | undefined;
  }>;
  /** Deletes a settled message's payload, unless it is kept for the poison queue. */
  deletePayload(rawMessageText: string, options?: ConsumerClaimCheckCallOptions): Promise<unknown>;
  /** Keeps a message's payload for the poison queue; its blob name, or undefined when it has none. */
  keepPayload(rawMessageText: string, options?: ConsumerClaimCheckCallOptions): Promise<string | undefined>;
}

/** A received message through the claim-check. */
export type OpenedMessage =
  | { readonly status: "resolved"; readonly messageText: string; readonly idempotencyKey: string | undefined }
  /** The payload is gone: the store must tell whether its key is done. */
  | { readonly status: "gone"; readonly idempotencyKey: string; readonly reason: string }
  /** Reading failed for a reason that may pass: try the message again later. */
  | { readonly status: "retry"; readonly error: unknown };

/**
 * Resolves a received message; throws a {@link MessageDecodeError} when reading it again cannot
 * help (the message is poisoned). `canAskStore`: the consumer has an idempotency store keyed by the
 * message's own key, which can tell a settled copy from a lost payload.
 */
export async function openMessage(
  claimCheck: ConsumerClaimCheck,
  messageText: string,
  options: { readonly timeLimitInMs: number; readonly canAskStore: boolean },
): Promise<OpenedMessage> {
  try {
    const resolved = await claimCheck.resolve(messageText, { timeLimitInMs: options.timeLimitInMs });
    return { status: "resolved", messageText: resolved.messageText, idempotencyKey: resolved.idempotencyKey };
  } catch (error) {
    if (isMessageDecodeError(error)) throw error;
    if (!isPayloadMissing(error)) return { status: "retry", error };
    const key = stringProperty(error, "idempotencyKey");
    const reason = describeError(error);
    if (options.canAskStore && key) return { status: "gone", idempotencyKey: key, reason };
    throw new MessageDecodeError(
      `${reason} Without an idempotency store keyed by the message's own key, the consumer cannot tell a settled copy from a lost payload.`,
      { codec: "claim-check", cause: error },
    );
  }
}

/** A claim-check's `ClaimCheckPayloadMissingError`, by its code. */
function isPayloadMissing(error: unknown): boolean {
  return isStorageConcurrencyError(error) && error.code === "ClaimCheckPayloadMissing";
}
