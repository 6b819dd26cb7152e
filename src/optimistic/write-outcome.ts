/**
 * The verdict on one write: sent once, and when its outcome is ambiguous, settled by reading the cell
 * back and asking the write history (`write-log.ts`) whether the write is there.
 *
 * A failed write is ambiguous unless it was refused for sure:
 * - refused for sure: the cell says nothing was sent (`WriteNotSent`), or the one request sent got
 *   an answer that refuses it (a 412, a 503, a 403, ...). The cell counts the requests it sent
 *   (`CellWriteOptions.onSend`); a cell that cannot count is trusted for every refusal but a
 *   conflict, the one answer a resend of an applied conditional write gets;
 * - ambiguous: no answer (a lost response, a reset, a client-side time limit), a 500/502/504 (the
 *   service may have applied it before giving up), or any refusal after the SDK sent the request
 *   more than once (an earlier try may have been applied).
 *
 * Settling an ambiguous write: read the cell back and judge.
 * - `applied`: the write is this caller's success, counted once;
 * - `not-applied`: the cell moved on without it, and its condition will never hold again: the
 *   write is refused (a conflict, or the failure as it came), nothing of it was written;
 * - `unchanged`: not applied so far, but a send still on its way could land. Send the same write
 *   again (same id, same condition): the condition lets at most one of the sends land, and the id
 *   recognises whichever did. So "the connection failed" ends in a definite outcome, not "unknown";
 * - `unknown`: the history was replaced, or too many writers wrote since: no read can tell.
 * A read-back that fails is tried again (transient failures) within the same small budget of
 * requests; when the budget runs out first, the outcome is unknown.
 *
 * Every request made here on the engine's own initiative (the read-backs and the resends) has a
 * client-side time limit.
 */
import { sleep } from "../internal/sleep.js";
import type { BackoffStrategy } from "../retry/index.js";
import { classifyError, mayHaveBeenApplied } from "../retry/internal.js";
import { serviceCodeOf, statusOf } from "../errors.js";
import { NOT_MODIFIED, WriteNotSent, type CellVersion, type VersionedCell, type WriteCondition } from "./cell.js";
import { OptimisticOutcomeUnknownError } from "./errors.js";
import { withTimeLimit } from "../internal/time-limit.js";
import type { WriteVerdict } from "./write-log.js";

/** Read-backs and resends, together, that settling one ambiguous write may take. */
const MAX_SETTLING_REQUESTS = 8;

/** A write, ready to send (again). */
interface PlannedWrite {
  /** What to send, in the cell's stored form. */
  readonly content: unknown;
  readonly condition: WriteCondition;
  /** The write history to store with it (stored form). */
  readonly log: string;
  /** The version the content was computed from, if any. */
  readonly base: CellVersion<unknown> | undefined;
  /** What the cell as read back says about this write. */
  judge(now: CellVersion<unknown> | undefined): WriteVerdict;
}

/** How a write ended, when it did not throw. */
type WriteOutcome =
  | {
      /** Stored by a send that was answered. */
      readonly kind: "written";
      readonly etag: string;
    }
  | {
      /** Applied, and recognised by reading the cell back (`now`). */
      readonly kind: "recognised";
      readonly now: CellVersion<unknown>;
    }
  | {
      /** Not applied, for sure: a conflict (see {@link isWriteConflict}) or the failure as it came. */
      readonly kind: "refused";
      readonly error: unknown;
      /** The cell said nothing was sent (it failed in a request before the write). */
      readonly notSent: boolean;
      /**
       * The answer was in doubt, and reading back showed the cell moved on without the write: as
       * good as a conflict (its condition will never hold again), so an update may read and try again.
       */
      readonly superseded?: boolean;
    };

/** How to settle. */
interface SettlingOptions {
  readonly abortSignal: AbortSignal | undefined;
  /** Client-side time limit on each read-back and resend. */
  readonly recoveryTimeoutInMs: number;
  /** The wait before a read-back or resend after the first. */
  readonly backoff: BackoffStrategy;
}

/**
 * Sends `write` and settles its outcome. Rejects with the caller's cancellation as it came (a write
 * already sent may still be applied), or with {@link OptimisticOutcomeUnknownError}.
 */
