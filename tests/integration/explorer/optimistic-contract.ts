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
 *
 * The stale-cache dimension ({@link staleCacheOperations}, issue 21): this process wrote the cell
 * last (its write-skip cache holds the version), another writer wrote since, and this process's
 * next update runs a `mutate` that changes the value, returns it unchanged, or returns `SKIP_WRITE`.
 * Besides the above, what the caller is told must hold for the cell as it is now: `mutate` decided on
 * the current value (so "written" stores what it computes from it, and a skip is told only when the
 * current value calls for one), and the value reported is the one stored.
 */
import type { VersionedCell } from "../../../src/optimistic/index.js";
import { AdaptiveRateLimiter } from "../../../src/throttling/index.js";
import {
  isOptimisticOutcomeUnknownError,
  optimisticUpdate,
  readCell,
  SKIP_WRITE,
  writeIfMatch,
  writeLastWriterWins,
} from "../../../src/optimistic/index.js";
import {
  describeError,
  type ExploreOptions,
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

/** The updates (create, update, skip-read) with their requests sent through a fresh adaptive limiter each run (issue 26). */
export function limitedUpdates<T>(cell: CounterCell<T>): ExploredOperation<CounterState, number>[] {
  // A high floor keeps the waits after an injected 503 short; the wait, record and cut paths all run.
  const limiter = () => new AdaptiveRateLimiter({ minRatePerSec: 200 });
  return counterOperations(cell, limiter).filter((operation) => operation.name.includes("optimisticUpdate"));
}

/** Every operation to explore for a cell kind: updates (create, update, skip-read), writeIfMatch, last writer wins. */
/**
 * The client-side time limit of each request in these runs (`requestTimeoutInMs`, and
 * `recoveryTimeoutInMs` for the settling requests): what a hang costs. Every request of the engine
 * has one, so the operations are explored with hangs too (`TIMEOUT_FAULT_KINDS`).
 */
const LIMITS = { requestTimeoutInMs: 1_000, recoveryTimeoutInMs: 1_000 } as const;

export function counterOperations<T>(
  cell: CounterCell<T>,
  rateLimiter?: () => AdaptiveRateLimiter,
): ExploredOperation<CounterState, number>[] {
  const setup = (start: number | undefined) => async (): Promise<CounterState> => {
    const place = await cell.place(start);
    const read = await readCell(cell.direct(place));
    return { place, start, etag: read.exists ? read.etag : undefined };
  };
  const name = (operation: string) => `${cell.kind}: ${operation}${rateLimiter ? ", adaptive limiter" : ""}`;
  const increments = (operation: string, start: number | undefined, times: number) => ({
    name: name(operation),
    setup: setup(start),
    async run(state: CounterState, via: Via) {
      const target = cell.via(via, state.place);
      const limiter = rateLimiter?.();
      for (let i = 0; i < times; i++) {
        try {
          await optimisticUpdate(target, (current) => cell.increment(current), {
            ...LIMITS,
            ...(limiter ? { rateLimiter: limiter } : {}),
          });
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
        const result = await writeIfMatch(cell.via(via, state.place), state.etag!, cell.whole(6), LIMITS);
        if (!result.written)
          throw Object.assign(new Error("told someone else saved first; nobody did"), { refused: true });
        return 6;
      },
      judge: judgeCounter(cell, () => 6),
    },
    {
      name: name("writeLastWriterWins"),
      setup: setup(5),
      run: async (state, via) => (await writeLastWriterWins(cell.via(via, state.place), cell.whole(9), LIMITS), 9),
      judge: judgeCounter(cell, () => 9),
    },
    {
      name: name("writeLastWriterWins (create)"),
      setup: setup(undefined),
      run: async (state, via) => (await writeLastWriterWins(cell.via(via, state.place), cell.whole(9), LIMITS), 9),
      judge: judgeCounter(cell, () => 9),
    },
  ];
}

/**
 * How the stale-cache operations are explored in `npm test`: single faults with the SDK's retries off
 * (each fault reaches the library), to keep them cheap; `ASC_EXPLORE_PAIRS=all` adds retries on and
 * every pair.
 */
export const STALE_CACHE_EXPLORE: ExploreOptions =
  process.env.ASC_EXPLORE_PAIRS === "all" ? { pairs: "all" } : { sdkRetries: ["off"] };

/** The counter this process wrote last, so that its write-skip cache holds it. */
const CACHED = 10;

/** A `mutate` of the stale-cache dimension: what it does on the value it is given, and what the contract expects. */
interface StaleMutation {
  readonly name: string;
  /** What the other writer stores after this process's last write (undefined: nobody writes). */
  readonly other: number | undefined;
  /** The counter `mutate` computes from `n`, or `SKIP_WRITE`. */
  decide(n: number): number | typeof SKIP_WRITE;
}

const STALE_MUTATIONS: readonly StaleMutation[] = [
  { name: "mutate changes", other: 3, decide: (n) => n + 1 },
  { name: "mutate returns the same value", other: 3, decide: (n) => n },
  // Skips at the cached 10: on the current 3 it must add one.
  { name: "SKIP_WRITE on the cached value", other: 3, decide: (n) => (n >= CACHED ? SKIP_WRITE : n + 1) },
  { name: "SKIP_WRITE on both", other: 20, decide: (n) => (n >= CACHED ? SKIP_WRITE : n + 1) },
  // Nobody wrote since: the cached version is current, and the skip is proven by one read.
  { name: "SKIP_WRITE, cache current", other: undefined, decide: () => SKIP_WRITE },
];

interface StaleState extends CounterState {
  /** What the cell holds when the update starts (the other writer's value, or the cached one). */
  readonly current: number;
}

/** What the update told: written or skipped, the counter of the value reported, and its ETag. */
interface StaleTold {
  readonly written: boolean;
  readonly n: number | undefined;
  readonly etag: string | undefined;
}

/**
 * The stale-cache dimension for a cell kind (see the module notes): one operation per mutation.
 * Setup: this process creates the cell with 10 through the explorer's proxies (fault-free then),
 * which leaves 10 in its write-skip cache; another writer (through a cell of its own, which
 * continues the write history as another process of the library would) stores `other`.
 */
export function staleCacheOperations<T>(cell: CounterCell<T>): ExploredOperation<StaleState, StaleTold>[] {
  // A value holding n, as `mutate` returns it (a Merge cell: the counter alone).
  const holding = (n: number) => cell.increment(cell.whole(n - 1));
  const update = (via: Via, place: string, mutation: StaleMutation) =>
    optimisticUpdate(cell.via(via, place), (current) => {
      const n = cell.count(current) ?? 0;
      const next = mutation.decide(n);
      return next === SKIP_WRITE ? SKIP_WRITE : next === n ? current! : holding(next);
    });
  return STALE_MUTATIONS.map((mutation) => ({
    name: `${cell.kind}: stale cache, ${mutation.name}`,
    async setup(via: Via): Promise<StaleState> {
      const place = await cell.place(undefined);
      await optimisticUpdate(cell.via(via, place), () => cell.whole(CACHED));
      if (mutation.other !== undefined) {
        await optimisticUpdate(cell.direct(place), () => cell.whole(mutation.other!), { skipReadAfterOwnWrite: false });
      }
      return { place, start: CACHED, etag: undefined, current: mutation.other ?? CACHED };
    },
    async run(state: StaleState, via: Via): Promise<StaleTold> {
      const result = await update(via, state.place, mutation);
      return { written: result.written, n: cell.count(result.value), etag: result.etag };
    },
    judge: judgeStale(cell, mutation),
  }));
}

/** The stale-cache contract (see the module notes). */
function judgeStale<T>(cell: CounterCell<T>, mutation: StaleMutation) {
  return async (state: StaleState, result: Settled<StaleTold>, trace: RunTrace): Promise<Verdict> => {
    const read = await readCell(cell.direct(state.place));
    const now = cell.count(read.exists ? read.value : undefined);
    const rest = cell.checkRest?.(read.exists ? read.value : undefined, state.start);
    const decided = mutation.decide(state.current);
    const target = decided === SKIP_WRITE ? state.current : decided;
    if (result.ok) {
      const told = result.value;
      const outcome = told.written ? "written" : "skipped";
      const violation =
        told.written === (decided === SKIP_WRITE)
          ? `told ${outcome}, but mutate on the current value (${state.current}) ${decided === SKIP_WRITE ? "skips" : "writes"}`
          : now !== target
            ? `told ${outcome}, stored ${show(now)}, expected ${target}`
            : told.n !== now
              ? `told ${outcome} with value ${show(told.n)}, the cell holds ${show(now)}`
              : !told.written && read.exists && told.etag !== read.etag
                ? "skipped with an ETag the cell does not have"
                : rest;
      return violation ? { outcome, violation } : { outcome };
    }
    const unknown = isOptimisticOutcomeUnknownError(result.error);
    const outcome = unknown ? "unknown" : `failed: ${describeError(result.error)}`;
    const allowed = unknown ? [state.current, target] : [state.current];
    if (!allowed.includes(now!))
      return { outcome, violation: `${outcome}, stored ${show(now)}, started from ${state.current}` };
    if (unknown && !readFaultedAfterFirst(trace)) {
      return { outcome, violation: "unknown, although no fault hit the read that should have decided it" };
    }
    return rest ? { outcome, violation: rest } : { outcome };
  };
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
