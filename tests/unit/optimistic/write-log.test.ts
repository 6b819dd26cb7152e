import {
  formatWriteLog,
  judgeWrite,
  MAX_LOG_LENGTH,
  MAX_LOG_WRITERS,
  nextWriteLog,
  parseWriteLog,
  type LoggedVersion,
  type WriteLog,
} from "../../../src/optimistic/write-log.js";

const me = { slot: "procA_0", id: "mine0001" };
const other = (n: number) => ({ slot: `proc${n}_0`, id: `id${String(n).padStart(6, "0")}` });

/** A version written on top of `base` by `writer`, as the service would store it. */
function writeOn(
  base: LoggedVersion | undefined,
  writer: { slot: string; id: string },
  etag: string,
): LoggedVersion & { written: WriteLog } {
  const written = nextWriteLog(base, writer);
  return { etag, log: formatWriteLog(written), written };
}

describe("write log format", () => {
  it("round-trips and rejects what it did not write", () => {
    const log = nextWriteLog(undefined, me);
    expect(parseWriteLog(formatWriteLog(log))).toEqual(log);
    for (const bad of [
      undefined,
      "",
      "garbage",
      "2;a;1;a;0;x.y.1",
      "1;c;x;a;0;",
      "1;c;1;a;0;slot.id",
      "1;c;1;a;0;s.i.1.extra",
    ]) {
      expect(parseWriteLog(bad)).toBeUndefined();
    }
  });

  it("starts a chain on an absent cell, on a version without history, and on a blind write", () => {
    expect(nextWriteLog(undefined, me)).toMatchObject({ seq: 1, start: "a", pruned: 0 });
    expect(nextWriteLog({ etag: '"e1"', log: undefined }, me).start).toMatch(/^r[\w-]{12}$/); // names the version by its ETag
    expect(
      nextWriteLog({ etag: '"e1"', log: formatWriteLog(nextWriteLog(undefined, other(1))) }, me, {
        lastWriterWins: true,
      }).start,
    ).toBe("w");
  });

  it("keeps one entry per slot and prunes the oldest writers beyond the limit", () => {
    let version: LoggedVersion | undefined;
    for (let n = 0; n < MAX_LOG_WRITERS + 5; n++) version = writeOn(version, other(n), `"e${n}"`);
    version = writeOn(version, other(MAX_LOG_WRITERS + 4), '"again"'); // the same slot again: replaced, not added
    const log = parseWriteLog(version.log)!;
    expect(log.writers).toHaveLength(MAX_LOG_WRITERS);
    expect(log.seq).toBe(MAX_LOG_WRITERS + 6);
    expect(log.pruned).toBe(5); // seqs 1..5 (slots 0..4) were dropped
    expect(version.log!.length).toBeLessThanOrEqual(MAX_LOG_LENGTH);
  });
});

