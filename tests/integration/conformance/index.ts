/**
 * Every behaviour the service conformance suite replays, and the sentence that counts them by the
 * kind of source that backs them (docs/service-conformance.md states it).
 */
import { BLOB_LEASES } from "./blob-leases.js";
import { BLOB_WRITES } from "./blob-writes.js";
import { QUEUES } from "./queues.js";
import { TABLES } from "./tables.js";
import { backingOf, differsOnAzurite, type Behaviour } from "./types.js";

export const BEHAVIOURS: readonly Behaviour[] = [...BLOB_LEASES, ...BLOB_WRITES, ...QUEUES, ...TABLES];

/** How many behaviours each kind of source backs, as the docs state it. */
export function countsSentence(behaviours: readonly Behaviour[] = BEHAVIOURS): string {
  const count = (kind: ReturnType<typeof backingOf>) => behaviours.filter((b) => backingOf(b) === kind).length;
  return (
    `${behaviours.length} behaviours: ${count("recording")} recording-backed, ${count("page")} page-backed, ` +
    `${count("unbacked")} unbacked; ${behaviours.filter(differsOnAzurite).length} where Azurite differs`
  );
}
