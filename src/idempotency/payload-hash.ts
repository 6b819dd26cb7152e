/**
 * The hash that tells two payloads of one idempotency key apart: SHA-256 of the payload's JSON
 * with object keys sorted at every level, so that `{ a, b }` and `{ b, a }` are the same payload
 * while any changed value is not. Dates count as their ISO text (JSON), `undefined` properties as
 * absent. A payload that JSON cannot hold (a bigint, a cycle) is a TypeError, before any request.
 */
import { createHash } from "node:crypto";
import { describeError } from "../internal/describe-error.js";

/** The payload's hash, as `sha256:<base64url>`. */
export function payloadHash(payload: unknown): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(payload, (_key, value: unknown) =>
      isPlainObject(value)
        ? Object.fromEntries(
            Object.keys(value)
              .sort()
              .map((k) => [k, value[k]]),
          )
        : value,
    );
  } catch (error) {
    throw new TypeError(
      `The payload of an idempotent call must be JSON-serialisable to be compared with later calls: ${describeError(error)}. ` +
        "Pass `payload` to pick the part that identifies the request.",
      { cause: error },
    );
  }
  return `sha256:${createHash("sha256")
    .update(json ?? "")
    .digest("base64url")}`;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}
