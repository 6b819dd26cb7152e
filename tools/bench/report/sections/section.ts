/** What each scenario's part of the report is made of. */
import type { ScenarioResult } from "../markdown.js";

/** One SVG chart; written next to the report as `<scenario>-<name>.svg`. */
interface Chart {
  readonly name: string;
  /** The image's alt text. */
  readonly alt: string;
  readonly svg: string;
}

/** One scenario's part of the report (its goals and JSON are added by the report writer). */
interface Section {
  readonly title: string;
  /** What was measured, and how. */
  readonly intro: string;
  readonly charts: readonly Chart[];
  /** Tables and the reading of the figures. */
  readonly body: string;
}

/** Writes the section of one scenario from its JSON. */
export type SectionWriter = (result: ScenarioResult) => Section;
