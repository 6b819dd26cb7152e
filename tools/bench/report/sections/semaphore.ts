/**
 * The `semaphore` scenario: a permit's cycle against a raw lease cycle and the lock's, and waiting
 * cost and fairness under contention, the library against the raw SDK loop, and as contenders and
 * permits grow (the matrix).
 */
import { renderBarChart } from "../../../internal/chart.js";
import { bullets, fmt, num, table } from "../markdown.js";
import type { SectionWriter } from "./section.js";

const LIBRARY = "blobSemaphore (library)";
const ANCHOR = "raw SDK loop: try every slot, then sleep 250-1000 ms";

interface MatrixPoint {
  readonly contenders: number;
  readonly permits: number;
  readonly processes: number;
  readonly requestsPerWaiterPerSec: number | null;
  readonly longestWaitToMeanWait: number | null;
  readonly waitMedianMs: number | null;
  readonly acquisitionsPerSec: number | null;
  readonly permitUtilisation: number | null;
  readonly overlapsAboveMax: number;
}

export const semaphoreSection: SectionWriter = (result) => {
  const f = (path: string) => num(result, path);
  const a = (path: string) => num(result, `anchor.${path}`);
  const matrix = (Array.isArray(result["matrix"]) ? result["matrix"] : []) as MatrixPoint[];
  const subtitle = `${fmt(f("contenders"))} contenders in ${fmt(f("processes"))} processes for ${fmt(f("permits"))} permits, holding ${fmt(f("holdMs"), " ms")} and resting ${fmt(f("restMs"), " ms")}`;
  const reading = [
    `Never more than the permits: ${fmt(f("overlapsAboveMax"))} acquisitions took the holders above ${fmt(f("permits"))} (raw loop: ${fmt(a("overlapsAboveMax"))}), ${fmt(f("slotOverlaps"))} slots had two holders at once, and each slot's fencing tokens ${result["tokensIncreasePerSlot"] === false ? "did not always go up" : "went up in the order it was held"}.`,
    `Waiting: ${fmt(f("requestsPerWaiterPerSec"))} requests per waiter per second (one listing of every slot per poll interval per process, whatever its number of waiters, and tries of slots a look saw free), against ${fmt(a("requestsPerWaiterPerSec"))} for the raw loop, which tries every slot each time it wakes. Taking a free slot costs ${fmt(f("requestsPerAcquisition"))} requests (the acquire and the slot's record).`,
    `Fairness: the longest any contender waited was ${fmt(f("longestWaitToMeanWait"))}x the mean wait (raw loop: ${fmt(a("longestWaitToMeanWait"))}x); median wait ${fmt(f("waitMedianMs"), " ms")} (raw loop: ${fmt(a("waitMedianMs"), " ms")}, whose contenders often take back the slot they just released while the others sleep). Throughput: ${fmt(f("acquisitionsPerSec"))} acquisitions per second against ${fmt(a("acquisitionsPerSec"))}; the permits were held ${fmt(f("permitUtilisation"))} of the time.`,
    `Uncontended, an acquire and a release take ${fmt(f("permitCyclePerSec"))} cycles per second for a permit, ${fmt(f("lockCyclePerSec"))} for the lock and ${fmt(f("rawCyclePerSec"))} for a raw lease (2 requests): ${fmt(f("uncontendedRatio"))}x the raw rate and ${fmt(f("permitToLockRatio"))}x the lock's. A permit taken again by the same object costs what the lock does (3 requests: the acquire, the record write on the ETag it wrote last, the release).`,
  ];
  const points = (pick: (p: MatrixPoint) => number | null) => matrix.map((p) => pick(p) ?? undefined);
  const groups = matrix.map((p) => `${p.contenders} contenders, ${p.permits} permits`);
  return {
    title: "Semaphore permits",
    intro:
      "Contenders in several processes take a permit of one blob-lease semaphore in a loop: wait, hold, release, rest; with more demand than the permits can serve there is always someone waiting. " +
      "The anchor is the loop one writes on raw SDK calls without the library, in the same run; the uncontended cycle is measured against a raw lease cycle and the lock's, in alternating slices.",
    charts: [
      {
        name: "cycle",
        alt: "Uncontended acquire and release cycles per second: raw lease, lock, permit",
        svg: renderBarChart({
          title: "Uncontended acquire + release",
          subtitle: "one caller, cycles back to back",
          groups: ["cycles per second"],
          series: [
            { label: "raw lease (2 requests)", values: [f("rawCyclePerSec")] },
            { label: "blobLock", values: [f("lockCyclePerSec")] },
            { label: LIBRARY, values: [f("permitCyclePerSec")] },
          ],
          yAxis: { label: "per second" },
        }),
      },
      {
        name: "waiting",
        alt: "Requests per waiter per second and longest over mean wait, library against the raw loop",
        svg: renderBarChart({
          title: "Cost of waiting, and fairness",
          subtitle,
          groups: ["requests per waiter per second", "longest wait / mean wait"],
          series: [
            { label: LIBRARY, values: [f("requestsPerWaiterPerSec"), f("longestWaitToMeanWait")] },
            { label: ANCHOR, values: [a("requestsPerWaiterPerSec"), a("longestWaitToMeanWait")] },
          ],
          yAxis: { label: "per second / ratio" },
          references: [{ value: 4, label: "goal: longest ≤ 4x mean" }],
        }),
      },
      ...(matrix.length === 0
        ? []
        : [
            {
              name: "matrix",
              alt: "Requests per waiter per second and longest over mean wait at 8 and 32 contenders for 2 and 4 permits",
              svg: renderBarChart({
                title: "As contenders and permits grow",
                subtitle: `library defaults; hold ${fmt(f("holdMs"), " ms")}, rest ${fmt(f("restMs"), " ms")}`,
                groups,
                series: [
                  { label: "requests per waiter per second", values: points((p) => p.requestsPerWaiterPerSec) },
                  { label: "longest wait / mean wait", values: points((p) => p.longestWaitToMeanWait) },
                ],
                yAxis: { label: "per second / ratio" },
                references: [{ value: 4, label: "goal: longest ≤ 4x mean" }],
              }),
            },
          ]),
    ],
    body: [
      table(
        ["figure", LIBRARY, ANCHOR],
        [
          [
            "acquisitions above the permits / slots with two holders",
            `${fmt(f("overlapsAboveMax"))} / ${fmt(f("slotOverlaps"))}`,
            `${fmt(a("overlapsAboveMax"))} / ${fmt(a("slotOverlaps"))}`,
          ],
          ["requests per waiter per second", fmt(f("requestsPerWaiterPerSec")), fmt(a("requestsPerWaiterPerSec"))],
          ["longest wait / mean wait", fmt(f("longestWaitToMeanWait")), fmt(a("longestWaitToMeanWait"))],
          ["acquire() wait median (ms)", fmt(f("waitMedianMs")), fmt(a("waitMedianMs"))],
          ["acquisitions per second", fmt(f("acquisitionsPerSec")), fmt(a("acquisitionsPerSec"))],
          [
            "requests per acquisition (taking a free slot)",
            fmt(f("requestsPerAcquisition")),
            fmt(a("requestsPerAcquisition")),
          ],
          [
            "uncontended cycles per second (x raw lease)",
            `${fmt(f("permitCyclePerSec"))} (${fmt(f("uncontendedRatio"))}x)`,
            `${fmt(f("rawCyclePerSec"))} (raw lease)`,
          ],
        ],
      ),
      ...(matrix.length === 0
        ? []
        : [
            "",
            table(
              [
                "contenders",
                "permits",
                "processes",
                "requests per waiter per second",
                "longest / mean wait",
                "wait median (ms)",
                "acquisitions per second",
                "permits held",
                "above the permits",
              ],
              matrix.map((p) => [
                p.contenders,
                p.permits,
                p.processes,
                fmt(p.requestsPerWaiterPerSec ?? undefined),
                fmt(p.longestWaitToMeanWait ?? undefined),
                fmt(p.waitMedianMs ?? undefined),
                fmt(p.acquisitionsPerSec ?? undefined),
                fmt(p.permitUtilisation ?? undefined),
                p.overlapsAboveMax,
              ]),
            ),
          ]),
      "",
      "Reading:",
      "",
      bullets(reading),
    ].join("\n"),
  };
};
