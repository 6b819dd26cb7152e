/**
 * A fake {@link GuardClock} for unit tests of timing logic: both clocks move only when the test
 * says, timers fire as the clock passes them (optionally a little early, as real timers do), and a
 * suspend moves the wall clock alone.
 */
import type { GuardClock } from "../../src/lease/guard.js";

/** A clock whose timers run when the test says, and whose timers can be told to fire early. */
export function fakeClock() {
  let monotonic = 1_000;
  let wall = 1_700_000_000_000;
  const timers = new Map<number, { at: number; delayInMs: number; callback: () => void }>();
  let next = 0;
  const clock: GuardClock = {
    monotonic: () => monotonic,
    wall: () => wall,
    setTimer: (callback, delayInMs) => {
      timers.set(++next, { at: monotonic + delayInMs, delayInMs, callback });
      return next;
    },
    clearTimer: (id) => void timers.delete(id as number),
  };
  return {
    clock,
    /**
     * Moves both clocks on by `ms`, firing due timers up to `earlyByMs` before they are due (but
     * always at least a millisecond after they were set, as a real timer does).
     */
    advance(ms: number, earlyByMs = 0) {
      const target = monotonic + ms;
      const firesAt = (t: { at: number; delayInMs: number }) => t.at - Math.min(earlyByMs, t.delayInMs - 1);
      for (;;) {
        const due = [...timers]
          .filter(([, t]) => firesAt(t) <= target)
          .sort((a, b) => firesAt(a[1]) - firesAt(b[1]))[0];
        if (!due) break;
        const [id, timer] = due;
        const at = Math.max(monotonic, firesAt(timer));
        wall += at - monotonic;
        monotonic = at;
        timers.delete(id);
        timer.callback();
      }
      wall += target - monotonic;
      monotonic = target;
    },
    suspend(ms: number) {
      wall += ms;
    },
    pending: () => timers.size,
  };
}
