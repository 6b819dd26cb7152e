/**
 * One read-modify-write round over a cell, for the participants sharing it (`coalescing.ts`):
 *
 * 1. Start from the version this process wrote last (the write-skip cache, in the cell's state that
 *    the round is handed: `process-state.ts`), or read the cell; on a contended cell the process
 *    reads anyway once in a while, after a pause that hands the cell over to the writers waiting
 *    (`turns.ts`).
 * 2. Run the participants' mutations in call order over it (`mutations.ts`).
 * 3. Write the result with `If-Match` (or `If-None-Match: *` when the cell is absent), storing the
 *    next write history (`write-log.ts`), and settle the write's outcome (`write-outcome.ts`).
 *    A cached version is a guess (another process may have written since): the `If-Match` write
 *    proves it, or refutes it with a 412. A pass that writes nothing proves nothing, so over a
 *    guess it is settled only after a read (`If-None-Match` on the cached ETag) finds the cell
 *    still on that version; otherwise the pass runs again on the version read, as after a 412.
 * 4. Written (or recognised as applied after a lost response): every participant gets its outcome.
 *    A conflict (someone else wrote first), or a write the cell could not send for a transient
 *    failure of a request before it: wait (jittered backoff, capped on a contended cell), read
 *    again and go back to 2, up to `maxAttempts` times. Anything else rejects every participant
 *    still waiting.
 *
 * Transient failures (503, resets) are the SDK pipeline's job, as everywhere in this library; the
 * engine sends a write again only to settle one whose outcome it could not tell.
 */
import { classifyError, wrapStorageError } from "../retry/index.js";
import { logger } from "../internal/logger.js";
import { noteConflict } from "./telemetry.js";
import { sleep } from "../internal/sleep.js";
import type { CellVersion, VersionedCell } from "./cell.js";
import { NOT_MODIFIED } from "./cell.js";
import { OptimisticConflictError } from "./errors.js";
import { runPass, type Pass } from "./mutations.js";
import type { Participant, Settings } from "./participant.js";
import { forgetVersion, rememberVersion, type CellState } from "./process-state.js";
import {
  handOverPause,
  maxWaitAfterConflict,
  noteLostWrite,
  noteRead,
  noteRequestTime,
  noteWrite,
  type Turns,
} from "./turns.js";
import { isWriteConflict, writeAndSettle } from "./write-outcome.js";
import { formatWriteLog, judgeWrite, newWriteId, nextWriteLog, parseWriteLog, type WriteLog } from "./write-log.js";

/**
 * Runs the round over the cell whose state (turns, cached version) is `state`; resolves once every
 * participant has its outcome, rejects with the round's failure.
 */
