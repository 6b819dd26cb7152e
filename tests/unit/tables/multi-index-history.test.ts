import {
  formatHistory,
  historyOf,
  judgeWrite,
  nextHistory,
  type RecordVersion,
} from "../../../src/tables/multi-index-history.js";

/** A chain of writes: the version each id produced, each built on the one before. */
function chain(ids: string[]): RecordVersion[] {
  const versions: RecordVersion[] = [];
  for (const id of ids) {
    const base = versions.at(-1);
    versions.push({ version: id, history: historyOf(id, formatHistory(nextHistory(id, base))) });
  }
  return versions;
}

describe("multi-index write history", () => {
  it("round-trips, and reads a row without history as a chain of its own", () => {
    const [, second] = chain(["c", "w2"]);
    expect(formatHistory(second!.history)).toBe("c:2:c");
    expect(historyOf("w2", "c:2:c")).toEqual({ chain: "c", seq: 2, previous: ["c"] });
    for (const stored of [undefined, 42, "", "c:x:", "c:2:a,,b", "a b:1:"]) {
      expect(historyOf("old-uuid", stored)).toEqual({ chain: "old-uuid", seq: 1, previous: [] });
    }
  });

  it("keeps at most eight previous ids", () => {
    const versions = chain(Array.from({ length: 12 }, (_, i) => `w${i}`));
    expect(versions.at(-1)!.history).toEqual({
      chain: "w0",
      seq: 12,
      previous: ["w10", "w9", "w8", "w7", "w6", "w5", "w4", "w3"],
    });
  });

  it("recognises a create, also under later writes", () => {
    const [created, later] = chain(["mine", "theirs"]);
    expect(judgeWrite(created!, "mine", undefined)).toBe("applied");
    expect(judgeWrite(later!, "mine", undefined)).toBe("applied");
    const [other] = chain(["other"]);
    expect(judgeWrite(other!, "mine", undefined)).toBe("not-applied");
  });

  it("recognises an update while its id is in the history, and says unknown once it fell out", () => {
    const versions = chain(["c", "base", ...Array.from({ length: 12 }, (_, i) => `w${i}`)]);
    const base = versions[1]!;
    // "w0" is the write built on "base"; judged against each later version.
    for (let i = 2; i < versions.length; i++) {
      const expected = i - 2 <= 8 ? "applied" : "unknown";
      expect([i, judgeWrite(versions[i]!, "w0", base)]).toEqual([i, expected]);
      expect([i, judgeWrite(versions[i]!, "lost", base)]).toEqual([i, i - 2 <= 8 ? "not-applied" : "unknown"]);
    }
  });

  it("says not applied when the record is still at the base, or its history was replaced", () => {
    const [c, base] = chain(["c", "base"]);
    expect(judgeWrite(base!, "mine", base)).toBe("not-applied");
    expect(judgeWrite(c!, "mine", base)).toBe("not-applied");
    const [recreated] = chain(["new-chain"]);
    expect(judgeWrite(recreated!, "mine", base)).toBe("not-applied");
  });
});
