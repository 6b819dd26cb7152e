/**
 * The optimistic engine's write operations and their contract, for the fault-placement explorer
 * (tests/support/explorer.ts), written once for every cell kind: each cell holds a counter, and each
 * operation is judged by what storage holds afterwards, read directly.
 *
 * The contract:
 * - told "written": the change is stored exactly once (a lost or doubled increment is a violation);
 * - told a definite failure: nothing of it is stored;
 * - told "unknown" (`OptimisticOutcomeUnknownError`): either is stored, but only where no read could
 *   decide: a fault must have hit a read made after the first fault (the read-back). A single fault,
 *   or faults on writes alone, must end in a definite outcome;
 * - what the other properties of the cell held is kept (a Merge cell keeps what it was not sent).
 */
import type { VersionedCell } from "../../../src/index.js";
import {
  isOptimisticOutcomeUnknownError,
  optimisticUpdate,
  readCell,
  writeIfMatch,
  writeLastWriterWins,
} from "../../../src/index.js";
import {
  describeError,
  type ExploredOperation,
  type RunTrace,
  type Settled,
  type Verdict,
  type Via,
} from "../../support/explorer.js";

/** Time allowed to explore one operation: generous, for the exhaustive run (`ASC_EXPLORE_PAIRS=all`). */
export const EXPLORE_TIMEOUT_IN_MS = process.env.ASC_EXPLORE_PAIRS === "all" ? 3_600_000 : 300_000;

/** A cell kind, seen as a counter: where one lives, how to reach it, and how to count. */
export interface CounterCell<T> {
  /** The cell kind in the table, e.g. `blob JSON`. */
  readonly kind: string;
  /** A fresh place for a counter, holding `start` (absent when undefined), written directly. */
  place(start: number | undefined): Promise<string>;
  /** The cell at `place`, through the explorer's proxies and SDK retry settings. */
  via(via: Via, place: string): VersionedCell<T>;
  /** The cell at `place`, directly. */
  direct(place: string): VersionedCell<T>;
  /** The counter's value in `value`. */
  count(value: T | undefined): number | undefined;
  /** The value `mutate` returns to add one (a Merge cell returns the counter alone). */
  increment(current: T | undefined): T;
  /** A whole value holding `n`, as a fresh place holds it. */
  whole(n: number): T;
  /** Checks the rest of the stored value (say, a property a Merge write must keep); a message when broken. */
  checkRest?(stored: T | undefined, start: number | undefined): string | undefined;
}

interface CounterState {
  readonly place: string;
  readonly start: number | undefined;
  readonly etag: string | undefined;
}

/** Every operation to explore for a cell kind: updates (create, update, skip-read), writeIfMatch, last writer wins. */
export function counterOperations<T>(cell: CounterCell<T>): ExploredOperation<CounterState, number>[] {
  const setup = (start: number | undefined) => async (): Promise<CounterState> => {
    const place = await cell.place(start);
    const read = await readCell(cell.direct(place));
    return { place, start, etag: read.exists ? read.etag : undefined };
  };
  const name = (operation: string) => `${cell.kind}: ${operation}`;
  const increments = (operation: string, start: number | undefined, times: number) => ({
    name: name(operation),
    setup: setup(start),
    async run(state: CounterState, via: Via) {
      const target = cell.via(via, state.place);
      for (let i = 0; i < times; i++) {
        try {
          await optimisticUpdate(target, (current) => cell.increment(current));
        } catch (error) {
          throw Object.assign(error as object, { completed: i });
        }
      }
      return (state.start ?? 0) + times;
    },
    judge: judgeCounter(cell, (state) => (state.start ?? 0) + times),
  });
  return [
    increments("optimisticUpdate (create)", undefined, 1),
    increments("optimisticUpdate (update)", 5, 1),
    increments("optimisticUpdate x2 (skip-read)", 5, 2),
    {
      name: name("writeIfMatch"),
      setup: setup(5),
      async run(state, via) {
        const result = await writeIfMatch(cell.via(via, state.place), state.etag!, cell.whole(6));
        if (!result.written)
          throw Object.assign(new Error("told someone else saved first; nobody did"), { refused: true });
        return 6;
      },
      judge: judgeCounter(cell, () => 6),
    },
    {
      name: name("writeLastWriterWins"),
      setup: setup(5),
      run: async (state, via) => (await writeLastWriterWins(cell.via(via, state.place), cell.whole(9)), 9),
      judge: judgeCounter(cell, () => 9),
    },
    {
      name: name("writeLastWriterWins (create)"),
      setup: setup(undefined),
      run: async (state, via) => (await writeLastWriterWins(cell.via(via, state.place), cell.whole(9)), 9),
      judge: judgeCounter(cell, () => 9),
    },
  ];
}

/**
 * The contract (see the module notes). `target` is the counter once the whole operation is applied;
 * an operation of increments that failed part-way sets `completed` on its error.
 */
function judgeCounter<T>(cell: CounterCell<T>, target: (state: CounterState) => number) {
  return async (state: CounterState, result: Settled<number>, trace: RunTrace): Promise<Verdict> => {
    const read = await readCell(cell.direct(state.place));
    const value = read.exists ? read.value : undefined;
    const now = cell.count(value);
    const rest = cell.checkRest?.(value, state.start);
    if (result.ok) {
      const outcome = "written";
      if (now !== result.value) return { outcome, violation: `told written (${result.value}), stored ${show(now)}` };
      return rest ? { outcome, violation: rest } : { outcome };
    }
    const error = result.error;
    if ((error as { refused?: boolean }).refused) return { outcome: "refused", violation: describeError(error) };
    const completed = (error as { completed?: number }).completed;
    // What was told written: every increment before the failing one; for single writes, nothing.
    const told = completed ? (state.start ?? 0) + completed : state.start;
    const unknown = isOptimisticOutcomeUnknownError(error);
    const outcome = unknown ? "unknown" : `failed: ${describeError(error)}`;
    const next = completed === undefined ? target(state) : (state.start ?? 0) + completed + 1;
    const allowed = unknown ? [told, next] : [told];
    if (!allowed.includes(now)) {
      return { outcome, violation: `${outcome}, told ${show(told)} stored, stored ${show(now)}` };
    }
    if (unknown && !readFaultedAfterFirst(trace)) {
      return { outcome, violation: "unknown, although no fault hit the read that should have decided it" };
    }
    return rest ? { outcome, violation: rest } : { outcome };
  };
}

/** Whether a fault hit a read (GET/HEAD) made after the first fault: only then may a read not have decided. */
function readFaultedAfterFirst(trace: RunTrace): boolean {
  const [first, ...later] = trace.fired;
  return first !== undefined && later.some((r) => r.method === "GET" || r.method === "HEAD");
}

function show(n: number | undefined): string {
  return n === undefined ? "nothing" : String(n);
}