describe("judgeWrite: was my ambiguous write applied?", () => {
  const base = writeOn(undefined, other(1), '"base"');

  it("applied: my entry is there, even after others wrote on top", () => {
    const mine = writeOn(base, me, '"mine"');
    expect(judgeWrite(mine, base, me, mine.written)).toBe("applied");
    const later = writeOn(writeOn(mine, other(2), '"x"'), other(3), '"y"');
    expect(judgeWrite(later, base, me, mine.written)).toBe("applied");
  });

  it("not applied: someone else's write followed the base and mine is nowhere", () => {
    const attempt = nextWriteLog(base, me);
    const theirs = writeOn(writeOn(base, other(2), '"x"'), other(3), '"y"');
    expect(judgeWrite(theirs, base, me, attempt)).toBe("not-applied");
  });

  it("not applied, however many writes came since, if fewer than the limit of writers", () => {
    const attempt = nextWriteLog(base, me);
    let now: LoggedVersion = base;
    for (let i = 0; i < 500; i++) now = writeOn(now, other(i % 5), `"w${i}"`);
    expect(judgeWrite(now, base, me, attempt)).toBe("not-applied");
  });

  it("unknown: more writers than the history keeps wrote since (my entry could have been pruned)", () => {
    const mine = writeOn(base, me, '"mine"');
    let now: LoggedVersion = mine;
    for (let n = 10; n < 10 + MAX_LOG_WRITERS; n++) now = writeOn(now, other(n), `"w${n}"`);
    expect(judgeWrite(now, base, me, mine.written)).toBe("unknown");
    // ... and the same history when my write did not land is just as undecidable
    const notMine = { ...me, id: "notmine1" };
    expect(judgeWrite(now, base, notMine, nextWriteLog(base, notMine))).toBe("unknown");
    // with one writer fewer, my entry would still be there: decidable
    let fewer: LoggedVersion = base;
    for (let n = 10; n < 10 + MAX_LOG_WRITERS; n++) fewer = writeOn(fewer, other(n), `"w${n}"`);
    expect(judgeWrite(fewer, base, notMine, nextWriteLog(base, notMine))).toBe("not-applied");
  });

  it("unchanged: the cell is exactly as my write found it", () => {
    expect(judgeWrite(base, base, me, nextWriteLog(base, me))).toBe("unchanged");
    expect(judgeWrite(undefined, undefined, me, nextWriteLog(undefined, me))).toBe("unchanged");
  });

  it("history replaced since my base (a raw writer, a last-writer-wins write) is unknown, never not applied", () => {
    // A writer outside the library may have read my value, changed it and written it back without
    // its history: nothing can tell whether mine landed before (issue 11, defect 9).
    const attempt = nextWriteLog(base, me);
    expect(judgeWrite({ etag: '"raw"', log: undefined }, base, me, attempt)).toBe("unknown");
    const blind = { etag: '"blind"', log: formatWriteLog(nextWriteLog(undefined, other(4), { lastWriterWins: true })) };
    expect(judgeWrite(blind, base, me, attempt)).toBe("unknown");
    expect(judgeWrite(writeOn(blind, other(5), '"x"'), base, me, attempt)).toBe("unknown");
    // ... while a raw writer that kept the history (a table Merge that leaves the property alone) is decidable
    const mine = writeOn(base, me, '"mine"');
    expect(judgeWrite({ etag: '"merged"', log: mine.log }, base, me, mine.written)).toBe("applied");
    expect(judgeWrite({ etag: '"merged"', log: base.log }, base, me, attempt)).toBe("not-applied");
  });

  it("creating, or writing on a version without history: my own chain id means applied", () => {
    const mine = writeOn(undefined, me, '"created"');
    expect(judgeWrite(writeOn(mine, other(2), '"next"'), undefined, me, mine.written)).toBe("applied");
    // Another history on the cell: theirs came first, or mine was deleted or overwritten since.
    const theirs = writeOn(undefined, other(2), '"theirs"');
    expect(judgeWrite(theirs, undefined, me, nextWriteLog(undefined, me))).toBe("unknown");
    const raw = { etag: '"raw"', log: undefined };
    const mineOnRaw = writeOn(raw, me, '"mine"');
    let later: LoggedVersion = mineOnRaw;
    for (let n = 0; n < MAX_LOG_WRITERS + 3; n++) later = writeOn(later, other(n), `"l${n}"`); // my entry pruned, the chain id remains
    expect(judgeWrite(later, raw, me, mineOnRaw.written)).toBe("applied");
    // Theirs started on the very version mine was conditioned on: only one of the two could land.
    expect(judgeWrite(writeOn(raw, other(2), '"t"'), raw, me, nextWriteLog(raw, me))).toBe("not-applied");
    // A history started on another raw version (say, mine overwritten by a raw writer since) cannot tell.
    const rawLater = { etag: '"raw-later"', log: undefined };
    expect(judgeWrite(writeOn(rawLater, other(2), '"t"'), raw, me, nextWriteLog(raw, me))).toBe("unknown");
  });

  it("deleted since: my write can no longer land, but it may have landed before the delete", () => {
    expect(judgeWrite(undefined, base, me, nextWriteLog(base, me))).toBe("unknown");
  });
});
