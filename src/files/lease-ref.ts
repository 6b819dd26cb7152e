/**
 * How the Files helpers are told which lease to write under: a lease id, or a lock handle (anything
 * with a `leaseId` and, optionally, a `signal` that aborts when the lock is lost, such as the handle
 * of the library's lease lock). With a handle, a lost lock stops the helper before it writes and
 * cancels a request in flight.
 */
import { checkOptionalSignal } from "../internal/validate.js";

/** A lease to write under: its id, or a lock handle that carries it. */
export type FileLeaseRef = string | FileLeaseHandleLike;

/** The part of a lock handle the Files helpers use. */
export interface FileLeaseHandleLike {
  /** The lease id held on the file. */
  readonly leaseId: string;
  /** Aborts (with the reason) when the lock is lost; the helpers then stop. */
  readonly signal?: AbortSignal | undefined;
}

/** A resolved lease reference. */
export interface ResolvedLease {
  readonly leaseId: string;
  readonly signal: AbortSignal | undefined;
}

/** Checks and resolves `lease` (named `name` in error messages). */
export function resolveLease(name: string, lease: unknown): ResolvedLease {
  if (typeof lease === "string") {
    if (lease.length === 0) throw new TypeError(`\`${name}\` must be a lease id or a lock handle, got an empty string.`);
    return { leaseId: lease, signal: undefined };
  }
  if (typeof lease === "object" && lease !== null && typeof (lease as FileLeaseHandleLike).leaseId === "string" && (lease as FileLeaseHandleLike).leaseId.length > 0) {
    const signal = (lease as FileLeaseHandleLike).signal;
    checkOptionalSignal(`${name}.signal`, signal);
    return { leaseId: (lease as FileLeaseHandleLike).leaseId, signal };
  }
  throw new TypeError(`\`${name}\` must be a lease id (string) or a lock handle with a \`leaseId\`, got ${lease === null ? "null" : typeof lease}.`);
}

/** One signal that aborts when either does (the caller's, or the lock's). */
export function eitherSignal(a: AbortSignal | undefined, b: AbortSignal | undefined): AbortSignal | undefined {
  if (!a) return b;
  if (!b) return a;
  return AbortSignal.any([a, b]);
}
