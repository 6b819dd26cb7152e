/**
 * What an answer says about the service's capacity, for the rate limiter:
 *
 * - `"partition"`: the partition is over its limit. 503 ServerBusy ("The server is currently unable
 *   to receive requests"), 429, and 500 OperationTimedOut, which the service also answers when "the
 *   application reaches the limit of what a partition can handle" (Scalability and performance
 *   targets for standard storage accounts: "Azure Storage begins to return error code 503 (Server
 *   Busy) or error code 500 (Operation Timeout) responses").
 * - `"account"`: the account is over its limit: 503 ServerBusy whose message is one of "Ingress is
 *   over the account limit.", "Egress is over the account limit.", "Operations per second is over
 *   the account limit." (Common REST API error codes).
 * - `"served"`: any other answer: the service had the capacity to answer (a 404 or a 412 too).
 * - `"none"`: no answer (a network failure, a cancellation, a client-side time limit), or one that
 *   says nothing about load (500 InternalError, 503 ServiceUnavailable): neither cut nor grow.
 */
import { readRestError } from "../errors.js";
import { classifyError } from "../retry/index.js";

/** What an answer says about the service's capacity (see the module documentation). */
export type ThrottleVerdict = "partition" | "account" | "served" | "none";

/** The parts of an answer the verdict reads. */
export interface AnswerInfo {
  /** The HTTP status; `undefined` when there was no answer. */
  readonly statusCode: number | undefined;
  /** The service's error code (`x-ms-error-code`, or the body's `Code` / `odata.error.code`). */
  readonly serviceCode?: string | undefined;
  /** The service's message (the body's `Message`), where the account-level reasons are told apart. */
  readonly message?: string | undefined;
}

/**
 * The verdict on an answer's status, code and message: `"partition"` for a 503 ServerBusy, a 429 or
 * a 500 OperationTimedOut, `"account"` for a 503 whose message says "over the account limit",
 * `"served"` for an answer that was not throttling, `"none"` for no answer or another 5xx.
 * @example
 * ```ts
 * import { verdictOfAnswer } from "azure-storage-concurrency/throttling";
 *
 * verdictOfAnswer({ statusCode: 503, serviceCode: "ServerBusy", message: "Operations per second is over the account limit." }); // "account"
 * verdictOfAnswer({ statusCode: 412, serviceCode: "ConditionNotMet" }); // "served": the partition answered
 * ```
 */
export function verdictOfAnswer({ statusCode, serviceCode, message }: AnswerInfo): ThrottleVerdict {
  if (statusCode === undefined) return "none";
  if (statusCode === 429) return "partition";
  if (statusCode === 503) {
    if (serviceCode === "ServiceUnavailable") return "none";
    return /over the account limit/i.test(message ?? "") ? "account" : "partition";
  }
  if (statusCode === 500) return serviceCode === "OperationTimedOut" ? "partition" : "none";
  if (statusCode >= 500) return "none";
  return "served";
}

/** The verdict on a call's outcome: `undefined` for a success, else what it threw. */
export function verdictOfOutcome(error: unknown): ThrottleVerdict {
  if (error === undefined) return "served";
  const info = readRestError(error);
  if (info) return verdictOfAnswer(info);
  // The library's own errors (a wrapped storage failure) carry the status and the code.
  const { statusCode, serviceCode, kind } = classifyError(error);
  if (kind === "cancelled" || kind === "network") return "none";
  const message = messageOf(error);
  return statusCode === undefined ? "none" : verdictOfAnswer({ statusCode, serviceCode, message });
}

/**
 * The message of an error body, XML (`<Message>…</Message>`) or JSON (`odata.error.message.value`),
 * first line only: enough to tell the account-level reasons apart.
 */
export function messageInBody(body: string | null | undefined): string | undefined {
  if (!body) return undefined;
  const xml = /<Message>([^<\n]*)/.exec(body);
  if (xml) return xml[1];
  const json = /"value"\s*:\s*"([^"\\]*)/.exec(body);
  return json?.[1];
}

/** The service code of an error body (`<Code>…</Code>` or `"code":"…"`). */
export function codeInBody(body: string | null | undefined): string | undefined {
  if (!body) return undefined;
  return (/<Code>([^<]*)<\/Code>/.exec(body) ?? /"code"\s*:\s*"([^"\\]*)"/.exec(body))?.[1];
}

function messageOf(error: unknown): string | undefined {
  try {
    const message = (error as { message?: unknown }).message;
    return typeof message === "string" ? message : undefined;
  } catch {
    return undefined;
  }
}
