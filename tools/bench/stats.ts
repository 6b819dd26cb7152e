/**
 * Statistics the scenarios report: percentiles of latencies, how evenly work was shared (Jain's
 * fairness index), and how a cost grows as the work grows (the "growth" the report states beside
 * each scale chart).
 */

/** The `p`-th percentile (0-100) of `values`, nearest rank; NaN when empty. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

/**
 * Jain's fairness index of the shares `x`: (Σx)² / (n · Σx²). 1 when every writer got the same, 1/n
 * when one got everything; NaN when nobody got anything.
 */
export function jainIndex(x: readonly number[]): number {
  const sum = x.reduce((a, b) => a + b, 0);
  const squares = x.reduce((a, b) => a + b * b, 0);
  return squares === 0 ? Number.NaN : (sum * sum) / (x.length * squares);
}

/** The smallest share over the fair share (1 / n of the total): 1 when even, 0 when one writer got nothing. */
export function minShareOfFair(x: readonly number[]): number {
  const sum = x.reduce((a, b) => a + b, 0);
  return sum === 0 ? Number.NaN : (Math.min(...x) * x.length) / sum;
}

/** How a cost grows with the work, as the report states it. */
type Growth = "flat" | "sublinear" | "linear" | "superlinear" | "falling";

/**
 * How `y` grows with `x` (both positive): the slope of log y over log x, fitted by least squares.
 * Near 0 is flat (the cost does not depend on the work), near 1 linear, above superlinear; a cost
 * that gets cheaper as the work grows is falling. `slope` is null with fewer than two usable points.
 */
export function growthOf(points: readonly { readonly x: number; readonly y: number | null }[]): {
  readonly growth: Growth | null;
  readonly slope: number | null;
} {
  const usable = points.filter((p): p is { x: number; y: number } => p.x > 0 && p.y !== null && p.y > 0);
  if (usable.length < 2) return { growth: null, slope: null };
  const xs = usable.map((p) => Math.log(p.x));
  const ys = usable.map((p) => Math.log(p.y));
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
  const my = ys.reduce((a, b) => a + b, 0) / ys.length;
  let num = 0;
  let den = 0;
  for (let i = 0; i < xs.length; i++) {
    num += (xs[i]! - mx) * (ys[i]! - my);
    den += (xs[i]! - mx) ** 2;
  }
  if (den === 0) return { growth: null, slope: null };
  const slope = num / den;
  const growth: Growth =
    slope < -0.15
      ? "falling"
      : slope <= 0.15
        ? "flat"
        : slope < 0.8
          ? "sublinear"
          : slope <= 1.2
            ? "linear"
            : "superlinear";
  return { growth, slope: Math.round(slope * 100) / 100 || 0 }; // || 0: no -0
}

/**
 * A ratio measured as interleaved pairs of runs (issue 27): the median of the pairs' ratios and how
 * far they spread. On a shared machine one pair can swing either way as other work comes and goes;
 * the median of many pairs does not, and the spread says how far a single pair could be trusted.
 * `q1`/`q3` are the pairs' quartiles (nearest rank), `min`/`max` the extremes, `pairs` their count.
 */
export interface RatioSpread {
  readonly median: number;
  readonly q1: number;
  readonly q3: number;
  readonly min: number;
  readonly max: number;
  readonly pairs: number;
}

/**
 * The {@link RatioSpread} of the ratios `ratios` (each one pair's), rounded to `digits` decimals;
 * every field NaN when there are none (a figure the report then shows as n/a).
 */
export function ratioSpread(ratios: readonly number[], digits = 3): RatioSpread {
  const usable = ratios.filter((r) => Number.isFinite(r));
  const f = 10 ** digits;
  const r = (value: number) => Math.round(value * f) / f;
  const sorted = [...usable].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median =
    sorted.length === 0 ? Number.NaN : sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return {
    median: r(median),
    q1: r(percentile(usable, 25)),
    q3: r(percentile(usable, 75)),
    min: r(sorted[0] ?? Number.NaN),
    max: r(sorted.at(-1) ?? Number.NaN),
    pairs: usable.length,
  };
}

/** The ratios `numerators[i] / denominators[i]` of pairs measured side by side. */
export function pairRatios(numerators: readonly number[], denominators: readonly number[]): number[] {
  return numerators.map((n, i) => n / denominators[i]!);
}

/** A spread in words for logs and reports: "0.97 (pairs 0.91-1.02 IQR, 0.8-1.3 all, n = 12)". */
export function describeSpread(spread: RatioSpread): string {
  return `${spread.median} (IQR ${spread.q1}–${spread.q3}, range ${spread.min}–${spread.max}, ${spread.pairs} pairs)`;
}
