/** The `lock` scenario: handoff latency and the cost of waiting, the library against the anchor's raw SDK loop. */
import { renderBarChart, renderLineChart } from "../../../internal/chart.js";
import { bullets, fmt, num, table, times } from "../markdown.js";
import type { SectionWriter } from "./section.js";

const LIBRARY = "blobLock (library)";

interface ScalePoint {
  readonly contenders: number;
  readonly handoffMedianMs: number | null;
  readonly requestsPerWaiterPerSec: number | null;
  readonly longestWaitToMeanWait: number | null;
  readonly anchorHandoffMedianMs?: number | null;
  readonly anchorRequestsPerWaiterPerSec?: number | null;
  readonly anchorLongestWaitToMeanWait?: number | null;
  readonly handoffs?: number;
  readonly anchorHandoffs?: number;
}

/** "library / anchor" for a figure of a scale point ("n/a" for either side not measured). */
const pair = (library: number | null | undefined, anchor: number | null | undefined) =>
  `${fmt(library ?? undefined)} / ${fmt(anchor ?? undefined)}`;

/** The scale curve point by point, the library against the anchor at the same contender count (issue 27's goals bound every point). */
function scaleTable(points: readonly ScalePoint[]): string {
  return table(
    [
      "contenders",
      "handoff median ms (library / anchor)",
      "handoffs measured",
      "requests per waiter per s",
      "longest / mean wait",
    ],
    points.map((p) => [
      p.contenders,
      pair(p.handoffMedianMs, p.anchorHandoffMedianMs),
      pair(p.handoffs, p.anchorHandoffs),
      pair(p.requestsPerWaiterPerSec, p.anchorRequestsPerWaiterPerSec),
      pair(p.longestWaitToMeanWait, p.anchorLongestWaitToMeanWait),
    ]),
  );
}

/** The scale points of `path` in the result (an array of objects), or none. */
function scaleOf(result: Record<string, unknown>, path: "scale" | "latency"): ScalePoint[] {
  const holder = path === "scale" ? result : (result["latency"] as Record<string, unknown> | undefined);
  const scale = holder?.["scale"];
  return Array.isArray(scale) ? (scale as ScalePoint[]) : [];
}

/**
 * How a figure grows with the contenders, in words: the slope of log(figure) over log(contenders)
 * between the first and the last point (0: flat, 1: linear).
 */
