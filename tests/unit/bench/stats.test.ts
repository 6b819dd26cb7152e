import {
  describeSpread,
  growthOf,
  jainIndex,
  minShareOfFair,
  pairRatios,
  percentile,
  ratioSpread,
} from "../../../tools/bench/stats.js";

describe("benchmark statistics", () => {
  it("percentiles by nearest rank", () => {
    const values = Array.from({ length: 100 }, (_, i) => 100 - i); // 100..1, unsorted on purpose
    expect(percentile(values, 50)).toBe(50);
    expect(percentile(values, 99)).toBe(99);
    expect(percentile(values, 100)).toBe(100);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([], 50)).toBeNaN();
  });

  it("Jain's fairness index and the smallest share of the fair share", () => {
    expect(jainIndex([5, 5, 5, 5])).toBe(1);
    expect(jainIndex([20, 0, 0, 0])).toBe(0.25);
    expect(jainIndex([3, 1])).toBeCloseTo(16 / 20);
    expect(jainIndex([0, 0])).toBeNaN();
    expect(minShareOfFair([5, 5, 5, 5])).toBe(1);
    expect(minShareOfFair([6, 6, 6, 2])).toBe(0.4);
    expect(minShareOfFair([1, 0])).toBe(0);
  });

  it("states how a cost grows with the work", () => {
    const at = (f: (x: number) => number) => [1, 2, 4, 8, 16, 32, 64].map((x) => ({ x, y: f(x) }));
    expect(growthOf(at(() => 2.1))).toEqual({ growth: "flat", slope: 0 });
    expect(growthOf(at((x) => 3 * x)).growth).toBe("linear");
    expect(growthOf(at((x) => Math.sqrt(x))).growth).toBe("sublinear");
    expect(growthOf(at((x) => x * x)).growth).toBe("superlinear");
    expect(growthOf(at((x) => 100 / x)).growth).toBe("falling");
    expect(
      growthOf([
        { x: 1, y: 2 },
        { x: 2, y: null },
      ]),
    ).toEqual({ growth: null, slope: null });
  });

  it("a ratio of interleaved pairs: the median of the pairs' ratios with their quartiles and extremes", () => {
    // One pair hit by a burst of other work (0.2) and one flattered (2.6) move neither the median nor the IQR.
    const ratios = pairRatios([9, 9.5, 10, 2, 26, 9.7, 10.1, 9.9], [10, 10, 10, 10, 10, 10, 10, 10]);
    expect(ratios[3]).toBeCloseTo(0.2);
    const spread = ratioSpread(ratios);
    expect(spread).toEqual({ median: 0.98, q1: 0.9, q3: 1, min: 0.2, max: 2.6, pairs: 8 });
    expect(describeSpread(spread)).toBe("0.98 (IQR 0.9–1, range 0.2–2.6, 8 pairs)");
    expect(ratioSpread([1.2345], 2)).toEqual({ median: 1.23, q1: 1.23, q3: 1.23, min: 1.23, max: 1.23, pairs: 1 });
    // A pair that could not be measured (NaN, a division by 0) is left out, not counted as a pair.
    expect(ratioSpread([1, Number.NaN, Number.POSITIVE_INFINITY, 3]).pairs).toBe(2);
    const none = ratioSpread([]);
    expect(none.pairs).toBe(0);
    expect(none.median).toBeNaN();
  });
});
