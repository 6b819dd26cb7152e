/**
 * How the Files helpers are told which lease to write under: a lease id, or a lock handle (anything
 * with a `leaseId` and, optionally, an `abortSignal` that aborts when the lock is lost, such as the handle
 * of `fileLock`). With a handle, a lost lock stops the helper before it writes and cancels a request
 * in flight, and the lock's record in the file's metadata is kept by the write.
 */
import { checkOptionalSignal } from "../internal/validate.js";

/** A lease to write under: its id, or a lock handle that carries it. */
export type FileLeaseRef = string | FileLeaseHandleLike;

/** The part of a lock handle the Files helpers use. */
export interface FileLeaseHandleLike {
  /** The lease id held on the file. */
  readonly leaseId: string;
  /** Aborts (with the reason) when the lock is lost; the helpers then stop. */
  readonly abortSignal?: AbortSignal | undefined;
  /** @deprecated The old name of `abortSignal` (read when `abortSignal` is absent). */
  readonly signal?: AbortSignal | undefined;
  /**
   * The lock's record (holder, fencing token) in the file's metadata, as `fileLock`'s handles carry
   * it. A write replaces all of a file's metadata; the helpers add these entries to what they write
   * so that the record survives (and the next holder's fencing token follows on from this one's).
   */
  readonly lockMetadata?: Readonly<Record<string, string>> | undefined;
}

/** A resolved lease reference. */
export interface ResolvedLease {
  readonly leaseId: string;
  readonly signal: AbortSignal | undefined;
  /** Metadata entries every write under this lease keeps (the lock's record); empty for a lease id. */
  readonly lockMetadata: Readonly<Record<string, string>>;
}

/** Checks and resolves `lease` (named `name` in error messages). */
export function resolveLease(name: string, lease: unknown): ResolvedLease {
  if (typeof lease === "string") {
    if (lease.length === 0)
      throw new TypeError(`\`${name}\` must be a lease id or a lock handle, got an empty string.`);
    return { leaseId: lease, signal: undefined, lockMetadata: {} };
  }
  if (
    typeof lease === "object" &&
    lease !== null &&
    typeof (lease as FileLeaseHandleLike).leaseId === "string" &&
    (lease as FileLeaseHandleLike).leaseId.length > 0
  ) {
    const { leaseId, abortSignal, signal: deprecatedSignal, lockMetadata } = lease as FileLeaseHandleLike;
    checkOptionalSignal(`${name}.abortSignal`, abortSignal);
    checkOptionalSignal(`${name}.signal`, deprecatedSignal);
    const signal = abortSignal ?? deprecatedSignal;
    if (lockMetadata !== undefined && (typeof lockMetadata !== "object" || lockMetadata === null)) {
      throw new TypeError(`\`${name}.lockMetadata\` must be an object of metadata entries.`);
    }
    return { leaseId, signal, lockMetadata: lockMetadata ?? {} };
  }
  throw new TypeError(
    `\`${name}\` must be a lease id (string) or a lock handle with a \`leaseId\`, got ${lease === null ? "null" : typeof lease}.`,
  );
}

/** One signal that aborts when either does (the caller's, or the lock's). */
export function eitherSignal(a: AbortSignal | undefined, b: AbortSignal | undefined): AbortSignal | undefined {
  if (!a) return b;
  if (!b) return a;
  return AbortSignal.any([a, b]);
}
