/**
 * Interleaving explorer: runs a few concurrent async actors in one process in an order the test
 * controls, to find what an engine does when its callers reach its await points in every order
 * (DESIGN.md, "Proving exactly-once"). The fault-placement explorer (./explorer.ts) places faults on
 * requests; this places events between await points.
 *
 * The code under test waits at gates (`gate(label)`, e.g. wrapped around a cell's read and write);
 * the test adds events of its own (a caller arrives, a caller aborts, another writer writes). At
 * each step the scheduler waits until nothing is moving (no tracked I/O in flight, microtasks
 * drained), lists what is enabled (open gates and the test's events), and a chooser picks one:
 * - `seededChoices(seed)`: a random order, replayable from the printed seed;
 * - `everyChoice()`: every order, depth first (stateless model checking: each run replays a prefix
 *   of choices and takes the next branch), for the exhaustive run.
 */
import { seededRandom } from "../../src/testing/index.js";

/** Something the test can make happen at a step. */
export interface Event {
  /** For the trace, e.g. `call 1`, `abort 2`. */
  readonly label: string;
  /** Does it; the scheduler waits until everything it set moving has stopped. */
  run(): void | Promise<void>;
}

/** Picks one of `count` enabled choices (their labels given), 0-based. */
export interface Chooser {
  choose(labels: readonly string[]): number;
}

/** One run's scheduler. */
export interface Interleaving {
  /** Called by the code under test: waits until the scheduler opens this gate. */
  gate(label: string): Promise<void>;
  /** Wraps real I/O, so that the scheduler waits for it before choosing again. */
  track<T>(io: Promise<T>): Promise<T>;
  /**
   * Runs steps until `done()` and nothing is enabled: at each, waits until nothing moves, then lets
   * the chooser pick among the open gates and `events()`. Resolves with the labels chosen, in order;
   * rejects when nothing is enabled and `done()` is still false (the code under test is stuck).
   */
  run(events: () => readonly Event[], done: () => boolean): Promise<string[]>;
}

/** A fresh scheduler for one run. */
export function interleaving(chooser: Chooser): Interleaving {
  const gates: { label: string; open: () => void }[] = [];
  let inFlight = 0;
  let idle: (() => void)[] = [];

  const stopped = async () => {
    for (let calm = 0; calm < 3;) {
      await new Promise((resolve) => setImmediate(resolve));
      if (inFlight > 0) {
        calm = 0;
        await new Promise<void>((resolve) => idle.push(resolve));
      } else calm++;
    }
  };

  return {
    gate: (label) => new Promise<void>((open) => gates.push({ label, open })),
    async track(io) {
      inFlight++;
      try {
        return await io;
      } finally {
        if (--inFlight === 0) {
          const waiting = idle;
          idle = [];
          for (const resume of waiting) resume();
        }
      }
    },
    async run(events, done) {
      const trace: string[] = [];
      for (let stuck = 0; ;) {
        await stopped();
        const choices: Event[] = [
          ...gates.map((g) => ({ label: `${g.label}`, run: () => void gates.splice(gates.indexOf(g), 1)[0]!.open() })),
          ...events(),
        ];
        if (choices.length === 0) {
          if (done()) return trace;
          // Timers (a backoff) may still be running: give them a moment before calling it stuck.
          if (++stuck > 200) throw new Error(`stuck after ${trace.join(", ")}`);
          await new Promise((resolve) => setTimeout(resolve, 5));
          continue;
        }
        stuck = 0;
        const chosen = choices[chooser.choose(choices.map((c) => c.label))]!;
        trace.push(chosen.label);
        await chosen.run();
      }
    },
  };
}

/** A random order, the same for the same seed. */
export function seededChoices(seed: number): Chooser {
  const random = seededRandom(seed);
  return { choose: (labels) => Math.floor(random() * labels.length) };
}

/**
 * Every order, depth first. Call `next()` before each run: false once every order was run (or
 * `limit` runs were made).
 */
export function everyChoice(limit = Infinity): Chooser & { next(): boolean; readonly runs: number } {
  let path: { chosen: number; of: number }[] = [];
  let depth = 0;
  let runs = 0;
  let started = false;
  return {
    get runs() {
      return runs;
    },
    next() {
      if (started) {
        // Backtrack to the deepest choice with a branch left, and take it.
        while (path.length > 0 && path.at(-1)!.chosen + 1 >= path.at(-1)!.of) path.pop();
        if (path.length === 0) return false;
        path.at(-1)!.chosen++;
      }
      started = true;
      if (runs >= limit) return false;
      runs++;
      depth = 0;
      return true;
    },
    choose(labels) {
      if (depth < path.length) {
        const step = path[depth++]!;
        // The same prefix of choices reproduces the same run; guard against code that does not.
        if (step.of !== labels.length)
          throw new Error(`not replayable: ${step.of} choices before, ${labels.length} now`);
        return step.chosen;
      }
      path = path.slice(0, depth);
      path.push({ chosen: 0, of: labels.length });
      depth++;
      return 0;
    },
  };
}
