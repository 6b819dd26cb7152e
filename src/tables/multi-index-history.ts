/**
 * The write history of a multi-index record, and the one question it answers after a transaction
 * whose answer was lost: "was my write applied?"
 *
 * Every row of a record carries `_version`, the id of the write that produced it (the same on every
 * row), and `_history`, `<chain>:<seq>:<previous ids>`:
 * - `chain`: the id of the write that created the record (a create starts a new chain);
 * - `seq`: how many writes the chain has seen (the create is 1);
 * - the ids of the writes before this one, newest first, at most {@link MAX_HISTORY}.
 *
 * Every write of a record is ETag-checked against the version it read (the base), so the writes of
 * a chain form one line, and the write built on base seq s is seq s + 1. If my write (id w, on top
 * of seq s) was applied, any row of the record read later holds w as its version or among its
 * previous ids, until more than {@link MAX_HISTORY} writes follow it: then the verdict is "unknown".
 *
 * One assumption, as for the optimistic engine's write log: a history that was replaced (the record
 * deleted, its tombstones purged and the key created again, or rows written by hand) is taken as
 * not built on my write: whether or not mine landed before, it is not in the record now.
 */

/** The row property that holds the history. */
export const HISTORY = "_history";

/** How many previous write ids a row keeps. */
const MAX_HISTORY = 8;

/** A version's place in its chain. */
export interface RecordHistory {
  readonly chain: string;
  readonly seq: number;
  /** The ids of the writes before this version, newest first. */
  readonly previous: readonly string[];
}

/** A version as read: its write id and its history. */
export interface RecordVersion {
  readonly version: string;
  readonly history: RecordHistory;
}

/**
 * The history stored with version `version`. A row without one (written before histories, or by
 * hand) counts as the first write of a chain of its own.
 */
export function historyOf(version: string, stored: unknown): RecordHistory {
  if (typeof stored === "string") {
    const match = /^([A-Za-z0-9_-]+):(\d{1,15}):([A-Za-z0-9_,-]*)$/.exec(stored);
    if (match) {
      const previous = match[3] ? match[3].split(",") : [];
      if (previous.every((id) => id.length > 0)) return { chain: match[1]!, seq: Number(match[2]), previous };
    }
  }
  return { chain: version, seq: 1, previous: [] };
}

/** The stored form. */
export function formatHistory(history: RecordHistory): string {
  return `${history.chain}:${history.seq}:${history.previous.join(",")}`;
}

/** The history of the write `id` made on top of `base` (undefined for a create). */
export function nextHistory(id: string, base: RecordVersion | undefined): RecordHistory {
  if (!base) return { chain: id, seq: 1, previous: [] };
  return {
    chain: base.history.chain,
    seq: base.history.seq + 1,
    previous: [base.version, ...base.history.previous].slice(0, MAX_HISTORY),
  };
}

/**
 * Was the write `id`, made on top of `base` (undefined for a create), applied, judging by a row that
 * now holds `now`?
 */
export function judgeWrite(
  now: RecordVersion,
  id: string,
  base: RecordVersion | undefined,
): "applied" | "not-applied" | "unknown" {
  if (now.version === id) return "applied";
  if (!base) return now.history.chain === id ? "applied" : "not-applied";
  if (now.history.chain !== base.history.chain) return "not-applied"; // the history was replaced since
  const mine = base.history.seq + 1;
  const behind = now.history.seq - mine; // how many writes came after the one at my seq
  if (behind <= 0) return "not-applied"; // the record is at my base, or at my seq with another write
  if (behind > now.history.previous.length) return "unknown";
  return now.history.previous[behind - 1] === id ? "applied" : "not-applied";
}
