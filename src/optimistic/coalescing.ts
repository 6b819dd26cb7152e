/**
 * The coalescing queue: who shares a round. Every call of `optimisticUpdate` is a participant with
 * its own promise. With coalescing (the default), calls on the same cell (`VersionedCell.key`) made
 * while a round is running wait for the next round and share it; without, each call runs a round of
 * its own. A cell's rounds run one after another.
 *
 * A participant settles exactly once: with its own outcome when the round ends, with its own error
 * when its `mutate` throws, or with its signal's reason the moment its signal aborts. A round runs
 * with the options of the participant that opened it, holds one writer slot for its whole life
 * (`process-state.ts`), and is cancelled only when every participant's signal has aborted.
 */
import { runInScope, type Scope } from "../observability/scope.js";
import type { BackoffStrategy } from "../retry/index.js";
import type { VersionedCell } from "./cell.js";
import { acquireSlot, releaseSlot } from "./process-state.js";
import { runRound } from "./round.js";
import type { Mutation, OptimisticConflictEvent, OptimisticUpdateResult } from "./types.js";

/** The options of a round, checked. */
export interface Settings {
  readonly abortSignal: AbortSignal | undefined;
  readonly maxAttempts: number;
  readonly backoff: BackoffStrategy;
  readonly skipReadAfterOwnWrite: boolean;
  readonly coalesce: boolean;
  readonly onConflict: ((event: OptimisticConflictEvent) => void) | undefined;
  readonly recoveryTimeoutInMs: number;
  /** The call's span and metrics, when OpenTelemetry records (`src/observability`). */
  readonly observation: Scope | undefined;
}

/** One call of `optimisticUpdate`, waiting for its outcome. */
export interface Participant<T> {
  readonly mutate: Mutation<T>;
  readonly abortSignal: AbortSignal | undefined;
  readonly settings: Settings;
  /** True once it resolved or rejected; a settled participant takes no further part in any round. */
  settled: boolean;
  succeed(result: OptimisticUpdateResult<T>): void;
  fail(error: unknown): void;
}

/** Makes the participant for one call, and the promise its caller awaits. */
export function join<T>(mutate: Mutation<T>, settings: Settings) {
  const { abortSignal } = settings;
  let resolve!: (result: OptimisticUpdateResult<T>) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<OptimisticUpdateResult<T>>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  const onAbort = () => participant.fail(abortSignal!.reason);
  const finish = () => {
    participant.settled = true;
    abortSignal?.removeEventListener("abort", onAbort);
  };
  const participant: Participant<T> = {
    mutate,
    abortSignal,
    settings,
    settled: false,
    succeed(result) {
      if (participant.settled) return;
      finish();
      resolve(result);
    },
    fail(error) {
      if (participant.settled) return;
      finish();
      reject(error);
    },
  };
  abortSignal?.addEventListener("abort", onAbort, { once: true });
  return { participant, promise };
}

const queues = new Map<string, { cell: VersionedCell<unknown>; waiting: Participant<unknown>[] }>();

/** Joins the next round for the cell, opening one (on the next microtask, so that calls made together share it). */
export function enqueue<T>(cell: VersionedCell<T>, participant: Participant<T>): void {
  const queued = queues.get(cell.key);
  if (queued) {
    queued.waiting.push(participant as Participant<unknown>);
    return;
  }
  queues.set(cell.key, { cell, waiting: [participant as Participant<unknown>] });
  queueMicrotask(() => void drain(cell.key));
}

/** Runs rounds for one cell one after another, each with every update that arrived meanwhile. */
async function drain(key: string): Promise<void> {
  for (;;) {
    const entry = queues.get(key)!;
    if (entry.waiting.length === 0) {
      queues.delete(key);
      return;
    }
    await openRound(entry.cell, entry.waiting.splice(0));
  }
}

/** One round for `participants`, with the options of the first of them. Settles every participant. */
export async function openRound<T>(cell: VersionedCell<T>, participants: Participant<T>[]): Promise<void> {
  const slot = acquireSlot();
  const combined = participants.length === 1 ? undefined : allAborted(participants as Participant<unknown>[]);
  const abortSignal = combined ? combined.signal : participants[0]!.abortSignal;
  try {
    const settings = { ...participants[0]!.settings, abortSignal };
    await runInScope(settings.observation, () => runRound(cell, participants, settings, slot.slot));
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
