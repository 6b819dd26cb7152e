/**
 * The write history every optimistic write stores with the value, and the one question it answers:
 * "was my write applied?", after a write whose outcome is ambiguous.
 *
 * Why it is needed: a write can be applied by the service while its response is lost. The SDK then
 * sends it again and now gets 412 (the first attempt changed the ETag), or gives up with a network
 * error. Comparing values cannot tell "my write landed" from "someone wrote the same value" (ABA).
 * So each write carries a unique id, and the cell carries a short history of who wrote last:
 *
 * - `chain`: a random id of this history, new whenever a history starts (on an absent cell, on a
 *   version written without history, or on a last-writer-wins write);
 * - `seq`: how many writes this history has seen, so the version written on top of `seq` s is s + 1;
 * - `start`, for people reading the metadata: what the history started from: `a` (an absent cell),
 *   `r` (a version written without history), `w` (a blind last-writer-wins write);
 * - one entry per writer slot (a process plus a concurrency slot), holding the id and seq of that
 *   slot's last write. At most {@link MAX_LOG_WRITERS} slots are kept; when more write, the slots with
 *   the oldest writes are dropped and `pruned` remembers the newest seq dropped.
 *
 * A slot makes one write at a time, so if my write (slot k, id w, on top of seq s) was applied, the
 * entry for k says w until k writes again, unless it was pruned, which takes more than
 * {@link MAX_LOG_WRITERS} other slots writing after it. That bounds the undecidable case by the
 * number of distinct writers, not by the number of writes, however long the SDK's retries took.
 *
 * Stored form: `1;<chain>;<seq>;<start>;<pruned>;<slot>.<id>.<seq>,...` (header-safe ASCII).
 */
import { randomBytes } from "node:crypto";

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

/**
 * What reading the cell back says about a write whose outcome was ambiguous:
 * - `applied`: the service applied it;
 * - `not-applied`: it was not applied, and cannot be any more (the cell moved on without it);
 * - `unchanged`: the cell is exactly as the write found it: not applied so far, but a write still
 *   in flight could yet land;
 * - `unknown`: the history does not reach back far enough to tell.
 */
type WriteVerdict = "applied" | "not-applied" | "unchanged" | "unknown";

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
    const start = lastWriterWins ? "w" : base ? "r" : "a";
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
 * cell as read after the write failed? See {@link WriteVerdict}.
 *
 * One assumption: a write that replaced the history since `base` (a writer outside this library,
 * `writeLastWriterWins`, or a delete and re-create) is taken to be last-writer-wins, that is, not
 * built on my write: whether or not mine landed before it, it is not in the cell now, so applying
 * it again applies it once. Only a writer outside the library that read my value and wrote on top
 * of it, inside the moments between my lost response and my read-back, breaks that assumption.
 */
export function judgeWrite(
  now: LoggedVersion | undefined,
  base: LoggedVersion | undefined,
  attempt: WriterIdentity,
  written: WriteLog,
): WriteVerdict {
  if (!now) return base ? "not-applied" : "unchanged";
  if (base && now.etag === base.etag) return "unchanged";
  const current = parseWriteLog(now.log);
  if (!current) return "not-applied"; // history replaced since (see the assumption above)
  if (current.writers.some((w) => w.slot === attempt.slot && w.id === attempt.id)) return "applied";
  const previous = parseWriteLog(base?.log);
  // Without history in the base, my write started a chain with a fresh random id: only I use it.
  if (!previous) return current.chain === written.chain ? "applied" : "not-applied";
  if (current.chain !== previous.chain) return "not-applied"; // history replaced since
  // Mine would be seq s + 1. Its entry can only have gone by pruning, which needs the pruned
  // watermark to reach s + 1 and at least MAX_LOG_WRITERS writes after it.
  const mySeq = previous.seq + 1;
  if (current.pruned < mySeq || current.seq < mySeq + MAX_LOG_WRITERS) return "not-applied";
  return "unknown";
}

function wholeNumber(text: string | undefined): number | undefined {
  if (!text || text.length > 15) return undefined;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 48 || code > 57) return undefined;
  }
  return Number(text);
}
