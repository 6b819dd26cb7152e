/**
 * `docs/observability.md` lists every name the library emits (issue 14): each span, attribute,
 * event and instrument of `src/observability/names.ts` appears in it, and every such name the page
 * quotes is one the library defines.
 */
import { readFileSync } from "node:fs";
import {
  ATTR,
  EVENT,
  EVENT_ATTR,
  MESSAGING_SYSTEM,
  METRIC,
  SCOPE_NAME,
  SPAN,
} from "../../../src/observability/names.js";

const whole = readFileSync("docs/observability.md", "utf8");
/** The page's last section lists the names 0.1 emitted and 0.2 renamed (old -> new): not names of today. */
const RENAMED_HEADING = "## Renamed in 0.2";
const [page, renamed] = whole.split(RENAMED_HEADING) as [string, string | undefined];
/** Every `quoted` token of a text. */
const quotedIn = (text: string) => new Set([...text.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!));
const quoted = quotedIn(page);

/** How the page writes a name: the consumer's span carries its queue (`process <queue>`). */
const asWritten = (name: string) => (name === SPAN.messageProcess ? `${name} <queue>` : name);

const defined = {
  span: Object.values(SPAN),
  attribute: Object.values(ATTR),
  event: Object.values(EVENT),
  "event attribute": Object.values(EVENT_ATTR),
  instrument: Object.values(METRIC),
  value: [SCOPE_NAME, MESSAGING_SYSTEM],
};

it.each(Object.entries(defined))("every %s name is listed", (_kind, names) => {
  expect(names.filter((name) => !quoted.has(asWritten(name)))).toEqual([]);
});

it("every span, attribute, event or instrument name on the page is defined", () => {
  const known = new Set(Object.values(defined).flat().map(asWritten));
  const names = [...quoted].filter((token) => /^(asc\.|messaging\.|error\.)[a-z0-9_.]+$|^process <queue>$/.test(token));
  expect(names.length).toBeGreaterThan(30);
  expect(names.filter((name) => !known.has(name))).toEqual([]);
});

it("the renamed names are listed with what replaced them, and no longer emitted", () => {
  if (renamed === undefined) throw new Error(`docs/observability.md has no '${RENAMED_HEADING}' section`);
  const tokens = quotedIn(renamed);
  const known = new Set(Object.values(defined).flat());
  for (const old of ["asc.target", "asc.queue.messages", "asc.queue.handler.duration"]) {
    expect(tokens.has(old)).toBe(true);
    expect(known.has(old)).toBe(false);
  }
  for (const current of [METRIC.consumedMessages, METRIC.processDuration, ATTR.resourceKind, ATTR.serverAddress])
    expect(tokens.has(current)).toBe(true);
});
