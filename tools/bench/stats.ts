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
