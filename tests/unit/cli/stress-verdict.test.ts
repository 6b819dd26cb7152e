/**
 * Issue 23, item 4: the partition stress test judges a key design by its busiest partition's share
 * of the load (which the keys decide), never by the rate the target reached (on an emulator, the
 * machine's speed: `single` was "within target" on one run and "would be throttled" on another).
 */
import { judge, HOT_PARTITION_SHARE } from "../../../tools/stress/engine.js";
import { stressDesigns } from "../../../tools/stress/designs.js";

describe("the stress test's verdict", () => {
  it("is the same for one design at any speed of the emulator", () => {
    const slow = judge(stressDesigns.single, { partition: "target", entitiesPerSec: 80, share: 1 }, true, true);
    const fast = judge(stressDesigns.single, { partition: "target", entitiesPerSec: 1900, share: 1 }, true, true);
    for (const judged of [slow, fast]) {
      expect(judged.hotPartition).toBe(true);
      expect(judged.sustainableEntitiesPerSec).toBe(500);
      expect(judged.verdict).toContain("took 100% of the load: a hot partition");
      expect(judged.verdict).toContain(stressDesigns.single.advice);
      expect(judged.verdict).toContain("the emulator's speed, not Azure's limit");
      expect(judged.verdict).not.toMatch(/within the target|over the target|throttle/);
    }
    expect(slow.overTarget).toBe(false);
    expect(fast.overTarget).toBe(true);
  });

  it("says a spread design spreads, and what it sustains in all", () => {
    const judged = judge(stressDesigns.bucketed, { partition: "07", entitiesPerSec: 900, share: 0.0625 }, true, true);
    expect(judged).toMatchObject({ hotPartition: false, sustainableEntitiesPerSec: 8000 });
    expect(judged.verdict).toMatch(/6\.3% of the load: the load spreads.*about 8000 entities\/s in all/);
  });

  it("draws the line at half the load on one partition", () => {
    expect(HOT_PARTITION_SHARE).toBe(0.5);
    const two = judge({}, { partition: "half-0", entitiesPerSec: 10, share: 0.5 }, true, true);
    expect(two.hotPartition).toBe(true);
    expect(two.verdict).toContain("Spread the load over more partitions.");
    expect(judge({}, { partition: "a", entitiesPerSec: 10, share: 0.4 }, true, true).hotPartition).toBe(false);
  });

  it("adds Azure's answer on a real account: the measured rate against the target", () => {
    const over = judge(stressDesigns.single, { partition: "target", entitiesPerSec: 700, share: 1 }, true, false);
    expect(over.verdict).toContain("It took 700 entities/s, over the target: Azure throttles it");
    const within = judge(stressDesigns.bucketed, { partition: "01", entitiesPerSec: 120, share: 0.07 }, true, false);
    expect(within.verdict).toContain("It took 120 entities/s, within the target.");
  });

  it("judges nothing when nothing succeeded", () => {
    expect(judge({}, { partition: "", entitiesPerSec: 0, share: 0 }, false, true)).toEqual({
      verdict: "No operation succeeded: nothing to judge.",
      hotPartition: false,
      overTarget: false,
      sustainableEntitiesPerSec: null,
    });
  });
});
