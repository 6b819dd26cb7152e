import {
  bucketOf,
  bucketPrefixes,
  bucketedKey,
  compositeKey,
  invertedTimestampKey,
  padNumber,
  parseCompositeKey,
  parseInvertedTimestampKey,
  parsePaddedNumber,
  tableKeyProblem,
} from "../../../src/tables/index.js";
import { stableHash } from "../../../src/tables/keys.js";
import { seededRandom } from "../../../src/testing/index.js";

describe("padNumber", () => {
  it("pads so that keys sort as the numbers do", () => {
    const numbers = [111, 2, 55, 0, 1000, 9];
    const keys = numbers.map((n) => padNumber(n, 4));
    expect(keys).toContain("0002");
    expect([...keys].sort()).toEqual([...numbers].sort((a, b) => a - b).map((n) => padNumber(n, 4)));
    expect(parsePaddedNumber("0055")).toBe(55);
  });

  it("takes bigint past the safe integers", () => {
    expect(padNumber(12345678901234567890n, 20)).toBe("12345678901234567890");
  });

  it.each([
    [-1, 3, /between 0 and/],
    [1.5, 3, /whole/],
    [1000, 3, /does not fit in 3 digits/],
  ])("refuses %p in width %p", (value, width, message) => {
    expect(() => padNumber(value, width)).toThrow(message);
  });

  it("refuses keys that are not digits", () => {
    expect(() => parsePaddedNumber("12a")).toThrow(RangeError);
  });
});

describe("invertedTimestampKey", () => {
  it("is the .NET inverted-ticks key: DateTime.MaxValue.Ticks - ticks, 19 digits", () => {
    // 2024-01-01T00:00:00Z is 638396640000000000 ticks; DateTime.MaxValue.Ticks is 3155378975999999999.
    expect(invertedTimestampKey(new Date("2024-01-01T00:00:00Z"))).toBe(
      String(3155378975999999999n - 638396640000000000n),
    );
  });

  it("sorts newest first and reads back to the millisecond", () => {
    const dates = [
      new Date("2020-05-01T10:00:00.123Z"),
      new Date("2024-05-01T10:00:00.001Z"),
      new Date("1999-12-31T23:59:59.999Z"),
    ];
    const keys = dates.map((d) => invertedTimestampKey(d));
    const newestFirst = [...dates].sort((a, b) => b.getTime() - a.getTime());
    expect([...keys].sort().map(parseInvertedTimestampKey)).toEqual(newestFirst);
    for (const key of keys) expect(key).toMatch(/^\d{19}$/);
  });

  it("refuses an invalid date", () => {
    expect(() => invertedTimestampKey(new Date("nope"))).toThrow(TypeError);
  });
});

describe("compositeKey", () => {
  it("writes the design guide's keys", () => {
    expect(compositeKey(["2011 New York City Marathon", "Full"])).toBe("2011 New York City Marathon__Full");
    expect(compositeKey([`BIB:${padNumber(1234, 5)}`, "John", "M", "55"])).toBe("BIB:01234__John__M__55");
    expect(parseCompositeKey("AGE:055__1234__John__M")).toEqual(["AGE:055", "1234", "John", "M"]);
  });

  it("escapes the separator, the escape character and forbidden characters so that keys round-trip and stay valid", () => {
    const random = seededRandom(7);
    const alphabet = ["a", "Z", "_", "__", "~", "/", "\\", "#", "?", "\t", "\u0085", "é", "😀", "'", " ", "0"];
    for (let round = 0; round < 300; round++) {
      const parts = Array.from({ length: 1 + Math.floor(random() * 4) }, () =>
        Array.from({ length: Math.floor(random() * 6) }, () => alphabet[Math.floor(random() * alphabet.length)]).join(
          "",
        ),
      );
      const key = compositeKey(parts);
      expect(parseCompositeKey(key)).toEqual(parts);
      expect(tableKeyProblem(key)).toBeUndefined();
    }
  });

  it("works with another separator and escape character", () => {
    const options = { separator: "|", escapeCharacter: "!" };
    const key = compositeKey(["a|b", "c!d"], options);
    expect(key).toBe("a!007cb|c!0021d");
    expect(parseCompositeKey(key, options)).toEqual(["a|b", "c!d"]);
  });

  it("refuses unusable options and parts", () => {
    expect(() => compositeKey([])).toThrow(TypeError);
    expect(() => compositeKey([1 as unknown as string])).toThrow(/pad numbers/);
    expect(() => compositeKey(["a"], { separator: "/" })).toThrow(RangeError);
    expect(() => compositeKey(["a"], { separator: "~x" })).toThrow(/must not contain `escapeCharacter`/);
    expect(() => parseCompositeKey("a~zz")).toThrow(/malformed escape/);
  });
});

describe("bucketed keys", () => {
  it("hashes with FNV-1a, the same everywhere", () => {
    expect(stableHash("")).toBe(0x811c9dc5);
    expect(stableHash("a")).toBe(0xe40c292c);
    expect(stableHash("foobar")).toBe(0xbf9cf968);
  });

  it("spreads a sequence over every bucket, always the same bucket for the same value", () => {
    const counts = new Array<number>(16).fill(0);
    for (let i = 0; i < 1600; i++) {
      const bucket = bucketOf(padNumber(i, 10), 16);
      counts[bucket] = (counts[bucket] ?? 0) + 1;
    }
    expect(Math.min(...counts)).toBeGreaterThan(50);
    expect(bucketOf("device-42", 16)).toBe(bucketOf("device-42", 16));
  });

  it("prefixes keys with a zero-padded bucket, and lists the prefixes", () => {
    const key = bucketedKey("2024-05-01T10:00", { bucketCount: 16 });
    expect(key).toMatch(/^\d\d_2024-05-01T10:00$/);
    expect(bucketPrefixes(16)).toContain(key.slice(0, 3));
    expect(bucketPrefixes(4)).toEqual(["0_", "1_", "2_", "3_"]);
    expect(bucketedKey("reading", { bucketCount: 8, hashOf: "device-1", separator: "-" })).toBe(
      `${bucketOf("device-1", 8)}-reading`,
    );
  });
});
