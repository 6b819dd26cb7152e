/**
 * The tick arithmetic of a schedule: when its ticks fall, as instants (milliseconds since the
 * epoch), computed the same way by every instance so that a tick has one identity across a fleet.
 *
 * - `everyInMs`: the ticks are the whole multiples of the period since the Unix epoch (UTC), so
 *   instances that never talked to each other agree on them (`everyInMs: 60_000` ticks on each
 *   minute, `3_600_000` on each hour of UTC).
 * - `cron`: the pattern is parsed and stepped by croner (https://github.com/hexagon/croner, MIT, no
 *   dependencies): 5 fields (minute precision) or 6 (seconds first), names (`MON`, `JAN`), `L`,
 *   `W`, `#`, in the IANA `timeZone` given (UTC by default, never the machine's own zone: every
 *   instance must compute the same instants). Daylight saving time follows croner's rules: a
 *   fixed-time job (`30 2 * * *`) whose time falls in the spring-forward gap runs once, at the first
 *   valid time after the gap, and once on a repeated autumn hour; an interval job (`*\/30 * * * *`)
 *   runs at every instant the pattern matches, both repeated ones included. Each is a distinct
 *   instant, hence a distinct tick.
 *
 * A tick's id is `<schedule name>@<due instant in ISO 8601 UTC>`: derived from the schedule alone,
 * so the instances that run it, take it over or skip it all name it alike.
 */
import { Cron } from "croner";
import { checkNumber, describeValue } from "../internal/validate.js";

/**
 * When a schedule ticks: either `everyInMs` or a `cron` pattern (with an optional `timeZone`).
 *
 * @example
 * ```ts
 * import type { ScheduleTiming } from "azure-storage-concurrency/schedule";
 *
 * const nightly: ScheduleTiming = { cron: "0 2 * * *", timeZone: "Europe/Paris" }; // 02:00 in Paris
 * const everyMinute: ScheduleTiming = { everyInMs: 60_000 }; // on each minute of UTC
 * ```
 */
export type ScheduleTiming =
  | {
      /**
       * A cron pattern: 5 fields (`minute hour day-of-month month day-of-week`), or 6 with seconds
       * first. Day of month and day of week combine with OR, as in Vixie cron.
       */
      readonly cron: string;
      /**
       * The IANA time zone the pattern is read in (`"Europe/Paris"`, `"America/New_York"`).
       * @default "UTC"
       */
      readonly timeZone?: string;
      /** Not with `cron`. */
      readonly everyInMs?: undefined;
    }
  | {
      /**
       * The period, in milliseconds (at least 100): the ticks are its whole multiples since the Unix
       * epoch, so `60_000` ticks on each minute and `86_400_000` at midnight UTC.
       */
      readonly everyInMs: number;
      /** Not with `everyInMs`. */
      readonly cron?: undefined;
      /** Not with `everyInMs`: its ticks are instants since the epoch, in no time zone. */
      readonly timeZone?: undefined;
    };

/** The shortest `everyInMs` accepted. */
const MIN_PERIOD_IN_MS = 100;

/** A schedule's ticks, as instants in milliseconds since the epoch. */
export interface Timing {
  /** The timing in words, as recorded in the status blob: `every 200 ms`, `cron '0 2 * * *' in Europe/Paris`. */
  readonly description: string;
  /** The first tick strictly after `afterMs`; `undefined` when the schedule never ticks again. */
  next(afterMs: number): number | undefined;
  /** The last tick strictly before `beforeMs`; `undefined` when there is none. */
  previous(beforeMs: number): number | undefined;
  /** How many ticks fall in `[fromMs, toMs]`, counting at most `cap` (then `cap`). */
  count(fromMs: number, toMs: number, cap: number): number;
}

