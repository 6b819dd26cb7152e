import { classifyQuery, keyFilter, odataString, prefixUpperBound } from "../../../src/tables/index.js";

describe("classifyQuery", () => {
  it.each([
    ["PartitionKey eq '2011 New York City Marathon__Full' and RowKey eq '1234__John__M__55'", "point", 1],
    ["(RowKey eq 'r') and (PartitionKey eq 'p')", "point", 1],
    ["'p' eq PartitionKey and RowKey eq 'r' and Age gt 50", "point", 1],
    ["PartitionKey eq 'p' and RowKey ge 'AGE:' and RowKey lt 'AGE;'", "row-range-scan", 2],
    ["PartitionKey eq 'p'", "row-range-scan", 2],
    ["PartitionKey eq 'p' and Age gt 50", "row-range-scan", 2],
    ["PartitionKey eq 'p' and (RowKey eq 'a' or RowKey eq 'b')", "row-range-scan", 2],
    ["PartitionKey ge '0001' and PartitionKey le '0003'", "partition-range-scan", 3],
    ["PartitionKey gt 'a' and RowKey eq 'r'", "partition-range-scan", 3],
    ["Age gt 50", "table-scan", 4],
    ["RowKey eq 'r'", "table-scan", 4],
    ["PartitionKey eq 'a' or PartitionKey eq 'b'", "table-scan", 4],
    ["PartitionKey ne 'a'", "table-scan", 4],
    ["not (PartitionKey eq 'a')", "table-scan", 4],
    ["PartitionKey eq 'a' or Age gt 5", "table-scan", 4],
    ["", "table-scan", 4],
  ])("%s is a %s", (filter, kind, rank) => {
    const shape = classifyQuery(filter);
    expect(shape.kind).toBe(kind);
    expect(shape.rank).toBe(rank);
    expect(shape.explanation.length).toBeGreaterThan(20);
  });

  it("reports what the filter pins each key to", () => {
    const shape = classifyQuery("PartitionKey eq 'O''Brien' and RowKey gt 'a' and RowKey le 'm' and RowKey ge 'b'");
    expect(shape.partitionKey).toEqual({ kind: "exact", value: "O'Brien" });
    expect(shape.rowKey).toEqual({
      kind: "range",
      lower: { value: "b", inclusive: true },
      upper: { value: "m", inclusive: true },
    });
  });

  it("reads typed literals and keeps them off the keys", () => {
    const shape = classifyQuery(
      "PartitionKey eq 'p' and Created ge datetime'2024-01-01T00:00:00Z' and Id eq guid'00000000-0000-0000-0000-000000000000' and Big gt 5L and On eq true",
    );
    expect(shape.kind).toBe("row-range-scan");
  });

  it("says a self-contradicting filter matches nothing", () => {
    expect(classifyQuery("PartitionKey eq 'a' and PartitionKey eq 'b'").explanation).toMatch(/matches nothing/);
  });

  it("refuses a filter it cannot read", () => {
    expect(() => classifyQuery("PartitionKey eq 'unterminated")).toThrow(/unterminated string/);
    expect(() => classifyQuery("PartitionKey eq")).toThrow(RangeError);
    expect(() => classifyQuery("(PartitionKey eq 'a'")).toThrow(/missing \)/);
    expect(() => classifyQuery("PartitionKey eq 'a' $")).toThrow(RangeError);
  });
});

describe("filters", () => {
  it("quotes strings", () => {
    expect(odataString("O'Brien")).toBe("'O''Brien'");
  });

  it("bounds a prefix", () => {
    expect(prefixUpperBound("AGE:")).toBe("AGE;");
    expect(prefixUpperBound("AGE:055")).toBe("AGE:056");
    expect(prefixUpperBound("")).toBeUndefined();
  });

  it("builds key filters that classify as the best kind they can be", () => {
    const filter = keyFilter({ partitionKey: "NYC'11", rowKeyPrefix: "AGE:055" });
    expect(filter).toBe("PartitionKey eq 'NYC''11' and RowKey ge 'AGE:055' and RowKey lt 'AGE:056'");
    expect(classifyQuery(filter).kind).toBe("row-range-scan");
    expect(classifyQuery(keyFilter({ rowKeyFrom: "a", rowKeyBefore: "b" })).kind).toBe("table-scan");
  });
});
