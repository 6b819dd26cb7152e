/**
 * What `lock list` and `lock show` print. A lock's record is written by whoever takes the lock, so
 * every field that comes from storage (holder name, host, blob names) is printed escaped: a holder
 * named "\u001b[2J" or "x\nfake line" shows as such, and cannot forge output lines or drive the
 * operator's terminal. Both commands give the holder one JSON shape ({@link HolderJson}).
 */
import type { LockRow } from "azure-storage-concurrency/lease";
import { describeHolder, type LockHolder, type LockInfo } from "azure-storage-concurrency/lease";

/**
 * Characters that must not reach a terminal raw: C0 and C1 controls (escape sequences, newlines,
 * carriage returns), DEL, and the invisible or reordering ones (zero-width, bidirectional overrides,
 * line and paragraph separators).
 */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\ufeff]/g;

const hex = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;

/** `text` safe to print: backslashes doubled, every unprintable character as `\uXXXX`. */
export function printable(text: string): string {
  return text.replace(/\\/g, "\\\\").replace(UNPRINTABLE, hex);
}

/** JSON whose strings are safe to print too (JSON.stringify leaves DEL, C1 controls and bidi overrides raw). */
export function printableJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[\u007f-\u009f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\ufeff]/g,
    hex,
  );
}

/** A lock's holder, in `lock list --json` and `lock show --json` alike. */
interface HolderJson {
  readonly name: string | null;
  readonly host: string;
  readonly pid: number;
  /** ISO 8601, from the holder's clock. */
  readonly acquiredAt: string | null;
  readonly ageInSeconds: number | null;
  readonly durationInSeconds: number | "infinite" | null;
  readonly renewIntervalInMs: number | null;
}

/** The holder of a lock record as {@link HolderJson}; null when none was recorded. */
export function holderJson(holder: LockHolder | undefined): HolderJson | null {
  if (!holder) return null;
  return {
    name: holder.name ?? null,
    host: holder.host,
    pid: holder.pid,
    acquiredAt: holder.acquiredAt?.toISOString() ?? null,
    ageInSeconds: holder.acquiredAt ? Math.max(0, Math.round((Date.now() - holder.acquiredAt.getTime()) / 1000)) : null,
    durationInSeconds:
      holder.durationInSeconds === undefined
        ? null
        : holder.durationInSeconds === Infinity
          ? "infinite"
          : holder.durationInSeconds,
    renewIntervalInMs: holder.renewIntervalInMs ?? null,
  };
}

/** The holder as one escaped phrase: `'name' on host (pid 123)`. */
export function holderText(holder: LockHolder): string {
  return printable(describeHolder(holder));
}

/** "42s", "5m", "3h", or "-". */
export function age(acquiredAt: Date | undefined): string {
  if (!acquiredAt) return "-";
  const seconds = Math.max(0, Math.round((Date.now() - acquiredAt.getTime()) / 1000));
  return seconds < 120
    ? `${seconds}s`
    : seconds < 7200
      ? `${Math.round(seconds / 60)}m`
      : `${Math.round(seconds / 3600)}h`;
}

/** `lock show --json`. */
export function lockJson(info: LockInfo): string {
  return printableJson({
    description: info.description,
    exists: info.exists,
    state: info.state,
    held: info.held,
    durationType: info.durationType ?? null,
    fencingToken: info.fencingToken,
    holder: holderJson(info.holder),
  });
}

/** `lock show`, as text. */
export function lockText(info: LockInfo): string {
  const holder = info.holder;
  const lease =
    holder?.durationInSeconds === undefined
      ? "-"
      : `${holder.durationInSeconds === Infinity ? "infinite" : `${holder.durationInSeconds} s`}` +
        `${holder.renewIntervalInMs === undefined ? "" : `, ${holder.durationInSeconds === Infinity ? "checked" : "renewed"} every ${holder.renewIntervalInMs} ms`}`;
  return [
    `lock:          ${printable(info.description)}`,
    `state:         ${info.state}${info.durationType ? ` (${info.durationType} lease)` : ""}`,
    `fencing token: ${info.fencingToken}`,
    `${info.held ? "holder:       " : "last holder:  "} ${holder ? holderText(holder) : "-"}`,
    `acquired:      ${holder?.acquiredAt ? `${holder.acquiredAt.toISOString()} (${age(holder.acquiredAt)} ago)` : "-"}`,
    `lease:         ${lease}`,
  ].join("\n");
}

/** `lock list --json`: one array, each holder in {@link HolderJson}'s shape. */
export function listJson(rows: readonly LockRow[]): string {
  return printableJson(rows.map((row) => ({ ...row, holder: holderJson(row.holder) })));
}

/** `lock list`, as an aligned table (escaped). */
export function listText(rows: readonly LockRow[]): string {
  const table = [
    ["NAME", "STATE", "TOKEN", "AGE", "HOLDER (last, when not held)"],
    ...rows.map((r) => [
      printable(r.name),
      r.state,
      String(r.fencingToken),
      age(r.holder?.acquiredAt),
      r.holder ? holderText(r.holder) : "-",
    ]),
  ];
  return columns(table);
}

/** Rows of cells (already escaped) as aligned columns, two spaces apart; the last column is not padded. */
export function columns(table: readonly (readonly string[])[]): string {
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  return table
    .map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  "))
    .join("\n");
}
