/**
 * Listing the locks of a container: every blob that is leased or carries a lock record, with its
 * lease state, fencing token and latest holder, read from the listing itself (one page of up to
 * 5,000 blobs with their metadata per request, no request per blob). The command line's
 * `lock list` prints it; the `lock` benchmark times it over 10,000 lock blobs.
 */
import type { ContainerClient, ListBlobsFlatSegmentResponse } from "@azure/storage-blob";
import { readLockRecord, type LockHolder } from "./holder.js";

/** One lock of a listing. */
export interface LockRow {
  /** The lock blob's name. */
  readonly name: string;
  /** The blob's lease state as listed (`available`, `leased`, `expired`, `breaking`, `broken`). */
  readonly state: string;
  /** `true` while the blob is leased (a holder has it now). */
  readonly held: boolean;
  /** The fencing token of the latest acquisition (0 when the blob was never taken as a lock). */
  readonly fencingToken: number;
  /** The latest holder, as recorded at its acquisition (the current holder when `held`). */
  readonly holder: LockHolder | undefined;
}

/**
 * Lists the locks in `container` (under `prefix`), one page per `runPage` call: the caller gives
 * each page its time limit (the signal it passes goes to the request). What
 * `azure-storage-concurrency lock list` prints: read from the listing alone, one request per page of
 * up to 5,000 blobs, no request per lock.
 *
 * @example
 * ```ts
 * import { listLocks } from "azure-storage-concurrency/lease";
 *
 * const rows = await listLocks(container, "jobs/", (call) => call(AbortSignal.timeout(10_000)));
 * for (const row of rows) console.log(row.name, row.held ? `held by ${row.holder?.host} (pid ${row.holder?.pid})` : row.state, row.fencingToken);
 * ```
 */
export async function listLocks(
  container: ContainerClient,
  prefix: string | undefined,
  runPage: <T>(call: (abortSignal: AbortSignal) => Promise<T>) => Promise<T>,
): Promise<LockRow[]> {
  const rows: LockRow[] = [];
  let continuationToken: string | undefined;
  do {
    const from = continuationToken;
    const page = await runPage(async (abortSignal) => {
      const pages = container
        .listBlobsFlat({ includeMetadata: true, ...(prefix ? { prefix } : {}), abortSignal })
        .byPage(from === undefined ? {} : { continuationToken: from });
      return (await pages.next()).value as ListBlobsFlatSegmentResponse | undefined;
    });
    if (!page) break;
    for (const blob of page.segment.blobItems) {
      const record = readLockRecord(blob.metadata ?? {});
      const state = blob.properties.leaseState ?? "available";
      if (state === "available" && record.holder === undefined) continue;
      rows.push({
        name: blob.name,
        state,
        held: state === "leased" || state === "breaking",
        fencingToken: record.fencingToken,
        holder: record.holder,
      });
    }
    continuationToken = page.continuationToken || undefined;
  } while (continuationToken);
  return rows;
}
