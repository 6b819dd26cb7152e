/**
 * What a lock writes into its blob's (or container's) metadata under the lease at each
 * acquisition: the holder (host, process id, optional name), when it was acquired, the lease
 * timings (so an operator can break a lock safely), and the fencing token, a counter that goes up
 * by one at every acquisition. The library never deletes the lock blob, so the counter and the
 * last holder survive every lock.
 *
 * Metadata names must be C# identifiers and the service lower-cases them; values must be ASCII,
 * so the holder's name is percent-encoded. Metadata of the user's own is kept as it is.
 */
import { hostname } from "node:os";

/**
 * The metadata names the lock owns.
 *
 * @example
 * ```ts
 * import { LOCK_METADATA } from "azure-storage-concurrency/lease";
 *
 * const token = (await blob.getProperties()).metadata?.[LOCK_METADATA.fencingToken];
 * ```
 */
export const LOCK_METADATA = {
  /** The fencing token of the latest acquisition: a decimal integer, 1 for the first. */
  fencingToken: "lockfencingtoken",
  /** The holder's host name, percent-encoded. */
  host: "lockholderhost",
  /** The holder's process id, in decimal. */
  pid: "lockholderpid",
  /** The holder's `holderName`, percent-encoded; absent when it gave none. */
  name: "lockholdername",
  /** When the holder acquired the lock, as an ISO 8601 timestamp from the holder's clock. */
  acquiredAt: "lockacquiredat",
  /** The lease duration the holder took, in seconds, or `"infinite"`. */
  durationInSeconds: "lockdurationseconds",
  /** How often the holder renews (or checks) its lease, in milliseconds. */
  renewIntervalInMs: "lockrenewintervalms",
  /**
   * A random id of the `acquire` call that wrote this record, so that the call recognises its own
   * record after a lost answer instead of writing the next token again.
   */
  acquisitionId: "lockacquisitionid",
} as const;

/** Who holds (or last held) a lock, as recorded in its metadata. */
export interface LockHolder {
  /** The holder's host name. */
  readonly host: string;
  /** The holder's process id. */
  readonly pid: number;
  /** The name the holder gave (`holderName`), if any. */
  readonly name: string | undefined;
  /** When the holder acquired the lock (its own clock). */
  readonly acquiredAt: Date | undefined;
  /** The lease duration the holder took, `Infinity` for an infinite lease. */
  readonly durationInSeconds: number | undefined;
  /** How often the holder renews (or, for an infinite lease, checks) its lease. */
  readonly renewIntervalInMs: number | undefined;
}

/** What the lock's metadata says. */
export interface LockRecord {
  /** The fencing token of the latest acquisition; 0 before the first. */
  readonly fencingToken: number;
  /** The id of the `acquire` call that wrote the record, when recorded. */
  readonly acquisitionId: string | undefined;
  /** The latest holder, if any acquisition was recorded. */
  readonly holder: LockHolder | undefined;
}

/**
 * Reads the lock's record out of the resource's metadata.
 *
 * @example
 * ```ts
 * import { readLockRecord } from "azure-storage-concurrency/lease";
 *
 * const { fencingToken, holder } = readLockRecord((await blob.getProperties()).metadata ?? {});
 * ```
 */
export function readLockRecord(metadata: Readonly<Record<string, string>>): LockRecord {
  const token = Number(metadata[LOCK_METADATA.fencingToken] ?? 0);
  const host = metadata[LOCK_METADATA.host];
  const number = (key: string) => {
    const value = metadata[key];
    if (value === "infinite") return Infinity;
    const parsed = value === undefined ? Number.NaN : Number(value);
    return Number.isFinite(parsed) ? parsed : undefined;
  };
  const acquiredAt = metadata[LOCK_METADATA.acquiredAt];
  const name = metadata[LOCK_METADATA.name];
  return {
    fencingToken: Number.isSafeInteger(token) && token > 0 ? token : 0,
    acquisitionId: metadata[LOCK_METADATA.acquisitionId],
    holder:
      host === undefined
        ? undefined
        : {
            host: safeDecode(host),
            pid: number(LOCK_METADATA.pid) ?? 0,
            name: name === undefined ? undefined : safeDecode(name),
            acquiredAt:
              acquiredAt === undefined || Number.isNaN(Date.parse(acquiredAt)) ? undefined : new Date(acquiredAt),
            durationInSeconds: number(LOCK_METADATA.durationInSeconds),
            renewIntervalInMs: number(LOCK_METADATA.renewIntervalInMs),
          },
  };
}

/**
 * The metadata to write for a new acquisition: `all` is the existing metadata with the lock's
 * entries replaced, `own` the lock's entries alone.
 */
export function buildLockMetadata(
  existing: Readonly<Record<string, string>>,
  acquisition: {
    readonly fencingToken: number;
    readonly acquisitionId: string;
    readonly name: string | undefined;
    readonly acquiredAt: Date;
    readonly durationInSeconds: number;
    readonly renewIntervalInMs: number;
  },
): { all: Record<string, string>; own: Record<string, string> } {
  const own: Record<string, string> = {
    [LOCK_METADATA.fencingToken]: String(acquisition.fencingToken),
    [LOCK_METADATA.host]: encodeURIComponent(hostname()),
    [LOCK_METADATA.pid]: String(process.pid),
    [LOCK_METADATA.acquiredAt]: acquisition.acquiredAt.toISOString(),
    [LOCK_METADATA.durationInSeconds]:
      acquisition.durationInSeconds === Infinity ? "infinite" : String(acquisition.durationInSeconds),
    [LOCK_METADATA.renewIntervalInMs]: String(Math.round(acquisition.renewIntervalInMs)),
    [LOCK_METADATA.acquisitionId]: acquisition.acquisitionId,
  };
  if (acquisition.name !== undefined) own[LOCK_METADATA.name] = encodeURIComponent(acquisition.name);
  const all: Record<string, string> = { ...existing };
  delete all[LOCK_METADATA.name];
  return { all: Object.assign(all, own), own };
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** The lock's own entries of `metadata` (those named in {@link LOCK_METADATA}). */
export function ownLockMetadata(metadata: Readonly<Record<string, string>>): Record<string, string> {
  const names = new Set<string>(Object.values(LOCK_METADATA));
  return Object.fromEntries(Object.entries(metadata).filter(([name]) => names.has(name)));
}