/** Checks a {@link ScheduleTiming} (a `TypeError`/`RangeError` naming what to fix) and builds its {@link Timing}. */
export function resolveTiming(timing: unknown, nowMs: number = Date.now()): Timing {
  if (typeof timing !== "object" || timing === null) {
    throw new TypeError(
      `\`timing\` must be an object: { everyInMs } or { cron, timeZone? }, got ${describeValue(timing)}.`,
    );
  }
  const { cron, everyInMs, timeZone } = timing as Record<string, unknown>;
  if ((cron === undefined) === (everyInMs === undefined)) {
    throw new TypeError("`timing` must have exactly one of `cron` and `everyInMs`.");
  }
  if (everyInMs !== undefined) {
    if (timeZone !== undefined) {
      throw new TypeError(
        "`timeZone` applies to `cron` only: `everyInMs` ticks on whole multiples of the period since the Unix epoch.",
      );
    }
    return periodTiming(checkNumber("everyInMs", everyInMs, { min: MIN_PERIOD_IN_MS, integer: true }));
  }
  return cronTiming(cron, timeZone, nowMs);
}

function periodTiming(periodInMs: number): Timing {
  return {
    description: `every ${periodInMs} ms`,
    next: (afterMs) => (Math.floor(afterMs / periodInMs) + 1) * periodInMs,
    previous: (beforeMs) => (Math.ceil(beforeMs / periodInMs) - 1) * periodInMs,
    count(fromMs, toMs, cap) {
      const first = Math.ceil(fromMs / periodInMs);
      const last = Math.floor(toMs / periodInMs);
      return Math.max(0, Math.min(cap, last - first + 1));
    },
  };
}

function cronTiming(pattern: unknown, timeZone: unknown, nowMs: number): Timing {
  if (typeof pattern !== "string" || pattern.trim() === "") {
    throw new TypeError(`\`cron\` must be a cron pattern such as "0 2 * * *", got ${describeValue(pattern)}.`);
  }
  const zone = timeZone === undefined ? "UTC" : checkTimeZone(timeZone);
  let cron: Cron;
  try {
    // No function: croner only parses and steps the pattern; it starts no timer of its own.
    cron = new Cron(pattern, { timezone: zone, mode: "5-or-6-parts" });
  } catch (error) {
    throw new RangeError(
      `\`cron\` ${JSON.stringify(pattern)} is not a valid pattern (${error instanceof Error ? error.message : "unreadable"}): ` +
        'use 5 fields ("minute hour day-of-month month day-of-week") or 6 with seconds first.',
      { cause: error },
    );
  }
  if (cron.nextRun(new Date(nowMs)) === null) {
    throw new RangeError(
      `\`cron\` ${JSON.stringify(pattern)} never matches a date from now on, so it would never tick.`,
    );
  }
  const instant = (date: Date | null | undefined) => (date ? date.getTime() : undefined);
  return {
    description: `cron '${pattern}' in ${zone}`,
    next: (afterMs) => instant(cron.nextRun(new Date(afterMs))),
    previous: (beforeMs) => instant(cron.previousRuns(1, new Date(beforeMs))[0]),
    count(fromMs, toMs, cap) {
      let n = 0;
      for (let t = instant(cron.nextRun(new Date(fromMs - 1))); t !== undefined && t <= toMs && n < cap; n++) {
        t = instant(cron.nextRun(new Date(t)));
      }
      return n;
    },
  };
}

/** Checks an IANA time zone name with the runtime's own list (Intl), so that a typo fails at once. */
function checkTimeZone(value: unknown): string {
  if (typeof value !== "string" || value === "") {
    throw new TypeError(
      `\`timeZone\` must be an IANA time zone name such as "Europe/Paris", got ${describeValue(value)}.`,
    );
  }
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: value });
  } catch {
    throw new RangeError(
      `\`timeZone\` ${JSON.stringify(value)} is not a time zone this runtime knows: use an IANA name such as "Europe/Paris" or "UTC".`,
    );
  }
  return value;
}

/** The id of the tick due at `dueMs` of schedule `name`: `<name>@<ISO 8601 UTC>`. */
export function tickId(name: string, dueMs: number): string {
  return `${name}@${new Date(dueMs).toISOString()}`;
}