export async function runRound<T>(
  state: CellState,
  cell: VersionedCell<T>,
  participants: readonly Participant<T>[],
  settings: Settings,
  slot: string,
): Promise<void> {
  const { abortSignal } = settings;
  const { turns } = state;
  let base = settings.skipReadAfterOwnWrite ? state.version : undefined;
  let handOver = base && (await handOverTurn(turns, base.etag, abortSignal));
  if (handOver) base = undefined;
  // While `base` comes from the cache it is a guess, to be proven before anything is settled on it.
  let guess = base !== undefined;
  let unread = !guess;
  let previousDelayInMs = 0;
  for (let attempt = 1; ; attempt++) {
    if (unread) {
      const read = await readNoting(cell, turns, abortSignal, handOver);
      base = read === NOT_MODIFIED ? undefined : read;
      handOver = undefined;
    }
    unread = true;
    const mutated = runPass(cell, participants, base, attempt, guess);
    const pass = mutated instanceof Promise ? await mutated : mutated;
    if (pass === undefined) return; // every participant failed or was cancelled
    if (!pass.changed) {
      if (guess) {
        // No write will prove the guess: read whether the cell still has it.
        guess = false;
        const now = await readNoting(cell, turns, abortSignal, undefined, base);
        if (now !== NOT_MODIFIED) {
          base = now; // someone wrote since: the pass again, on what they wrote
          unread = false;
          continue;
        }
      }
      settle(cell, pass, base?.etag, attempt, false);
      return;
    }
    const skippedRead = guess;
    guess = false;

    const writer = { slot, id: newWriteId() };
    const written = nextWriteLog(base, writer);
    const log = formatWriteLog(written);
    const from = base;
    const sentAt = performance.now();
    const outcome = await writeAndSettle(
      cell,
      {
        content: pass.sent,
        condition: from ? { ifMatch: from.etag } : { ifNoneMatch: "*" },
        log,
        base: from,
        judge: (now) => judgeWrite(now, from, writer, written),
      },
      settings,
    );
    if (outcome.kind === "written") {
      noteWrite(turns, performance.now() - sentAt, skippedRead);
      const version = { content: pass.stored, etag: outcome.etag, log, extras: from?.extras };
      rememberVersion(state, version, cell.sizeInBytes?.(pass.stored));
      settle(cell, pass, outcome.etag, attempt, false);
      return;
    }
    // A throttled write (503 ServerBusy, 429: refused for sure) leaves the cached version as good a
    // guess as it was, its If-Match still the proof: the next attempt need not spend a read on a
    // partition already over its limit (docs/throttling.md).
    if (!(outcome.kind === "refused" && classifyError(outcome.error).kind === "throttled")) forgetVersion(state);
    if (outcome.kind === "recognised") {
      logger.info(`a write to ${cell.description} whose response was lost had been applied; counted once`);
      const { now } = outcome;
      if (isHeadedBy(now.log, written)) rememberVersion(state, now, cell.sizeInBytes?.(now.content));
      settle(cell, pass, now.etag, attempt, true);
      return;
    }
    // Refused: a conflict (also a write in doubt that reading back found superseded by another
    // writer's), or a transient failure of a request the cell makes before its write (the
    // container-metadata cell's lease), is tried again after a wait; anything else fails.
    const { error } = outcome;
    const conflict = outcome.superseded === true || isWriteConflict(error);
    const nothingWritten = () => wrapStorageError(error, `write ${cell.description} (nothing was written)`);
    if (!conflict && !(outcome.notSent && classifyError(error).transient)) throw nothingWritten();
    if (attempt >= settings.maxAttempts) {
      throw conflict ? new OptimisticConflictError(cell.description, attempt, error) : nothingWritten();
    }
    if (conflict) noteLostWrite(turns);
    // The caller's backoff, capped on a contended cell so that waiting writers still take turns (`turns.ts`).
    const delayInMs = Math.min(settings.backoff.delayInMs(attempt, previousDelayInMs), maxWaitAfterConflict(turns));
    previousDelayInMs = delayInMs;
    const why = conflict ? "conflict" : "write not sent";
    logger.verbose(`${why} on ${cell.description} (attempt ${attempt}); reading again in ${Math.round(delayInMs)} ms`);
    if (conflict) settings.onConflict?.({ cell: cell.description, attempt, delayInMs, error });
    if (conflict) noteConflict(participants, attempt, delayInMs);
    await sleep(delayInMs, abortSignal);
  }
}

/**
 * When this process should hand a contended cell over (`turns.ts`) before writing again: waits the
 * pause and answers the ETag it wrote last, for the read that follows; otherwise answers undefined.
 */
async function handOverTurn(turns: Turns, ownEtag: string, abortSignal: AbortSignal | undefined) {
  const pauseInMs = handOverPause(turns);
  if (pauseInMs === undefined) return undefined;
  if (pauseInMs > 0) await sleep(pauseInMs, abortSignal);
  return { ownEtag };
}

/** Gives every participant of the pass its outcome. */
function settle<T>(
  cell: VersionedCell<T>,
  pass: Pass<T>,
  etag: string | undefined,
  attempts: number,
  recoveredLostResponse: boolean,
): void {
  const coalesced = pass.steps.filter((s) => s.written).length;
  for (const { participant, error } of pass.threw) participant.fail(error); // its base is proven now
  for (const step of pass.steps) {
    const round = { etag, attempts, recoveredLostResponse, coalesced };
    step.participant.succeed(
      step.written
        ? { written: true, value: step.value, ...round }
        : { written: false, value: step.content === undefined ? undefined : cell.decode(step.content), ...round },
    );
  }
}

/**
 * Reads the current version, noting the request's time and the history read for the turns
 * (`turns.ts`). With `cached`: {@link NOT_MODIFIED} when the cell still has that version (asked
 * with `If-None-Match`; cells that cannot ask compare the ETag read).
 */
async function readNoting<T>(
  cell: VersionedCell<T>,
  turns: Turns,
  abortSignal: AbortSignal | undefined,
  handOver: { readonly ownEtag: string } | undefined,
  cached?: CellVersion<unknown>,
): Promise<CellVersion<unknown> | undefined | typeof NOT_MODIFIED> {
  const readAt = performance.now();
  let read;
  try {
    read = await cell.read({ abortSignal, ifNoneMatch: cached?.etag });
  } catch (error) {
    throw wrapStorageError(error, `read ${cell.description}`);
  }
  noteRequestTime(turns, performance.now() - readAt);
  const version = read === NOT_MODIFIED ? cached : read;
  noteRead(turns, version, handOver);
  return cached !== undefined && version?.etag === cached.etag ? NOT_MODIFIED : version;
}

/** True when the version's history is exactly the one `written` stored (nobody wrote on top since). */
function isHeadedBy(log: string | undefined, written: WriteLog): boolean {
  const current = parseWriteLog(log);
  return current !== undefined && current.chain === written.chain && current.seq === written.seq;
}
