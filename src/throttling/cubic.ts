/**
 * The send-rate curve of the adaptive limiter: CUBIC (Ha, Rhee, Xu, "CUBIC: A New TCP-Friendly
 * High-Speed TCP Variant", 2008; RFC 9438), the curve the AWS SDKs' adaptive retry mode uses for
 * the same job (their `ClientRateLimiter`: cut on a throttling answer, grow back on success).
 *
 * After a throttling answer at rate `W` the rate is cut to `β·W`; from then on it follows
 *
 *     rate(t) = W · (1 + γ · (t − K)³),   γ = (1 − β) / K³
 *
 * so it climbs back quickly and flattens as it nears `W` (reached at `t = K`), stays near it, and
 * only then probes above it, slowly first and faster the longer no throttle comes. The AWS SDKs use
 * an absolute constant (their `C = 0.4`, in requests per second³), so the time to recover depends on
 * the rate: about 11 s at 2,000 requests per second. Here γ is relative to `W`: the rate returns to
 * `W` in `K` seconds whatever the partition's size (a table partition serving 2,000 entities per
 * second and one serving 50 recover alike), and a capacity four times the last one is found in
 * about `K · (1 + ∛(3 / (1 − β)))` seconds (3.2 K with β = 0.7).
 */

/** The curve's two parameters. */
export interface CubicCurve {
  /** β: the rate is multiplied by it on a throttle (0 < β < 1). */
  readonly decreaseFactor: number;
  /** K: seconds after a cut at which the rate is back to the rate cut from. */
  readonly growthTimeInSec: number;
}

/** The rate right after a throttle at `rate`. */
export function rateAfterCut(rate: number, curve: CubicCurve): number {
  return rate * curve.decreaseFactor;
}

/** The rate `secondsSinceCut` after a cut from `rateCutFrom` (W). */
export function rateSinceCut(rateCutFrom: number, secondsSinceCut: number, curve: CubicCurve): number {
  const k = curve.growthTimeInSec;
  const gamma = (1 - curve.decreaseFactor) / k ** 3;
  return rateCutFrom * (1 + gamma * (Math.max(0, secondsSinceCut) - k) ** 3);
}
