/**
 * The write history every optimistic write stores with the value, and the one question it answers:
 * "was my write applied?", after a write whose outcome is ambiguous. This is the write-history
 * contract; the engine (`round.ts`, `write-outcome.ts`) and the cells rely on it and on nothing else.
 *
 * Why it is needed: a write can be applied by the service while its response is lost. The SDK then
 * sends it again and now gets 412 (the first attempt changed the ETag), or gives up with a network
 * error. Comparing values cannot tell "my write landed" from "someone wrote the same value" (ABA).
 * So each write carries a unique id, and the cell carries a short history of who wrote last:
 *
 * - `chain`: a random id of this history, new whenever a history starts (on an absent cell, on a
 *   version written without history, or on a last-writer-wins write);
 * - `seq`: how many writes this history has seen, so the version written on top of `seq` s is s + 1;
 * - `start`: what the history started from: `a` (an absent cell), `r<tag>` (the version written
 *   without history whose ETag hashes to `<tag>`), `w` (a blind last-writer-wins write);
 * - one entry per writer slot (a process plus a concurrency slot), holding the id and seq of that
 *   slot's last write. At most {@link MAX_LOG_WRITERS} slots are kept; when more write, the slots with
 *   the oldest writes are dropped and `pruned` remembers the newest seq dropped.
 *
 * The contract:
 * 1. A write computed from version V stores `nextWriteLog(V, its slot and id)` with the value, in the
 *    same request, under a condition that holds only while the cell is still V (`If-Match`, or
 *    `If-None-Match: *` when V is "absent"). So two sends of one write can never both be applied,
 *    and resending a write whose outcome is unknown is safe.
 * 2. A slot makes one write at a time (`process-state.ts` hands slots out from one pool per
 *    process), so if my write (slot k, id w) was applied, the entry for k says w until k writes
 *    again, unless it was pruned, which takes more than {@link MAX_LOG_WRITERS} other slots writing
 *    after it. That bounds the undecidable case by the number of distinct writers, not by the number
 *    of writes, however long the SDK's retries took.
 * 3. Every writer through this library continues the history of the version it read. A write that
 *    does not (a writer outside the library, `writeLastWriterWins`, a delete and re-create) replaces
 *    it, and then nothing can tell whether my write landed before: it may have been read, changed
 *    and written back without its history. The verdict is then "unknown", never "not applied".
 *
 * What reading the cell back says ({@link judgeWrite}): `applied` (my entry is there, or the cell
 * is on the history my write started); `unchanged` (the cell is still V: not applied so far, but a
 * send still on its way could land, so the engine sends the same write again); `not-applied` (the
 * cell moved on along V's history without my entry, or another history started on V itself: my
 * condition no longer holds, it never will be applied); `unknown` (the history was replaced, or my
 * entry may have been pruned).
 *
 * Stored form: `1;<chain>;<seq>;<start>;<pruned>;<slot>.<id>.<seq>,...` (header-safe ASCII).
 */
import { createHash, randomBytes } from "node:crypto";

/** How many writer slots a history keeps. */
export const MAX_LOG_WRITERS = 32;

/** The longest stored history, in characters (for size budgets such as the table entity limit). */
export const MAX_LOG_LENGTH = 64 + MAX_LOG_WRITERS * 32;

/** One writer slot's last write. */
interface LogWriter {
  readonly slot: string;
  readonly id: string;
  readonly seq: number;
}

/** A parsed write history. */
export interface WriteLog {
  readonly chain: string;
  readonly seq: number;
  readonly start: string;
  readonly pruned: number;
  readonly writers: readonly LogWriter[];
}

/** Who is writing: the slot and the write's unique id. */
interface WriterIdentity {
  readonly slot: string;
  readonly id: string;
}

/** A version as far as the history is concerned. */
export interface LoggedVersion {
  readonly etag: string;
  readonly log: string | undefined;
}

/** What reading the cell back says about a write whose outcome was ambiguous (see the module notes). */
export type WriteVerdict = "applied" | "not-applied" | "unchanged" | "unknown";

/** This process's random part of writer slots and history ids (8 characters, 48 bits). */
export const PROCESS_ID = randomBytes(6).toString("base64url");
let counter = 0;

/**
 * A new id for a write: unique within this process, which is enough because a write is always
 * looked up together with its slot, and slots carry {@link PROCESS_ID}. (A counter rather than fresh
 * randomness: this runs on every write.)
 */
export function newWriteId(): string {
  return (counter++).toString(36);
}

/** A new id for a history: unique across processes. */
function newChainId(): string {
  return `${PROCESS_ID}${(counter++).toString(36)}`;
}

