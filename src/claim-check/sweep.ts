/**
 * The sweep: deletes the payloads whose messages can no longer be delivered, the orphans a failed
 * send or a crash left behind (a send that failed after its upload, a process killed between the
 * two, a consumer killed between settling a message and deleting its payload).
 *
 * The rule (payload.ts): a payload is deleted once `deliverableuntil` (in its metadata) + the grace
 * has passed, never one kept for the poison queue, and never one it cannot read the time of. Each
 * delete is conditional on the ETag the listing gave, so a payload marked for the poison queue
 * after the listing stays. Payload names sort by that time: the listing stops at the first name
 * whose time is not past.
 */
import { statusOf } from "../errors.js";
import { withTimeLimit } from "../internal/time-limit.js";
import { checkOptionalSignal } from "../internal/validate.js";
import { sdkTracing, type OperationTracingOptions } from "../observability/scope.js";
import type { ClaimCheckSettings } from "./options.js";
import { deliverableUntilOf, PAYLOAD_METADATA, timeKey, timeKeyOfName } from "./payload.js";

/** Options for {@link ClaimCheck.sweep}. */
export interface ClaimCheckSweepOptions {
  /**
   * The time to judge by (for tests and for a dry look ahead: a later `now` deletes what will be
   * deletable then; never set it later than the real time in production).
   * @default new Date()
   */
  readonly now?: Date;
  /** Stops the sweep between requests. */
  readonly abortSignal?: AbortSignal;
  /**
   * As the Azure SDK's operations take them: `tracingContext` is the parent of the call's span
   * (`asc.claim_check.sweep`), and so of the SDK's spans under it. Default: the active context.
   */
  readonly tracingOptions?: OperationTracingOptions;
}

/** What {@link ClaimCheck.sweep} did. */
export interface ClaimCheckSweepResult {
  /** Payload blobs looked at. */
  readonly scanned: number;
  /** Payloads deleted: their messages could no longer be delivered. */
  readonly deleted: number;
  /** Payloads kept because their messages went to the poison queue. */
  readonly poisoned: number;
  /** Payloads kept because their messages may still be delivered (counted only up to where the listing stopped). */
  readonly pending: number;
  /** Blobs under the prefix without a readable `deliverableuntil`: never deleted. */
  readonly unreadable: number;
  /** Deletes that failed (see `errors`); the next sweep tries them again. */
  readonly failed: number;
  /** The failures. */
  readonly errors: readonly unknown[];
}

const PAGE_SIZE = 1000;

export async function sweepPayloads(
  settings: ClaimCheckSettings,
  options: ClaimCheckSweepOptions,
): Promise<ClaimCheckSweepResult> {
  if (typeof options !== "object" || options === null) throw new TypeError("`options` must be an object.");
  checkOptionalSignal("abortSignal", options.abortSignal);
  if (options.now !== undefined && !(options.now instanceof Date && Number.isFinite(options.now.getTime())))
    throw new TypeError("`now` must be a valid Date.");
  const now = (options.now ?? new Date()).getTime();
  const cutoff = now - settings.sweepGraceInMs;
  const cutoffKey = timeKey(cutoff);
  const { container, blobPrefix } = settings;
  const result = { scanned: 0, deleted: 0, poisoned: 0, pending: 0, unreadable: 0, failed: 0, errors: [] as unknown[] };
  let continuationToken: string | undefined;
  let done = false;
  while (!done) {
    const page = await withTimeLimit(
      `list the claim-check payloads in container '${container.containerName}'`,
      settings.requestTimeoutInMs,
      options.abortSignal,
      async (abortSignal) => {
        const pages = container
          .listBlobsFlat({ prefix: blobPrefix, includeMetadata: true, abortSignal, tracingOptions: sdkTracing() })
          .byPage({ maxPageSize: PAGE_SIZE, ...(continuationToken ? { continuationToken } : {}) });
        const next = await pages.next();
        return next.done ? undefined : next.value;
      },
    ).catch((error: unknown) => {
      if (statusOf(error) === 404) return undefined; // no container: nothing was ever uploaded
      throw error;
    });
    if (!page) break;
    for (const item of page.segment.blobItems) {
      const key = timeKeyOfName(blobPrefix, item.name);
      if (key !== undefined && key > cutoffKey) {
        done = true; // every later name is later still
        break;
      }
      result.scanned += 1;
      const deliverableUntil = deliverableUntilOf(item.metadata);
      if (item.metadata?.[PAYLOAD_METADATA.poisonedOn] !== undefined) result.poisoned += 1;
      else if (deliverableUntil === undefined) result.unreadable += 1;
      else if (deliverableUntil >= cutoff) result.pending += 1;
      else {
        try {
          await withTimeLimit(
            `delete the claim-check payload '${item.name}'`,
            settings.requestTimeoutInMs,
            options.abortSignal,
            (abortSignal) =>
              container
                .getBlobClient(item.name)
                .delete({ conditions: { ifMatch: item.properties.etag }, abortSignal, tracingOptions: sdkTracing() }),
          );
          result.deleted += 1;
        } catch (error) {
          const status = statusOf(error);
          if (status === 404)
            result.deleted += 1; // gone already
          else if (status === 412)
            result.poisoned += 1; // changed since the listing: marked for the poison queue
          else {
            options.abortSignal?.throwIfAborted();
            result.failed += 1;
            result.errors.push(error);
          }
        }
      }
    }
    continuationToken = page.continuationToken || undefined;
    if (!continuationToken) break;
  }
  return result;
}
