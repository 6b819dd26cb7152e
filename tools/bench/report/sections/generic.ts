/** Any scenario without a section of its own: its top-level figures as a table. */
import { fmt, table } from "../markdown.js";
import type { SectionWriter } from "./section.js";

export const genericSection: SectionWriter = (result) => {
  const figures = Object.entries(result).filter(([key, value]) => typeof value === "number" && key !== "durationSec");
  return {
    title: `Scenario \`${result.scenario}\``,
    intro: `The report has no charts for \`${result.scenario}\` yet; its top-level figures follow, and its whole JSON below.`,
    charts: [],
    body:
      figures.length === 0
        ? ""
        : table(
            ["figure", "value"],
            figures.map(([key, value]) => [`\`${key}\``, fmt(value as number)]),
          ),
  };
};
