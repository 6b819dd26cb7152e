/**
 * One pass of a round's mutations: every waiting caller's `mutate`, in call order, each on the value
 * the previous one left, over one stored version.
 *
 * What a pass guarantees the round:
 * - every caller is handed the whole value, a copy of its own: for a cell whose write changes only
 *   what it is given (a table entity in Merge mode, `VersionedCell.mergeWrite`), a caller's partial
 *   value is merged onto what the previous callers left, and what is sent is the union of the
 *   callers' changes;
 * - a caller whose `mutate` throws (or returns something the cell refuses) is rejected with that
 *   error and contributes nothing. Over a version remembered but not read (the write-skip cache),
 *   the rejection waits in `threw` until the round has proven that version current (a throw on a
 *   stale guess decides nothing): the round rejects it then, or runs the caller again on what it
 *   reads;
 * - no caller that settled before the write is in it: when one settles during the pass (its signal
 *   aborted while another caller's `mutate` was awaited), the pass runs again without it, because the
 *   callers after it computed their values from its change.
 */
import type { CellVersion, VersionedCell } from "./cell.js";
import type { Participant } from "./participant.js";
import { SKIP_WRITE, type MutationContext } from "./types.js";

/** What one caller's `mutate` did in a pass: what it returned (written), or nothing (skipped: decoded from `content` later). */
type Step<T> = {
  readonly participant: Participant<T>;
  /** What the cell holds after this step, in its stored form (the whole value). */
  readonly content: unknown;
} & ({ readonly written: true; readonly value: T } | { readonly written: false; readonly value: undefined });

/** A finished pass: each live caller's step, and what to write. */
export interface Pass<T> {
  readonly steps: readonly Step<T>[];
  /** The callers whose `mutate` threw over a version still to be proven, with their errors (see the module notes). */
  readonly threw: readonly { readonly participant: Participant<T>; readonly error: unknown }[];
  /** Whether any caller changed the value (otherwise nothing is written). */
  readonly changed: boolean;
  /** What the cell will hold after the write (the whole value). */
  readonly stored: unknown;
  /** What to send: `stored`, or for a merging cell the union of the callers' changes. */
  readonly sent: unknown;
}

/** A pass under way. */
interface Running<T> {
  readonly cell: VersionedCell<T>;
  readonly live: readonly Participant<T>[];
  readonly base: CellVersion<unknown> | undefined;
  readonly attempt: number;
  /** `base` is this process's guess (its last write, not read): hold the rejections of throwing callers. */
  readonly guess: boolean;
  readonly steps: Step<T>[];
  readonly threw: { readonly participant: Participant<T>; readonly error: unknown }[];
  /** What the cell holds after the steps so far. */
  stored: unknown;
  /** The union of the changes so far (merging cells), or the last value written. */
  sent: unknown;
  /** What the next caller is given. */
  current: T | undefined;
}

/**
 * Runs the live participants' mutations over `base` (with `guess`: a version remembered, not read);
 * `undefined` when none is left. Synchronous while the mutations are (the common case), and free of
 * per-call closures: this runs between the read and the write of every update, where each
 * microsecond shows.
 */
export function runPass<T>(
  cell: VersionedCell<T>,
  participants: readonly Participant<T>[],
  base: CellVersion<unknown> | undefined,
  attempt: number,
  guess = false,
): Pass<T> | undefined | Promise<Pass<T> | undefined> {
  const live = participants.filter((p) => !p.settled);
  if (live.length === 0) return undefined;
  // A content error here (say, a JSON blob that does not parse) rejects the whole round: nothing is written.
  const current = base === undefined ? undefined : cell.decode(base.content);
  const pass: Running<T> = {
    cell,
    live,
    base,
    attempt,
    guess,
    steps: [],
    threw: [],
    stored: base?.content,
    sent: undefined,
    current,
  };
  for (let index = 0; index < live.length; index++) {
    const participant = live[index]!;
    if (participant.settled) continue;
    try {
      const next = participant.mutate(pass.current, mutationContext(pass, participant));
      if (isPromiseLike(next)) return continueAsync(pass, index, next);
      recordStep(pass, participant, next);
    } catch (error) {
      refuse(pass, participant, error);
    }
    afterStep(pass);
  }
  return finish(pass);
}

/** The rest of {@link runPass} once a mutation returned a promise; runs the pass again if someone settled meanwhile. */
async function continueAsync<T>(
  pass: Running<T>,
  from: number,
  pending: PromiseLike<T | typeof SKIP_WRITE>,
): Promise<Pass<T> | undefined> {
  for (let index = from; index < pass.live.length; index++) {
    const participant = pass.live[index]!;
    if (index !== from && participant.settled) continue;
    try {
      const next = await (index === from
        ? pending
        : participant.mutate(pass.current, mutationContext(pass, participant)));
      recordStep(pass, participant, next);
    } catch (error) {
      refuse(pass, participant, error);
    }
    afterStep(pass);
  }
  return finish(pass);
}

/** A caller's `mutate` threw: rejected now, or once the version it ran on is proven current (a guess). */
function refuse<T>(pass: Running<T>, participant: Participant<T>, error: unknown): void {
  if (pass.guess && !participant.settled) pass.threw.push({ participant, error });
  else participant.fail(error);
}

/** The pass's result; or, when a caller settled (was cancelled) after its step, the pass again without it. */
function finish<T>(pass: Running<T>): Pass<T> | undefined | Promise<Pass<T> | undefined> {
  // The callers after it computed their values from its change: run them again without it.
  if (pass.steps.some((s) => s.participant.settled)) {
    return runPass(pass.cell, pass.live, pass.base, pass.attempt, pass.guess);
  }
  if (pass.steps.length === 0 && pass.threw.length === 0) return undefined;
  const changed = pass.steps.some((s) => s.written);
  return { steps: pass.steps, threw: pass.threw, changed, stored: pass.stored, sent: pass.sent };
}

function mutationContext<T>(pass: Running<T>, participant: Participant<T>): MutationContext {
  return {
    attempt: pass.attempt,
    etag: pass.base?.etag,
    abortSignal: participant.abortSignal ?? new AbortController().signal,
  };
}

/** Records what a mutation returned; throws (for its participant alone) when the value is refused. */
function recordStep<T>(pass: Running<T>, participant: Participant<T>, next: T | typeof SKIP_WRITE): void {
  if (participant.settled) return; // cancelled while its own mutation ran: it takes no part
  if (next === undefined) {
    throw new TypeError(
      `\`mutate\` returned undefined for ${pass.cell.description}: return the new value, or SKIP_WRITE to leave the cell as it is.`,
    );
  }
  if (next === SKIP_WRITE) {
    pass.steps.push({ participant, written: false, value: undefined, content: pass.stored });
    return;
  }
  const encoded = pass.cell.encode(next);
  const merge = pass.cell.mergeWrite?.bind(pass.cell);
  if (merge) {
    pass.stored = pass.stored === undefined ? encoded : merge(pass.stored, encoded);
    pass.sent = pass.sent === undefined ? encoded : merge(pass.sent, encoded);
  } else {
    pass.stored = encoded;
    pass.sent = encoded;
  }
  pass.steps.push({ participant, written: true, value: next, content: pass.stored });
}

/** The next caller gets a copy of its own, so nobody's value is changed behind its back. */
function afterStep<T>(pass: Running<T>): void {
  if (pass.live.length > 1) pass.current = pass.stored === undefined ? undefined : pass.cell.decode(pass.stored);
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === "function";
}