/** Parses a stored history; `undefined` when absent or not in this format. */
export function parseWriteLog(text: string | undefined): WriteLog | undefined {
  if (!text || !text.startsWith("1;")) return undefined;
  const parts = text.split(";");
  if (parts.length !== 6) return undefined;
  const chain = parts[1]!;
  const seq = wholeNumber(parts[2]);
  const start = parts[3]!;
  const pruned = wholeNumber(parts[4]);
  if (!chain || seq === undefined || pruned === undefined || !start) return undefined;
  const writers: LogWriter[] = [];
  const writersText = parts[5]!;
  if (writersText) {
    for (const entry of writersText.split(",")) {
      const first = entry.indexOf(".");
      const second = entry.indexOf(".", first + 1);
      if (first <= 0 || second <= first + 1 || entry.indexOf(".", second + 1) !== -1) return undefined;
      const writerSeq = wholeNumber(entry.slice(second + 1));
      if (writerSeq === undefined) return undefined;
      writers.push({ slot: entry.slice(0, first), id: entry.slice(first + 1, second), seq: writerSeq });
    }
  }
  return { chain, seq, start, pruned, writers };
}

/** The stored form of a history. */
export function formatWriteLog(log: WriteLog): string {
  const writers = log.writers.map((w) => `${w.slot}.${w.id}.${w.seq}`).join(",");
  return `1;${log.chain};${log.seq};${log.start};${log.pruned};${writers}`;
}

/**
 * The history to store with a write made on top of `base` (`undefined` when creating), or, with
 * `lastWriterWins`, a fresh history (a blind write does not know what it replaces).
 */
export function nextWriteLog(
  base: LoggedVersion | undefined,
  writer: WriterIdentity,
  { lastWriterWins = false } = {},
): WriteLog {
  const previous = lastWriterWins ? undefined : parseWriteLog(base?.log);
  if (!previous) {
    const start = lastWriterWins ? "w" : base ? `r${etagTag(base.etag)}` : "a";
    return { chain: newChainId(), seq: 1, start, pruned: 0, writers: [{ ...writer, seq: 1 }] };
  }
  const seq = previous.seq + 1;
  const writers = [{ ...writer, seq }, ...previous.writers.filter((w) => w.slot !== writer.slot)];
  let pruned = previous.pruned;
  if (writers.length > MAX_LOG_WRITERS) {
    writers.sort((a, b) => b.seq - a.seq);
    for (const dropped of writers.splice(MAX_LOG_WRITERS)) pruned = Math.max(pruned, dropped.seq);
  }
  return { chain: previous.chain, seq, start: previous.start, pruned, writers };
}

/**
 * Was the write `attempt` (made on top of `base`, storing `written`) applied, judging by `now`, the
 * cell as read after the write failed? See the contract in the module notes.
 */
export function judgeWrite(
  now: LoggedVersion | undefined,
  base: LoggedVersion | undefined,
  attempt: WriterIdentity,
  written: WriteLog,
): WriteVerdict {
  if (!now) return base ? "unknown" : "unchanged"; // deleted since: whatever it held is gone
  if (base && now.etag === base.etag) return "unchanged";
  const current = parseWriteLog(now.log);
  if (!current) return "unknown"; // history replaced since (rule 3)
  if (current.writers.some((w) => w.slot === attempt.slot && w.id === attempt.id)) return "applied";
  if (current.chain !== written.chain) {
    // Another history. One started on my base itself (a version without history, which only its
    // ETag names) was written under the same condition as mine: theirs landed, so mine never can.
    const startedOnMyBase = base && !parseWriteLog(base.log) && current.start === `r${etagTag(base.etag)}`;
    return startedOnMyBase ? "not-applied" : "unknown"; // otherwise replaced since (rule 3)
  }
  // My write started this chain (its id is random and only I use it): only a version built on mine carries it.
  if (written.seq === 1) return "applied";
  // Mine would be seq s + 1 of the chain it continued. Its entry can only have gone by pruning, which
  // needs the pruned watermark to reach s + 1 and at least MAX_LOG_WRITERS writes after it.
  if (current.pruned < written.seq || current.seq < written.seq + MAX_LOG_WRITERS) return "not-applied";
  return "unknown";
}

/** A short, header-safe tag of an ETag (ETags are unique per version, unlike "absent"). */
function etagTag(etag: string): string {
  return createHash("sha256").update(etag).digest("base64url").slice(0, 12);
}

function wholeNumber(text: string | undefined): number | undefined {
  if (!text || text.length > 15) return undefined;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 48 || code > 57) return undefined;
  }
  return Number(text);
}