function growth(points: readonly { x: number; y: number | null }[]): string {
  const known = points.filter((p): p is { x: number; y: number } => p.y !== null && p.y > 0 && p.x > 0);
  if (known.length < 2) return "not measured";
  const first = known[0]!;
  const last = known[known.length - 1]!;
  const slope = Math.log(last.y / first.y) / Math.log(last.x / first.x);
  const words =
    slope < -0.25
      ? "falling"
      : slope < 0.25
        ? "flat"
        : slope < 0.75
          ? "sublinear"
          : slope < 1.25
            ? "linear"
            : "superlinear";
  return `${words} (x${fmt(Math.round((last.y / first.y) * 10) / 10)} from ${fmt(first.x)} to ${fmt(last.x)} contenders)`;
}
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
      `Requests while waiting: ${fmt(cost)} per waiter per second (HEAD looks, one per poll interval per process whatever its number of waiters, and refused acquires) against the anchor's ${fmt(anchorCost)}. 99th percentile handoff ${fmt(f("handoffP99Ms"), " ms")}; the longest any waiter waited was ${fmt(f("longestWaitToMeanWait"))}x the mean wait (the anchor's: ${fmt(a("longestWaitToMeanWait"))}x).`,
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
    `Uncontended, an acquire and a release take ${fmt(f("rawCyclePerSec"))} cycles per second on raw SDK calls (2 requests) and ${fmt(f("libraryCyclePerSec"))} with the library (3 once warm: the acquire, the record write made \`If-Match\` the record the lock wrote last, the release; no read): ${fmt(f("uncontendedRatio"))}x the raw rate, for an owner record and a fencing token.`,
  );

  const scale = scaleOf(result, "scale");
  const far = scaleOf(result, "latency");
  const latencyMs = f("latency.delayInMs");
  const farLabel = `+${fmt(latencyMs)} ± ${fmt(f("latency.jitterInMs"))} ms per request (fault proxy)`;
  const series = (points: readonly ScalePoint[], pick: (p: ScalePoint) => number | null) =>
    points.map((p) => ({ x: p.contenders, y: pick(p) }));
  const scaleCharts = (
    [
      ["handoff", "Handoff median as contenders grow", "milliseconds", (p: ScalePoint) => p.handoffMedianMs],
      [
        "requests",
        "Requests per waiter per second as contenders grow",
        "per second",
        (p: ScalePoint) => p.requestsPerWaiterPerSec,
      ],
      [
        "fairness",
        "Longest wait over mean wait as contenders grow",
        "longest / mean",
        (p: ScalePoint) => p.longestWaitToMeanWait,
      ],
    ] as const
  ).flatMap(([name, title, unit, pick]) =>
    scale.length === 0
      ? []
      : [
          {
            name: `scale-${name}`,
            alt: `${title}, on Azurite and with an Azure-like round trip`,
            svg: renderLineChart({
              title,
              subtitle: `library defaults; hold ${fmt(f("holdMs"), " ms")}, rest ${fmt(f("restMs"), " ms")}`,
              xAxis: { label: "contenders", scale: "log2" },
              yAxis: { label: unit },
              series: [
                {
                  label: "Azurite (localhost)",
                  points: series(scale, pick).filter((p) => p.y !== null) as { x: number; y: number }[],
                },
                ...(far.length > 0
                  ? [
                      {
                        label: farLabel,
                        dash: "6 3",
                        points: series(far, pick).filter((p) => p.y !== null) as { x: number; y: number }[],
                      },
                    ]
                  : []),
              ],
              markers: true,
              ...(name === "fairness" ? { references: [{ value: 4, label: "goal: longest ≤ 4x mean" }] } : {}),
            }),
          },
        ],
  );
  if (scale.length > 0) {
    reading.push(
      `As contenders grow from ${fmt(scale[0]!.contenders)} to ${fmt(scale[scale.length - 1]!.contenders)} (library defaults): the handoff median is ${growth(series(scale, (p) => p.handoffMedianMs))}, requests per waiter per second ${growth(series(scale, (p) => p.requestsPerWaiterPerSec))}, longest over mean wait ${growth(series(scale, (p) => p.longestWaitToMeanWait))}.` +
        (far.length > 0
          ? ` With ${farLabel}: handoff ${growth(series(far, (p) => p.handoffMedianMs))}, requests per waiter ${growth(series(far, (p) => p.requestsPerWaiterPerSec))}.`
          : ""),
    );
  }
  if (latencyMs !== undefined) {
    reading.push(
      `Closer to Azure (${farLabel}), ${fmt(contenders)} contenders: handoff median ${fmt(f("latency.handoffMedianMs"), " ms")} against the anchor's ${fmt(f("latency.anchorHandoffMedianMs"), " ms")}, ${fmt(f("latency.requestsPerWaiterPerSec"))} requests per waiter per second against ${fmt(f("latency.anchorRequestsPerWaiterPerSec"))}, longest wait ${fmt(f("latency.longestWaitToMeanWait"))}x the mean.`,
    );
  }
  const locks = f("list.locks");
  if (locks !== undefined) {
    reading.push(
      `\`lock list\` over ${fmt(locks)} lock blobs: ${fmt(f("list.seconds"), " s")} and ${fmt(f("list.requests"))} requests (${fmt(f("list.locksPerSec"))} locks per second; one listing page of up to 5,000 blobs with their metadata per request, so the requests grow linearly with the locks, a request per 5,000).`,
    );
  }
  const latencyChart =
    latencyMs === undefined
      ? []
      : [
          {
            name: "latency-compared",
            alt: "Handoff median and requests per waiter per second, on Azurite and with an Azure-like round trip, library against the anchor",
            svg: renderBarChart({
              title: "Localhost against an Azure-like round trip",
              subtitle,
              groups: ["handoff median (ms), Azurite", `handoff median (ms), +${fmt(latencyMs)} ms`],
              series: [
                { label: LIBRARY, values: [handoff, f("latency.handoffMedianMs")] },
                { label: ANCHOR, values: [anchorHandoff, f("latency.anchorHandoffMedianMs")] },
              ],
              yAxis: { label: "milliseconds" },
            }),
          },
        ];

  return {
    title: "Lock handoff",
    intro:
      `Contenders in several processes take one blob lease lock in a loop: wait, hold, release, rest; with more demand than the lock can serve there is always someone waiting. ` +
      `The handoff is the time from the holder's release call to the next holder's \`acquire()\` resolving. The anchor is the source document's DistributedLock loop on raw SDK calls, in the same run.`,
    charts: [
      ...latencyChart,
      ...scaleCharts,
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
          references:
            anchorHandoff === undefined
              ? []
              : [{ value: anchorHandoff / 2, label: "goal: ≤ half the anchor's handoff median" }],
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
          references:
            anchorCost === undefined
              ? []
              : [{ value: anchorCost, label: "goal: ≤ the anchor's requests per waiter per second" }],
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
          ["handoff 99th percentile (ms)", fmt(f("handoffP99Ms")), fmt(a("handoffP99Ms"))],
          ["longest wait / mean wait", fmt(f("longestWaitToMeanWait")), fmt(a("longestWaitToMeanWait"))],
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
            "uncontended acquire + release cycles per second (ratio)",
            `${fmt(f("libraryCyclePerSec"))} (${fmt(f("uncontendedRatio"))}x)`,
            `${fmt(f("rawCyclePerSec"))} (raw SDK, no record)`,
          ],
        ],
      ),
      ...(scale.length > 0
        ? ["", "The scale curve (library defaults, on Azurite; the anchor at the same count):", "", scaleTable(scale)]
        : []),
      "",
      "Reading:",
      "",
      bullets(reading),
    ].join("\n"),
  };
};
