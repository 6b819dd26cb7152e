/**
 * Listing the locks of a container: every blob that is leased or carries a lock record, with its
 * lease state, fencing token and latest holder, read from the listing itself (one page of up to
 * 5,000 blobs with their metadata per request, no request per blob). The command line's
 * `lock list` prints it; the `lock` benchmark times it over 10,000 lock blobs.
 */
import type { ContainerClient, ListBlobsFlatSegmentResponse } from "@azure/storage-blob";
import { withTimeLimit } from "../internal/time-limit.js";
import { checkOptionalFunction, checkOptionalSignal, optionalNumber } from "../internal/validate.js";
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

/** How each page of a listing is run: given the page's request, it runs it with a signal of its choosing. */
export type ListPageRunner = <T>(call: (abortSignal: AbortSignal) => Promise<T>) => Promise<T>;

/** Options for {@link listLocks} (and `listSlots` of the semaphore). */
export interface ListLocksOptions {
  /** Cancels the listing. */
  readonly abortSignal?: AbortSignal;
  /**
   * The client-side time limit of each page's request, in milliseconds: a page whose answer does
   * not come within it fails the listing with a transient `StorageRequestError` (code
   * `RequestTimedOut`). A listing only reads: running it again is safe.
   * @default 30000
   */
  readonly requestTimeoutInMs?: number;
  /**
   * Runs each page's request (for instance through a retry policy, or to count requests). Whatever
   * signal it passes, the page still has the `requestTimeoutInMs` limit.
   */
  readonly runPage?: ListPageRunner;
}

/** The default client-side time limit of one page of a listing. */
const LIST_PAGE_TIMEOUT_IN_MS = 30_000;

/**
 * Lists the locks in `container` (under `prefix`): what `azure-storage-concurrency lock list`
 * prints, read from the listing alone, one request per page of up to 5,000 blobs, no request per
 * lock. Each page has a client-side time limit (`requestTimeoutInMs`).
 *
 * The third argument may also be a page runner alone (the form of 0.x before `ListLocksOptions`):
 * `(call) => call(signal)`; the page then has both the runner's signal and the default time limit.
 *
 * @example
 * ```ts
 * import { listLocks } from "azure-storage-concurrency/lease";
 *
 * const rows = await listLocks(container, "jobs/", { requestTimeoutInMs: 10_000 });
 * for (const row of rows) console.log(row.name, row.held ? `held by ${row.holder?.host} (pid ${row.holder?.pid})` : row.state, row.fencingToken);
 * ```
 */
export async function listLocks(
  container: ContainerClient,
  prefix?: string,
  options: ListLocksOptions | ListPageRunner = {},
): Promise<LockRow[]> {
  const o: ListLocksOptions = typeof options === "function" ? { runPage: options } : (options ?? {});
  if (typeof o !== "object") throw new TypeError("`options` must be ListLocksOptions or a page runner function.");
  checkOptionalSignal("abortSignal", o.abortSignal);
  checkOptionalFunction("runPage", o.runPage);
  const limitInMs = optionalNumber("requestTimeoutInMs", o.requestTimeoutInMs, LIST_PAGE_TIMEOUT_IN_MS, { min: 1 });
  const runner: ListPageRunner = o.runPage ?? ((call) => call(o.abortSignal ?? new AbortController().signal));
  const runPage: ListPageRunner = (call) =>
    runner((signal) =>
      withTimeLimit(
        `list the locks of container '${container.containerName}'`,
        limitInMs,
        o.abortSignal ? AbortSignal.any([signal, o.abortSignal]) : signal,
        call,
      ),
    );
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
