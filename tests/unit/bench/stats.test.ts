import { growthOf, jainIndex, minShareOfFair, percentile } from "../../../tools/bench/stats.js";

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
});