export async function writeAndSettle(
  cell: VersionedCell<unknown>,
  write: PlannedWrite,
  options: SettlingOptions,
): Promise<WriteOutcome> {
  const first = await send(cell, write, options.abortSignal);
  if (first.ok) return { kind: "written", etag: first.etag };
  if (classifyError(first.error).kind === "cancelled") throw first.error;
  if (refusedForSure(first)) return { kind: "refused", error: first.error, notSent: first.notSent };

  let writeError = first.error;
  let requests = 0; // read-backs and resends so far
  let previousDelayInMs = 0;
  for (;;) {
    if (requests > 0) {
      previousDelayInMs = options.backoff.delayInMs(requests, previousDelayInMs);
      await sleep(previousDelayInMs, options.abortSignal);
    }
    requests++;
    let now: CellVersion<unknown> | undefined;
    try {
      now = await readBack(cell, options);
    } catch (readError) {
      if (classifyError(readError).kind === "cancelled") throw readError;
      if (classifyError(readError).transient && requests < MAX_SETTLING_REQUESTS) continue;
      throw new OptimisticOutcomeUnknownError(
        cell.description,
        "reading it back to check failed too",
        writeError,
        readError,
      );
    }
    const verdict = write.judge(now);
    if (verdict === "applied") return { kind: "recognised", now: now! };
    if (verdict === "not-applied") return { kind: "refused", error: writeError, notSent: false, superseded: true };
    if (verdict === "unknown") {
      throw new OptimisticOutcomeUnknownError(
        cell.description,
        "the write history it was built on was replaced since (by a writer outside this library, a last-writer-wins write " +
          "or a delete), or more writers than the history remembers wrote since",
        writeError,
      );
    }
    // Unchanged: not applied so far, and a send still on its way could land. Send it again.
    if (requests >= MAX_SETTLING_REQUESTS) {
      throw new OptimisticOutcomeUnknownError(
        cell.description,
        "it is not in the cell, which is unchanged, and sending it again got no answer that settles it",
        writeError,
      );
    }
    requests++;
    const again = await send(cell, write, options.abortSignal, options.recoveryTimeoutInMs);
    if (again.ok) return { kind: "written", etag: again.etag };
    if (classifyError(again.error).kind === "cancelled") throw again.error;
    writeError = again.error; // whatever the answer, an earlier send may still be on its way: read back again
  }
}

/**
 * The answers that mean "someone else wrote first": 412 (ETag no longer matches; not a lease
 * refusal), 409 when creating something that now exists or when another writer holds the lease
 * that serialises writers (container metadata), and 404 when updating something that was deleted
 * meanwhile (not a missing container or table).
 */
export function isWriteConflict(error: unknown): boolean {
  const status = statusOf(error);
  const code = serviceCodeOf(error) ?? "";
  if (status === 412) return !/^Lease/.test(code);
  if (status === 409) return /AlreadyExists$|^LeaseAlreadyPresent$|BeingDeleted$/.test(code);
  if (status === 404) return !/^(ContainerNotFound|TableNotFound)$/.test(code);
  return false;
}

type Sent = { readonly ok: true; readonly etag: string } | Failed;
interface Failed {
  readonly ok: false;
  readonly error: unknown;
  /** The cell said that nothing was sent. */
  readonly notSent: boolean;
  /** How many times the cell sent the request (0: it does not count). */
  readonly sends: number;
}

/** Sends the write once (the SDK's own retries included); a resend has a client-side time limit. */
async function send(
  cell: VersionedCell<unknown>,
  write: PlannedWrite,
  abortSignal: AbortSignal | undefined,
  timeoutInMs?: number,
): Promise<Sent> {
  let sends = 0;
  const options = (signal: AbortSignal | undefined) => ({
    abortSignal: signal,
    condition: write.condition,
    log: write.log,
    base: write.base,
    onSend: () => void sends++,
  });
  try {
    const etag =
      timeoutInMs === undefined
        ? await cell.write(write.content, options(abortSignal))
        : await withTimeLimit(`send the write to ${cell.description} again`, timeoutInMs, abortSignal, (signal) =>
            cell.write(write.content, options(signal)),
          );
    return { ok: true, etag };
  } catch (thrown) {
    const notSent = thrown instanceof WriteNotSent;
    return { ok: false, error: notSent ? thrown.cause : thrown, notSent, sends };
  }
}

/** See the module notes: a failure that cannot have been applied. */
function refusedForSure(failure: Failed): boolean {
  if (failure.notSent) return true;
  if (mayHaveBeenApplied(failure.error)) return false;
  if (failure.sends === 1) return true;
  if (failure.sends > 1) return false;
  return !isWriteConflict(failure.error);
}

async function readBack(
  cell: VersionedCell<unknown>,
  { abortSignal, recoveryTimeoutInMs }: SettlingOptions,
): Promise<CellVersion<unknown> | undefined> {
  const read = await withTimeLimit(`read ${cell.description} back`, recoveryTimeoutInMs, abortSignal, (signal) =>
    cell.read({ abortSignal: signal }),
  );
  return read === NOT_MODIFIED ? undefined : read;
}
