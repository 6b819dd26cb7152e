/**
 * The coalescing queue: who shares a round. Every call of `optimisticUpdate` is a participant
 * (`participant.ts`). With coalescing (the default), calls on the same cell made while a round is
 * running wait for the next round and share it; without, each call runs a round of its own. A
 * cell's rounds run one after another. The queue is part of the cell's state (`process-state.ts`),
 * which every round on the cell is handed.
 *
 * A round runs with the options of the participant that opened it, holds one writer slot for its
 * whole life (`process-state.ts`), and is cancelled only when every participant's signal has aborted.
 */
import { runInScope } from "../observability/scope.js";
import type { VersionedCell } from "./cell.js";
import type { Participant } from "./participant.js";
import { acquireSlot, releaseSlot, type CellState } from "./process-state.js";
import { runRound } from "./round.js";

/**
 * Joins the next round for the cell (whose state is `state`), opening one (on the next microtask, so
 * that calls made together share it).
 */
export function enqueue<T>(state: CellState, cell: VersionedCell<T>, participant: Participant<T>): void {
  if (state.queue) {
    state.queue.waiting.push(participant as Participant<unknown>);
    return;
  }
  state.queue = { cell, waiting: [participant as Participant<unknown>] };
  // A resolved promise's reaction rather than queueMicrotask, which makes an AsyncResource per call.
  void Promise.resolve(state).then(drain);
}

/** Runs rounds for one cell one after another, each with every update that arrived meanwhile. */
async function drain(state: CellState): Promise<void> {
  for (;;) {
    const queue = state.queue!;
    if (queue.waiting.length === 0) {
      state.queue = undefined;
      return;
    }
    await openRound(state, queue.cell, queue.waiting.splice(0));
  }
}

/** One round for `participants`, with the options of the first of them. Settles every participant. */
export async function openRound<T>(
  state: CellState,
  cell: VersionedCell<T>,
  participants: Participant<T>[],
): Promise<void> {
  const slot = acquireSlot();
  const combined = participants.length === 1 ? undefined : allAborted(participants as Participant<unknown>[]);
  const abortSignal = combined ? combined.signal : participants[0]!.abortSignal;
  try {
    const settings = { ...participants[0]!.settings, abortSignal };
    await runInScope(settings.observation, () => runRound(state, cell, participants, settings, slot.slot));
  } catch (error) {
    for (const p of participants) p.fail(error);
  } finally {
    combined?.dispose();
    releaseSlot(slot);
  }
}

/** A signal that aborts once every participant's own signal has (a round shared by several callers). */
function allAborted(participants: readonly Participant<unknown>[]) {
  const controller = new AbortController();
  const signals = participants.map((p) => p.abortSignal);
  const check = () => {
    if (signals.every((s) => s?.aborted)) controller.abort(signals[0]!.reason);
  };
  for (const s of signals) s?.addEventListener("abort", check, { once: true });
  return {
    signal: controller.signal,
    dispose: () => signals.forEach((s) => s?.removeEventListener("abort", check)),
  };
}
