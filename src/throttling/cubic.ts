/**
 * The send-rate curve of the adaptive limiter: CUBIC (Ha, Rhee, Xu, "CUBIC: A New TCP-Friendly
 * High-Speed TCP Variant", 2008; RFC 9438), the curve the AWS SDKs' adaptive retry mode uses for
 * the same job (their `ClientRateLimiter`: cut on a throttling answer, grow back on success).
 *
 * After a congestion event at rate `W` (CUBIC's `W_max`) the rate is cut to `β·W`, perhaps lower
 * (several cuts in one event); from then on it follows, `t` seconds after the last cut,
 *
 *     rate(t) = W · (1 − (1 − β) · ((K − t) / T)³)    for t ≤ K  (concave: back to W)
 *     rate(t) = W · (1 + (1 − β) · ((t − K) / P)³)    for t > K  (convex: probing above W)
 *
 * with `K = T · ∛((W − start) / ((1 − β) · W))` (RFC 9438 §4.2: the curve starts at the rate after
 * the cut, `start`, and reaches W at K; one cut of β gives K = T). So it climbs back quickly and
 * flattens as it nears W, stays near it, and only then probes above it, slowly first and faster
 * the longer no throttle comes.
 *
 * The AWS SDKs use an absolute constant (their `C = 0.4`, in requests per second³), so the time to
 * recover depends on the rate: about 11 s at 2,000 requests per second. Here the curve is relative
 * to `W`: the rate returns to `W` in `T` seconds whatever the partition's size (a table partition
 * serving 2,000 entities per second and one serving 50 recover alike). The probe above W has its
 * own time `P` (the limiter's growth time, never stretched): a capacity four times the last one is
 * found `P · ∛(3 / (1 − β))` seconds after the plateau (2.15 P with β = 0.7), however slow the key.
 */

/** The curve's parameters. */
export interface CubicCurve {
  /** β: the rate is multiplied by it on a throttle (0 < β < 1). */
  readonly decreaseFactor: number;
  /** T: seconds a single cut of β takes to grow back to W (the concave part). */
  readonly growthTimeInSec: number;
  /** P: the time scale of the probe above W (the convex part); `growthTimeInSec` when absent. */
  readonly probeTimeInSec?: number;
}

/** The rate right after a throttle at `rate`. */
export function rateAfterCut(rate: number, curve: CubicCurve): number {
  return rate * curve.decreaseFactor;
}

/** K: seconds from `startRate` (the rate after the last cut) back to `rateCutFrom` (W). */
function secondsBackTo(rateCutFrom: number, startRate: number, curve: CubicCurve): number {
  if (startRate >= rateCutFrom) return 0;
  const depth = (rateCutFrom - startRate) / ((1 - curve.decreaseFactor) * rateCutFrom);
  return curve.growthTimeInSec * Math.cbrt(depth);
}

/**
 * The rate `secondsSinceCut` after the last cut, on the curve from `startRate` (by default β·W:
 * one cut) back to `rateCutFrom` (W) and beyond.
 */
export function rateSinceCut(
  rateCutFrom: number,
  secondsSinceCut: number,
  curve: CubicCurve,
  startRate: number = rateAfterCut(rateCutFrom, curve),
): number {
  const t = Math.max(0, secondsSinceCut);
  const k = secondsBackTo(rateCutFrom, startRate, curve);
  const headroom = 1 - curve.decreaseFactor;
  if (t <= k) return rateCutFrom * (1 - headroom * ((k - t) / curve.growthTimeInSec) ** 3);
  const probe = curve.probeTimeInSec ?? curve.growthTimeInSec;
  return rateCutFrom * (1 + headroom * ((t - k) / probe) ** 3);
}
