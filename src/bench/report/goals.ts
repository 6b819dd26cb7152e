/**
 * The goals the issues set for the benchmark figures, checked against each scenario's JSON (the
 * report does not trust a scenario's own `goals` field: it reads the figure and compares). Goals of
 * a scenario that did not run (not registered yet, or not chosen) are left out.
 */
import { fmt, num, type ScenarioResult } from "./markdown.js";

/** One goal on one figure of one scenario's JSON. */
interface Goal {
  readonly scenario: string;
  /** A dotted path into the scenario's JSON. */
  readonly figure: string;
  readonly op: ">=" | "<=" | "=";
  readonly target: number;
  /** Where the goal comes from. */
  readonly source: string;
}

/** A goal with the measured figure. */
export interface GoalOutcome extends Goal {
  readonly value: number | undefined;
  readonly status: "met" | "not met" | "not reported";
}

const GOALS: readonly Goal[] = [
  { scenario: "optimistic", figure: "singleWriterRatio", op: ">=", target: 1.6, source: "issue 3" },
  { scenario: "optimistic", figure: "coalescedRatio", op: ">=", target: 10, source: "issue 3" },
  { scenario: "optimistic", figure: "overheadRatio", op: "<=", target: 1.05, source: "issue 3" },
  { scenario: "optimistic", figure: "fairnessIndex", op: ">=", target: 0.9, source: "issue 15" },
  { scenario: "optimistic", figure: "p99ToP50", op: "<=", target: 10, source: "issue 15" },
  { scenario: "optimistic", figure: "contendedRatio", op: ">=", target: 1.5, source: "issue 15 (was ≥ 0.7, issue 3)" },
  { scenario: "optimistic", figure: "requestsPerUpdate", op: "<=", target: 2, source: "issue 15 (was ≤ 3, issue 3)" },
  { scenario: "optimistic", figure: "requestsPerUpdate64", op: "<=", target: 3, source: "issue 15" },
  { scenario: "optimistic", figure: "minShareOfFair64", op: ">=", target: 0.5, source: "issue 15" },
  { scenario: "lock", figure: "overlaps", op: "=", target: 0, source: "issue 4" },
  { scenario: "lock", figure: "handoffMedianMs", op: "<=", target: 100, source: "issue 4" },
  { scenario: "lock", figure: "requestsPerWaiterPerSec", op: "<=", target: 20, source: "issue 4" },
  { scenario: "lock", figure: "uncontendedRatio", op: ">=", target: 0.6, source: "from issue 15" },
  {
    scenario: "lock",
    figure: "handoffToAnchor",
    op: "<=",
    target: 0.5,
    source: "from issue 15 (handoff median / the anchor's)",
  },
  {
    scenario: "lock",
    figure: "requestsToAnchor",
    op: "<=",
    target: 1,
    source: "from issue 15 (requests per waiter per second / the anchor's)",
  },
  { scenario: "lock", figure: "longestWaitToMeanWait", op: "<=", target: 4, source: "from issue 15 (no starvation)" },
  { scenario: "queue", figure: "ratio", op: ">=", target: 0.95, source: "issue 5" },
  { scenario: "queue", figure: "duplicates", op: "=", target: 0, source: "issue 5" },
  { scenario: "queue", figure: "lost", op: "=", target: 0, source: "issue 5" },
  { scenario: "queue", figure: "idempotentRatio", op: ">=", target: 0.85, source: "issue 15 (was ≥ 0.6, issue 5)" },
  {
    scenario: "queue",
    figure: "scaleMinRatio",
    op: ">=",
    target: 0.95,
    source: "issue 15 (every point of the scale curve)",
  },
  { scenario: "batch", figure: "ratio", op: ">=", target: 8, source: "issue 6" },
  {
    scenario: "files",
    figure: "libraryExtraIncrements",
    op: "=",
    target: 0,
    source: "issue 7 (lost responses not applied twice)",
  },
  {
    scenario: "files",
    figure: "lockedExtraIncrements",
    op: "=",
    target: 0,
    source: "issue 7 (lost responses not applied twice)",
  },
  { scenario: "files", figure: "library.tornReads", op: "=", target: 0, source: "issue 7 (one write per update)" },
];

const OPS = {
  ">=": (a: number, b: number) => a >= b,
  "<=": (a: number, b: number) => a <= b,
  "=": (a: number, b: number) => a === b,
};

/** The goal as text: "<= 100". */
export const goalText = (goal: Goal) => `${goal.op === "=" ? "=" : goal.op === ">=" ? "≥" : "≤"} ${fmt(goal.target)}`;

/** Checks every goal whose scenario is among `results`. */
export function evaluateGoals(results: readonly ScenarioResult[], goals: readonly Goal[] = GOALS): GoalOutcome[] {
  return goals.flatMap((goal) => {
    const result = results.find((r) => r.scenario === goal.scenario);
    if (!result) return [];
    const value = num(result, goal.figure);
    const status = value === undefined ? "not reported" : OPS[goal.op](value, goal.target) ? "met" : "not met";
    return [{ ...goal, value, status }];
  });
}
