/**
 * The turn-taking rule of the optimistic engine (src/optimistic/turns.ts), as pure logic over one cell's turns record: when a
 * process skips its read, when it hands a cell over, and how long it waits after a conflict. The
 * benchmark (`npm run bench -- optimistic`) measures what the rule buys; this pins the rule itself.
 */
import { jest } from "@jest/globals";
import {
  handOverPause,
  maxWaitAfterConflict,
  noteLostWrite,
  noteRead,
  noteRequestTime,
  noteWrite,
  newTurns,
  type Turns,
} from "../../../src/optimistic/turns.js";
import { formatWriteLog, nextWriteLog, PROCESS_ID } from "../../../src/optimistic/write-log.js";

/** A history whose writes were made by the given processes' slot 0, the last one last. */
function historyBy(...processes: string[]): string {
  let base: { etag: string; log: string } | undefined;
  processes.forEach((process, i) => {
    base = { etag: `"e${i}"`, log: formatWriteLog(nextWriteLog(base, { slot: `${process}0`, id: `w${i}` })) };
  });
  return base!.log;
}

/** Writes `n` times with skipped reads, each taking `ms`. */
function streak(turns: Turns, n: number, ms = 2): void {
  for (let i = 0; i < n; i++) noteWrite(turns, ms, true);
}

beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
afterEach(() => jest.useRealTimers());

describe("an uncontended cell", () => {
  it("never hands over and keeps the caller's backoff, however long the streak", () => {
    const turns = newTurns();
    noteRead(turns, { etag: '"a"', log: historyBy(PROCESS_ID) }, undefined);
    noteWrite(turns, 2, false);
    streak(turns, 1_000);
    expect(handOverPause(turns)).toBeUndefined();
    expect(maxWaitAfterConflict(turns)).toBe(Infinity);
  });

  it("is one whose last write, as read, was this process's own or carried no history", () => {
    const turns = newTurns();
    noteRead(turns, { etag: '"a"', log: undefined }, undefined);
    streak(turns, 100);
    expect(handOverPause(turns)).toBeUndefined();
  });
});

describe("a contended cell", () => {
  it("is handed over after a streak of skipped reads, for a pause of a few request times", () => {
    const turns = newTurns();
    noteRequestTime(turns, 2);
    noteLostWrite(turns);
    noteWrite(turns, 2, false); // the write after the conflict read first
    streak(turns, 6);
    expect(handOverPause(turns)).toBeUndefined();
    streak(turns, 1);
    const pause = handOverPause(turns);
    expect(pause).toBeGreaterThanOrEqual(2);
    expect(pause).toBeLessThanOrEqual(20);
  });

  it("counts as contended when a read shows another process's write last", () => {
    const turns = newTurns();
    noteRead(turns, { etag: '"a"', log: historyBy("otherPrc") }, undefined);
    noteWrite(turns, 2, false);
    streak(turns, 7);
    expect(handOverPause(turns)).toBeDefined();
  });

  it("starts a new streak after the hand-over's read, and stays contended when someone took the turn", () => {
    const turns = newTurns();
    noteLostWrite(turns);
    noteWrite(turns, 2, false);
    streak(turns, 7);
    expect(handOverPause(turns)).toBeDefined();
    jest.advanceTimersByTime(900);
    noteRead(turns, { etag: '"theirs"', log: historyBy(PROCESS_ID, "otherPrc") }, { ownEtag: '"mine"' });
    expect(handOverPause(turns)).toBeUndefined();
    noteWrite(turns, 2, false);
    streak(turns, 7);
    jest.advanceTimersByTime(900); // 1.8 s after the conflict, 0.9 s after the taken turn
    expect(handOverPause(turns)).toBeDefined();
  });

  it("counts as uncontended again a second after the last sign of another writer", () => {
    const turns = newTurns();
    noteLostWrite(turns);
    noteWrite(turns, 2, false);
    streak(turns, 7);
    jest.advanceTimersByTime(500);
    noteRead(turns, { etag: '"mine"', log: historyBy(PROCESS_ID) }, { ownEtag: '"mine"' }); // nobody took it
    noteWrite(turns, 2, false);
    streak(turns, 7);
    expect(handOverPause(turns)).toBeDefined();
    jest.advanceTimersByTime(501);
    expect(handOverPause(turns)).toBeUndefined();
    expect(maxWaitAfterConflict(turns)).toBe(Infinity);
  });

  it("caps the wait after a conflict in request times per process writing the cell", () => {
    const turns = newTurns();
    noteRequestTime(turns, 3);
    noteLostWrite(turns);
    noteRead(turns, { etag: '"a"', log: historyBy("processA", "processB") }, undefined);
    const two = maxWaitAfterConflict(turns);
    noteRead(turns, { etag: '"b"', log: historyBy("processA", "processB", "processC", "processD") }, undefined);
    const four = maxWaitAfterConflict(turns);
    expect(two).toBeGreaterThan(0);
    expect(two).toBeLessThan(100);
    expect(four).toBeCloseTo(2 * two);
  });
});
