/**
 * A cell whose every request has a client-side time limit (`requestTimeoutInMs` of the engine's
 * calls): the reads of a round, the conditional write, and the read-backs and resends that settle a
 * write whose answer was lost. The SDKs have none of their own (`tryTimeoutInMs` is the service's
 * timeout, sent with the request), so without it a request whose answer never comes keeps the
 * caller waiting for ever (see `../internal/time-limit.ts`).
 *
 * A write cut off by the limit is a lost answer, not a failure: it may have been applied, so the
 * engine settles it by reading the cell back and recognising the write by its id
 * (`write-outcome.ts`), and only then sends the same write again (same id, same condition: at most
 * one copy lands). It is never counted as refused, so a retry cannot apply it twice.
 *
 * The limit wraps the cell's own call (the SDK's retries inside it included) and sits inside the
 * rate limiter (`throttled-cell.ts`): the wait for a token is not counted against it.
 */
import { withTimeLimit } from "../internal/time-limit.js";
import { checkNumber } from "../internal/validate.js";
import type { VersionedCell } from "./cell.js";

/** The default of `requestTimeoutInMs`: room for a large blob's upload on a slow link. */
const DEFAULT_REQUEST_TIMEOUT_IN_MS = 30_000;

/** Checks `requestTimeoutInMs` (milliseconds, at least 1), giving the default when undefined. */
export function checkRequestTimeout(value: unknown): number {
  return checkNumber("requestTimeoutInMs", value ?? DEFAULT_REQUEST_TIMEOUT_IN_MS, { min: 1 });
}

/** `cell`, with each read and write under `timeLimitInMs` (the caller's signal still cancels it). */
export function boundedCell<T>(cell: VersionedCell<T>, timeLimitInMs: number): VersionedCell<T> {
  return {
    key: cell.key,
    description: cell.description,
    read: (options) =>
      withTimeLimit(`read ${cell.description}`, timeLimitInMs, options.abortSignal, (abortSignal) =>
        cell.read({ ...options, abortSignal }),
      ),
    write: (content, options) =>
      withTimeLimit(`write ${cell.description}`, timeLimitInMs, options.abortSignal, (abortSignal) =>
        cell.write(content, { ...options, abortSignal }),
      ),
    decode: (content) => cell.decode(content),
    encode: (value) => cell.encode(value),
    ...(cell.sizeInBytes ? { sizeInBytes: (content: unknown) => cell.sizeInBytes!(content) } : {}),
    ...(cell.mergeWrite
      ? { mergeWrite: (stored: unknown, written: unknown) => cell.mergeWrite!(stored, written) }
      : {}),
  };
}
