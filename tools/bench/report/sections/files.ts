/** The `files` scenario: read-modify-write under a file lease with lost responses and a reader. */
import { renderBarChart } from "../../../internal/chart.js";
import { bullets, fmt, num, table } from "../markdown.js";
import type { SectionWriter } from "./section.js";

const WAYS = [
  ["raw", "raw SDK: create + put range, blind retry"],
  ["library", "updateFileUnderLease"],
  ["locked", "fileLock per update + updateFileUnderLease"],
] as const;

export const filesSection: SectionWriter = (result) => {
  const f = (path: string) => num(result, path);
  const increments = f("increments");
  const drop = f("dropProbability") ?? 0;
  const onResponder = result["filesTarget"] === "files-responder";
  const extra = WAYS.map(([way]) => f(`${way}ExtraIncrements`));
  const torn = WAYS.map(([way]) => f(`${way}.tornReads`));
  const reads = WAYS.map(([way]) => f(`${way}.reads`));
  const subtitle = `${fmt(increments)} increments per way${drop > 0 ? `, ${fmt(drop * 100)}% of write responses dropped after the write was applied` : ""}`;
  const reading = [
    `Lost responses: the raw loop's counter ended ${fmt(extra[0])} above the ${fmt(increments)} increments it reported (a write applied, its response lost, the whole update tried again); \`updateFileUnderLease\` ended ${fmt(extra[1])} above, and with a lock per update ${fmt(extra[2])}.`,
    `Torn reads: a reader polling the file meanwhile found ${fmt(torn[0])} of ${fmt(reads[0])} reads half-written with the raw loop (the window between Create File, which leaves the file blank at its new size, and Put Range), ${fmt(torn[1])} of ${fmt(reads[1])} with the library (one Create File carrying the content) and ${fmt(torn[2])} of ${fmt(reads[2])} with a lock per update.`,
    `Requests per increment: ${fmt(f("raw.requestsPerIncrement"))} raw, ${fmt(f("library.requestsPerIncrement"))} with the library, ${fmt(f("locked.requestsPerIncrement"))} when each update also takes and releases the lock (the lease, the lock's record, the release): hold one lock around many updates where you can.`,
  ];
  if (onResponder) {
    reading.push(
      "Azurite has no Azure Files, so this scenario runs against the project's own Files responder (an in-process HTTP server that answers the Files REST operations the library uses): its counts show correctness, and its times say nothing about the Files service's speed. Run against an account (`--use-env` or `--connection-string`), it measures Azure Files, without injected faults.",
    );
  }
  return {
    title: "Files: read-modify-write under a lease",
    intro:
      "A JSON counter file is incremented under its file lease while a reader polls it, and (on the Files responder) a fault proxy drops a share of the write responses after the service applied them. The raw SDK way does what the SDK invites (download, `create(size)` + `uploadRange`, retry the whole update on a failure); the library's `updateFileUnderLease` writes once and checks before retrying.",
    charts: [
      {
        name: "correctness",
        alt: "Double-applied increments and torn reads: raw SDK, updateFileUnderLease, fileLock per update",
        svg: renderBarChart({
          title: "Files: what goes wrong without care",
          subtitle,
          groups: WAYS.map(([, label]) => label),
          series: [
            { label: "increments applied twice", values: extra },
            { label: "torn reads seen", values: torn },
          ],
          yAxis: { label: "count in the run" },
        }),
      },
      {
        name: "requests",
        alt: "HTTP requests per increment: raw SDK, updateFileUnderLease, fileLock per update",
        svg: renderBarChart({
          title: "Files: requests per increment",
          subtitle,
          groups: WAYS.map(([, label]) => label),
          series: [
            { label: "HTTP requests per increment", values: WAYS.map(([way]) => f(`${way}.requestsPerIncrement`)) },
          ],
          yAxis: { label: "HTTP requests per increment" },
        }),
      },
    ],
    body: [
      table(
        ["way", "counter / reported", "torn reads / reads", "requests per increment", "time (ms)"],
        WAYS.map(([way, label], i) => [
          label,
          `${fmt(f(`${way}.finalValue`))} / ${fmt(f(`${way}.reportedIncrements`))}`,
          `${fmt(torn[i])} / ${fmt(reads[i])}`,
          fmt(f(`${way}.requestsPerIncrement`)),
          fmt(f(`${way}.ms`)),
        ]),
      ),
      "",
      "Reading:",
      "",
      bullets(reading),
    ].join("\n"),
  };
};
