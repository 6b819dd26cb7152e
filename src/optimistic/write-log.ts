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
 * - `start`: what the history started from: `a` (absent), `w` (a blind last-writer-wins write),
 *   `r<hash>` (the version with that ETag, which had no history);
 * - one entry per writer slot (a process plus a concurrency slot), holding the id and seq of that
 *   slot's last write. At most {@link MAX_LOG_WRITERS} slots are kept; when more write, the slots with
 *   the oldest writes are dropped and `pruned` remembers the newest seq dropped.
 *
 * A slot makes one write at a time, so if my write (slot k, id w, on top of seq s) was applied, the
 * entry for k says w until k writes again, unless more than {@link MAX_LOG_WRITERS} other slots
 * wrote since (then `pruned` >= s + 1). That bounds the undecidable case by the number of distinct
 * writers, not by the number of writes, however long the SDK's retries took.
 *
 * Stored form: `1;<chain>;<seq>;<start>;<pruned>;<slot>.<id>.<seq>,...` (header-safe ASCII).
 */
import { createHash, randomBytes } from "node:crypto";

/** How many writer slots a history keeps. */
export const MAX_LOG_WRITERS = 32;

/** The longest stored history, in characters (for size budgets such as the table entity limit). */
export const MAX_LOG_LENGTH = 64 + MAX_LOG_WRITERS * 32;

/** One writer slot's last write. */
export interface LogWriter {
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
export interface WriterIdentity {
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
export type WriteVerdict = "applied" | "not-applied" | "unchanged" | "unknown";

/** A new random id (8 characters, 48 bits) for a write or a history. */
export function newWriteId(): string {
  return randomBytes(6).toString("base64url");
}

/** Parses a stored history; `undefined` when absent or not in this format. */
export function parseWriteLog(text: string | undefined): WriteLog | undefined {
  if (!text) return undefined;
  const parts = text.split(";");
  if (parts.length !== 6 || parts[0] !== "1") return undefined;
  const [, chain, seqText, start, prunedText, writersText] = parts as [string, string, string, string, string, string];
  const seq = wholeNumber(seqText);
  const pruned = wholeNumber(prunedText);
  if (!chain || seq === undefined || pruned === undefined || !start) return undefined;
  const writers: LogWriter[] = [];
  for (const entry of writersText ? writersText.split(",") : []) {
    const [slot, id, writerSeqText, extra] = entry.split(".");
    const writerSeq = wholeNumber(writerSeqText);
    if (!slot || !id || writerSeq === undefined || extra !== undefined) return undefined;
    writers.push({ slot, id, seq: writerSeq });
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
export function nextWriteLog(base: LoggedVersion | undefined, writer: WriterIdentity, { lastWriterWins = false } = {}): WriteLog {
  const previous = lastWriterWins ? undefined : parseWriteLog(base?.log);
  if (!previous) {
    const start = lastWriterWins ? "w" : base ? `r${etagHash(base.etag)}` : "a";
    return { chain: newWriteId(), seq: 1, start, pruned: 0, writers: [{ ...writer, seq: 1 }] };
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
  if (current?.writers.some((w) => w.slot === attempt.slot && w.id === attempt.id)) return "applied";
  const previous = parseWriteLog(base?.log);
  if (previous) {
    // My write would be seq previous.seq + 1 of this chain; its entry can only have gone by pruning.
    if (current?.chain !== previous.chain) return "unknown";
    return current.pruned < previous.seq + 1 ? "not-applied" : "unknown";
  }
  // The base had no history, so my write started a chain of its own (a fresh random id).
  if (!current) return "unknown";
  if (current.chain === written.chain) return "applied";
  const expectedStart = base ? `r${etagHash(base.etag)}` : "a";
  // Another history started from the very state my write was based on: only one write can apply
  // on top of a given state, so mine did not (for an absent base: or it was deleted since).
  return current.start === expectedStart ? "not-applied" : "unknown";
}

function etagHash(etag: string): string {
  return createHash("sha256").update(etag).digest("base64url").slice(0, 11);
}

function wholeNumber(text: string | undefined): number | undefined {
  if (!text || !/^\d{1,15}$/.test(text)) return undefined;
  return Number(text);
}
