import {
  backoffPresets,
  decorrelatedJitterBackoff,
  exponentialBackoff,
  fixedBackoff,
  fullJitterBackoff,
  noBackoff,
} from "../../../src/retry/index.js";

const always = (value: number) => () => value;

describe("exponentialBackoff (the source documents' formula)", () => {
  it("computes Min(zmin + Rand(0.8z, 1.2z) * (2^x - 1), zmax) with the documented defaults", () => {
    const low = exponentialBackoff({ random: always(0) });
    const high = exponentialBackoff({ random: always(0.999999) });
    // x = 1: y in [24 s, 36 s), plus zmin 3 s.
    expect(low.delayInMs(1, 0)).toBe(27_000);
    expect(high.delayInMs(1, 0)).toBeCloseTo(39_000, -1);
    // x = 2: y in [72 s, 108 s) + 3 s, capped at zmax 90 s for the high end.
    expect(low.delayInMs(2, 0)).toBe(75_000);
    expect(high.delayInMs(2, 0)).toBe(90_000);
    expect(low.delayInMs(5, 0)).toBe(90_000);
  });

  it("stays within ±20% of the default backoff around the minimum", () => {
    const backoff = exponentialBackoff({ deltaInMs: 100, minInMs: 10, maxInMs: 10_000 });
    for (let i = 0; i < 500; i++) {
      const d = backoff.delayInMs(3, 0); // 2^3 - 1 = 7
      expect(d).toBeGreaterThanOrEqual(10 + 0.8 * 100 * 7);
      expect(d).toBeLessThan(10 + 1.2 * 100 * 7);
    }
  });

  it("rejects impossible settings, naming the option", () => {
    expect(() => exponentialBackoff({ minInMs: 5_000, maxInMs: 1_000 })).toThrow(RangeError);
    expect(() => exponentialBackoff({ minInMs: 5_000, maxInMs: 1_000 })).toThrow(/`maxInMs`/);
    expect(() => exponentialBackoff({ deltaInMs: -1 })).toThrow(/`deltaInMs`/);
    expect(() => exponentialBackoff({ deltaInMs: "30" as unknown as number })).toThrow(TypeError);
    expect(() => exponentialBackoff({ random: 3 as unknown as () => number })).toThrow(/`random`/);
  });
});

describe("jitter strategies", () => {
  it("full jitter draws from [0, min(max, base * 2^(retry-1)))", () => {
    const backoff = fullJitterBackoff({ baseInMs: 10, maxInMs: 1_000 });
    for (let retry = 1; retry <= 10; retry++) {
      const cap = Math.min(1_000, 10 * 2 ** (retry - 1));
      for (let i = 0; i < 100; i++) {
        const d = backoff.delayInMs(retry, 0);
        expect(d).toBeGreaterThanOrEqual(0);
        expect(d).toBeLessThan(cap);
      }
    }
    expect(fullJitterBackoff({ baseInMs: 10, maxInMs: 1_000, random: always(0.5) }).delayInMs(20, 0)).toBe(500);
  });

  it("decorrelated jitter grows from the previous delay and respects the cap", () => {
    const backoff = decorrelatedJitterBackoff({ baseInMs: 10, maxInMs: 500, random: always(0.999) });
    let previous = 0;
    const seen: number[] = [];
    for (let retry = 1; retry <= 8; retry++) {
      previous = backoff.delayInMs(retry, previous);
      seen.push(previous);
    }
    expect(seen[0]).toBeCloseTo(10, 0);
    expect(seen[1]).toBeGreaterThan(25);
    expect(Math.max(...seen)).toBe(500);
    const low = decorrelatedJitterBackoff({ baseInMs: 10, maxInMs: 500, random: always(0) });
    expect(low.delayInMs(3, 200)).toBe(10);
  });

  it("rejects a maximum below the base", () => {
    expect(() => fullJitterBackoff({ baseInMs: 100, maxInMs: 10 })).toThrow(/`maxInMs` must be at least 100/);
    expect(() => decorrelatedJitterBackoff({ baseInMs: Number.NaN })).toThrow(TypeError);
  });
});

describe("fixed, none and presets", () => {
  it("fixed waits the same before every retry; none never waits", () => {
    expect([1, 2, 9].map((r) => fixedBackoff({ delayInMs: 250 }).delayInMs(r, 0))).toEqual([250, 250, 250]);
    expect(noBackoff().delayInMs(7, 100)).toBe(0);
    expect(noBackoff().name).toBe("none");
  });

  it("presets are frozen values with the documented scale", () => {
    expect(Object.isFrozen(backoffPresets)).toBe(true);
    const first = backoffPresets.interactive.delayInMs(1, 0);
    expect(first).toBeGreaterThanOrEqual(210);
    expect(first).toBeLessThan(290);
    expect(backoffPresets.interactive.delayInMs(10, 0)).toBe(2_000);
    expect(backoffPresets.background.delayInMs(10, 0)).toBe(90_000);
    expect(backoffPresets.contention.name).toBe("full-jitter");
  });
});
