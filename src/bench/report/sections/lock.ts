/** The `lock` scenario: handoff latency and the cost of waiting, the library against the anchor's raw SDK loop. */
import { renderBarChart } from "../../../internal/chart.js";
import { bullets, fmt, num, table, times } from "../markdown.js";
import type { SectionWriter } from "./section.js";

const LIBRARY = "blobLock (library)";
const ANCHOR = "raw SDK loop, retry every 250-1000 ms";

export const lockSection: SectionWriter = (result) => {
  const f = (path: string) => num(result, path);
  const a = (path: string) => num(result, `anchor.${path}`);
  const contenders = f("contenders");
  const processes = f("processes");
  const subtitle = `${fmt(contenders)} contenders in ${fmt(processes)} processes, holding ${fmt(f("holdMs"), " ms")} and resting ${fmt(f("restMs"), " ms")}`;

  const reading: string[] = [];
  const handoff = f("handoffMedianMs");
  const anchorHandoff = a("handoffMedianMs");
  if (handoff !== undefined && anchorHandoff !== undefined) {
    reading.push(
      `Handoff: when the holder releases while others wait, the next holder has the lock after a median ${fmt(handoff, " ms")} with the library (90th percentile ${fmt(f("handoffP90Ms"), " ms")}) against ${fmt(anchorHandoff, " ms")} (${fmt(a("handoffP90Ms"), " ms")}) with the anchor's loop, which sleeps 250-1000 ms after each refused acquire: ${times(anchorHandoff, handoff)} faster.`,
    );
  }
  const cost = f("requestsPerWaiterPerSec");
  const anchorCost = a("requestsPerWaiterPerSec");
  if (cost !== undefined && anchorCost !== undefined) {
    reading.push(
      `The price is requests while waiting: ${fmt(cost)} per waiter per second (HEAD polls every ${fmt(f("pollIntervalInMs"), " ms")} and refused acquires) against the anchor's ${fmt(anchorCost)}: the library spends requests to hand the lock over sooner.`,
    );
  }
  const anchorAcquisitions = a("acquisitions");
  const anchorSelf = a("selfReacquisitions");
  if (anchorAcquisitions && anchorSelf !== undefined) {
    reading.push(
      `Fairness: with the anchor's loop the contender that just released took the lock again ${fmt(anchorSelf)} times out of ${fmt(anchorAcquisitions)} (the others were asleep); with the library ${fmt(f("selfReacquisitions"))} of ${fmt(f("acquisitions"))}.${
        (a("waitMedianMs") ?? 0) < (f("waitMedianMs") ?? 0)
          ? ` Those immediate re-takes are why the anchor's median acquire() wait (${fmt(a("waitMedianMs"), " ms")}) is shorter than the library's (${fmt(f("waitMedianMs"), " ms")}) while its handoffs are slower: the library's waiters keep watching the lease, so one of them takes it soon after it is free.`
          : ""
      } Contended throughput: ${fmt(f("acquisitionsPerSec"))} acquisitions per second against ${fmt(a("acquisitionsPerSec"))}.`,
    );
  }
  reading.push(
    `Exclusion: ${fmt(f("overlaps"))} overlapping critical sections with the library, ${fmt(a("overlaps"))} with the anchor's loop; fencing tokens ${result["fencingTokensUnique"] === true ? "all distinct" : "not all distinct"}.`,
    `Uncontended, an acquire and a release take ${fmt(f("rawCyclePerSec"))} cycles per second on raw SDK calls (2 requests) and ${fmt(f("libraryCyclePerSec"))} with the library (4: a HEAD reading the lease state and lock record, the acquire, the record write, the release): ${times(f("rawCyclePerSec"), f("libraryCyclePerSec"))} more cycles for raw calls, which record no owner and give no fencing token.`,
  );

  return {
    title: "Lock handoff",
    intro:
      `Contenders in several processes take one blob lease lock in a loop: wait, hold, release, rest; with more demand than the lock can serve there is always someone waiting. ` +
      `The handoff is the time from the holder's release call to the next holder's \`acquire()\` resolving. The anchor is the source document's DistributedLock loop on raw SDK calls, in the same run.`,
    charts: [
      {
        name: "latency",
        alt: "Lock handoff and wait latency in milliseconds, library against the raw SDK loop",
        svg: renderBarChart({
          title: "Lock handoff latency",
          subtitle,
          groups: ["handoff, median", "handoff, 90th percentile", "acquire() wait, median"],
          series: [
            { label: LIBRARY, values: [handoff, f("handoffP90Ms"), f("waitMedianMs")] },
            { label: ANCHOR, values: [anchorHandoff, a("handoffP90Ms"), a("waitMedianMs")] },
          ],
          yAxis: { label: "milliseconds" },
          references: [{ value: 100, label: "goal: handoff median ≤ 100 ms" }],
        }),
      },
      {
        name: "cost",
        alt: "Requests per waiter per second and acquisitions per second, library against the raw SDK loop",
        svg: renderBarChart({
          title: "Cost of waiting, and throughput under contention",
          subtitle,
          groups: ["requests per waiter per second (waiting)", "acquisitions per second"],
          series: [
            { label: LIBRARY, values: [cost, f("acquisitionsPerSec")] },
            { label: ANCHOR, values: [anchorCost, a("acquisitionsPerSec")] },
          ],
          yAxis: { label: "per second" },
          references: [{ value: 20, label: "goal: ≤ 20 requests per waiter per second" }],
        }),
      },
    ],
    body: [
      table(
        ["figure", LIBRARY, ANCHOR],
        [
          [
            "handoff median / 90th percentile (ms)",
            `${fmt(handoff)} / ${fmt(f("handoffP90Ms"))}`,
            `${fmt(anchorHandoff)} / ${fmt(a("handoffP90Ms"))}`,
          ],
          ["acquire() wait median (ms)", fmt(f("waitMedianMs")), fmt(a("waitMedianMs"))],
          ["requests per waiter per second", fmt(cost), fmt(anchorCost)],
          [
            "requests per acquisition (taking a free lock)",
            fmt(f("requestsPerAcquisition")),
            fmt(a("requestsPerAcquisition")),
          ],
          [
            "acquisitions (per second)",
            `${fmt(f("acquisitions"))} (${fmt(f("acquisitionsPerSec"))})`,
            `${fmt(anchorAcquisitions)} (${fmt(a("acquisitionsPerSec"))})`,
          ],
          ["overlapping critical sections", fmt(f("overlaps")), fmt(a("overlaps"))],
          [
            "uncontended acquire + release cycles per second",
            fmt(f("libraryCyclePerSec")),
            `${fmt(f("rawCyclePerSec"))} (raw SDK, no record)`,
          ],
        ],
      ),
      "",
      "Reading:",
      "",
      bullets(reading),
    ].join("\n"),
  };
};
