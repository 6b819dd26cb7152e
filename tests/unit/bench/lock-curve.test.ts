/**
 * The `lock` benchmark's worst points of the contender curve (issue 27): where each was measured,
 * and the points that could not be judged against the anchor listed instead of dropped.
 */
import { evaluateGoals } from "../../../tools/bench/report/goals.js";
import { scalePoint, scaleRoundSeconds, worstOfCurve } from "../../../tools/bench/scenarios/lock.js";

type Round = Parameters<typeof scalePoint>[1];

/** A contention round with just the figures the scale point reads. */
function round(
  handoffMedianMs: number | null,
  requestsPerWaiterPerSec: number | null,
  longestWaitToMeanWait: number | null,
) {
  return { handoffMedianMs, requestsPerWaiterPerSec, longestWaitToMeanWait } as unknown as Round;
}

describe("lock benchmark: the worst point of the contender curve", () => {
  it("names the count each worst figure was measured at", () => {
    const curve = worstOfCurve([
      scalePoint(2, round(100, 1.2, 3), round(400, 1.6, 9)),
      scalePoint(4, round(150, 1.0, 5), round(200, 1.6, 8)),
      scalePoint(8, round(20, 1.7, 2), round(140, 1.6, 5)),
    ]);
    expect(curve).toMatchObject({
      handoffToAnchorWorst: 0.75,
      handoffToAnchorWorstAt: 4,
      requestsToAnchorWorst: 1.06,
      requestsToAnchorWorstAt: 8,
      longestWaitToMeanWaitWorst: 5,
      longestWaitToMeanWaitWorstAt: 4,
      handoffToAnchorUnjudgedAt: [],
      handoffLibraryMissingAt: [],
    });
  });

  it("says how many handoffs each median rests on, and runs the rarely handing-over points longer", () => {
    const point = scalePoint(2, { ...round(490, 3.1, 13), handoffs: 11 }, { ...round(648, 1.5, 16), handoffs: 7 });
    expect(point).toMatchObject({ handoffs: 11, anchorHandoffs: 7 });
    expect([2, 4, 8, 32].map((n) => scaleRoundSeconds(n, 3))).toEqual([9, 9, 3, 3]);
  });

  it("lists a point whose anchor never handed over as unjudged, not as met", () => {
    const curve = worstOfCurve([
      scalePoint(2, round(300, 1.2, 3), round(null, 1.6, 27)),
      scalePoint(4, round(90, 1.0, 3), round(200, 1.6, 8)),
    ]);
    expect(curve).toMatchObject({
      handoffToAnchorWorst: 0.45,
      handoffToAnchorWorstAt: 4,
      handoffToAnchorUnjudgedAt: [2],
      handoffLibraryMissingAt: [],
    });
  });

  it("a point where the library never handed over while the anchor did is listed as the library's miss", () => {
    const curve = worstOfCurve([
      scalePoint(2, round(null, 1.3, 31), round(577, 1.4, 13)),
      scalePoint(4, round(90, 1.0, 3), round(200, 1.6, 8)),
    ]);
    expect(curve.handoffToAnchorUnjudgedAt).toEqual([2]);
    expect(curve.handoffLibraryMissingAt).toEqual([2]);
    expect(curve.longestWaitToMeanWaitWorstAt).toBe(2);
  });

  it("the report's goals table fails such a point, though the worst ratio alone looks met", () => {
    const judged = (points: ReturnType<typeof scalePoint>[]) => {
      const goals = evaluateGoals([{ scenario: "lock", ...worstOfCurve(points) }]);
      return Object.fromEntries(goals.map((g) => [g.figure, g.status]));
    };
    const missing = judged([
      scalePoint(2, round(null, 1.3, 31), round(577, 1.4, 13)),
      scalePoint(4, round(90, 1.0, 3), round(200, 1.6, 8)),
    ]);
    expect(missing).toMatchObject({ handoffToAnchorWorst: "met", "handoffLibraryMissingAt.length": "not met" });
    const everywhere = judged([scalePoint(4, round(90, 1.0, 3), round(200, 1.6, 8))]);
    expect(everywhere["handoffLibraryMissingAt.length"]).toBe("met");
  });
});
