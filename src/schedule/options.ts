/**
 * The options of {@link schedule}, their defaults, and the checks that refuse impossible or
 * misspelt settings before any request: every option is checked by name (an unknown name is a
 * `TypeError` that lists the known ones, so that `catchup: "all"` cannot silently mean the default),
 * and an option that only applies with another (`maxCatchUpTicks` with `catchUp: "all"`) is refused
 * without it.
 */
import { MAX_LEASE_SECONDS, MIN_LEASE_SECONDS } from "../lease/index.js";
import { checkNumber, checkOptionalSignal, describeValue, optionalNumber } from "../internal/validate.js";
import type { CatchUp, CatchUpPolicy } from "./catch-up.js";

/** Options for {@link schedule}. */
export interface ScheduleOptions {
  /**
   * What happens to ticks that fell due while no instance could run them (every instance down, or
   * a run that lasted past them): `"latest"` runs the latest of them once and skips the others;
   * `"all"` runs each of them, oldest first (at most `maxCatchUpTicks`); `"none"` runs a tick only
   * if it starts within `missedAfterInMs` of its due time. Skipped ticks are recorded as missed.
   * @default "latest"
   */
  readonly catchUp?: CatchUpPolicy;
  /**
   * With `catchUp: "all"`: how many due ticks run at most when catching up (1 to 1000); older ones
   * are skipped.
   * @default 100
   */
  readonly maxCatchUpTicks?: number;
  /**
   * With `catchUp: "none"`: how late after its due time a tick may still start; a later one is
   * skipped.
   * @default 60000
   */
  readonly missedAfterInMs?: number;
  /**
   * The lease that claims each tick: 15 to 60 seconds. A run whose instance dies is taken over once
   * its lease has lapsed, so this is how long a crashed run keeps its tick from running again.
   * @default 30
   */
  readonly leaseDurationInSeconds?: number;
  /**
   * How often an instance that found another one holding the lease looks again, to take the tick
   * over if that instance died. It also looks at each due tick.
   * @default a third of the lease duration
   */
  readonly takeoverCheckIntervalInMs?: number;
  /**
   * The client-side time limit of each request the schedule makes (the lease's, and the status
   * blob's: a status change gets three of them, for a read, a write and a read back).
   * @default 5000
   */
  readonly requestTimeoutInMs?: number;
  /**
   * On `stop()`: how long a running job may still take before its signal is aborted (with a
   * `ScheduleStoppedError`).
   * @default 30000
   */
  readonly gracePeriodInMs?: number;
  /** A name for this instance, recorded in the lease and in the status next to its host and process id. */
  readonly holderName?: string;
  /**
   * Create the container (and the lease blob) when missing. With `false`, a missing container makes
   * `start()` reject.
   * @default true
   */
  readonly createIfMissing?: boolean;
  /**
   * Whether waiting for the next tick keeps the Node.js process alive. With `false`, a process with
   * nothing else to do exits while the schedule waits.
   * @default true
   */
  readonly keepAlive?: boolean;
  /** Stops the schedule when aborted, as `stop()` does. */
  readonly abortSignal?: AbortSignal;
}

/** The options with their defaults, checked. */
export interface ResolvedScheduleOptions extends CatchUp {
  /** The lease that claims each tick, in seconds. */
  readonly leaseDurationInSeconds: number;
  /** How often an instance that found the lease held looks again, in milliseconds. */
  readonly takeoverCheckIntervalInMs: number;
  /** The client-side time limit of each request, in milliseconds. */
  readonly requestTimeoutInMs: number;
  /** How long a running job may still take on `stop()`, in milliseconds. */
  readonly gracePeriodInMs: number;
  /** The name recorded for this instance, if one was given. */
  readonly holderName: string | undefined;
  /** Whether a missing container and lease blob are created. */
  readonly createIfMissing: boolean;
  /** Whether waiting for the next tick keeps the process alive. */
  readonly keepAlive: boolean;
  /** The signal that stops the schedule, if one was given. */
  readonly abortSignal: AbortSignal | undefined;
}

const KNOWN: ReadonlySet<string> = new Set([
  "catchUp",
  "maxCatchUpTicks",
  "missedAfterInMs",
  "leaseDurationInSeconds",
  "takeoverCheckIntervalInMs",
  "requestTimeoutInMs",
  "gracePeriodInMs",
  "holderName",
  "createIfMissing",
  "keepAlive",
  "abortSignal",
]);

/** Fills in defaults and refuses bad settings with a `TypeError`/`RangeError` naming the option. */
export function resolveScheduleOptions(options: ScheduleOptions): ResolvedScheduleOptions {
  if (typeof options !== "object" || options === null) throw new TypeError("`options` must be an object.");
  const unknown = Object.keys(options).filter((key) => !KNOWN.has(key));
  if (unknown.length > 0) {
    throw new TypeError(
      `Unknown schedule option${unknown.length > 1 ? "s" : ""} ${unknown.map((k) => `\`${k}\``).join(", ")}: ` +
        `the options are ${[...KNOWN].map((k) => `\`${k}\``).join(", ")}.`,
    );
  }
  const catchUp = options.catchUp ?? "latest";
  if (catchUp !== "latest" && catchUp !== "all" && catchUp !== "none") {
    throw new TypeError(`\`catchUp\` must be "latest", "all" or "none", got ${describeValue(catchUp)}.`);
  }
  if (options.maxCatchUpTicks !== undefined && catchUp !== "all") {
    throw new TypeError('`maxCatchUpTicks` applies only with `catchUp: "all"`.');
  }
  if (options.missedAfterInMs !== undefined && catchUp !== "none") {
    throw new TypeError('`missedAfterInMs` applies only with `catchUp: "none"`.');
  }
  const leaseDurationInSeconds = optionalNumber("leaseDurationInSeconds", options.leaseDurationInSeconds, 30, {
    min: MIN_LEASE_SECONDS,
    max: MAX_LEASE_SECONDS,
    integer: true,
  });
  const requestTimeoutInMs = optionalNumber("requestTimeoutInMs", options.requestTimeoutInMs, 5_000, { min: 50 });
  if (requestTimeoutInMs * 2 >= leaseDurationInSeconds * 1000) {
    throw new RangeError(
      `\`requestTimeoutInMs\` (${requestTimeoutInMs}) must be less than half the lease (\`leaseDurationInSeconds\`, ` +
        `${leaseDurationInSeconds} s): a renewal that hangs must be given up, and tried again, before the lease lapses.`,
    );
  }
  // `holderName` is checked by the lease lock the schedule makes (blobLock), naming it.
  for (const name of ["createIfMissing", "keepAlive"] as const) {
    if (options[name] !== undefined && typeof options[name] !== "boolean")
      throw new TypeError(`\`${name}\` must be a boolean, got ${describeValue(options[name])}.`);
  }
  checkOptionalSignal("abortSignal", options.abortSignal);
  return {
    catchUp,
    maxCatchUpTicks: optionalNumber("maxCatchUpTicks", options.maxCatchUpTicks, 100, {
      min: 1,
      max: 1_000,
      integer: true,
    }),
    missedAfterInMs: optionalNumber("missedAfterInMs", options.missedAfterInMs, 60_000, { min: 0 }),
    leaseDurationInSeconds,
    takeoverCheckIntervalInMs: optionalNumber(
      "takeoverCheckIntervalInMs",
      options.takeoverCheckIntervalInMs,
      (leaseDurationInSeconds * 1000) / 3,
      { min: 10 },
    ),
    requestTimeoutInMs,
    gracePeriodInMs: optionalNumber("gracePeriodInMs", options.gracePeriodInMs, 30_000, { min: 0 }),
    holderName: options.holderName,
    createIfMissing: options.createIfMissing ?? true,
    keepAlive: options.keepAlive ?? true,
    abortSignal: options.abortSignal,
  };
}

/** Options for {@link Schedule.stop}. */
export interface ScheduleStopOptions {
  /**
   * How long a running job may still take before its signal is aborted.
   * @default the schedule's `gracePeriodInMs`
   */
  readonly gracePeriodInMs?: number;
  /**
   * The most `stop()` waits, from the call, at least the grace period: a job that ignores its
   * aborted signal keeps running; `stop()` then resolves at this deadline with `timedOut: true`.
   * @default no deadline
   */
  readonly timeoutInMs?: number;
}

/** Checks the options of `stop()`. */
export function checkStopOptions(
  options: ScheduleStopOptions,
  defaultGracePeriodInMs: number,
): { gracePeriodInMs: number; timeoutInMs: number | undefined } {
  if (typeof options !== "object" || options === null) throw new TypeError("`options` must be an object.");
  const gracePeriodInMs = optionalNumber("gracePeriodInMs", options.gracePeriodInMs, defaultGracePeriodInMs, {
    min: 0,
  });
  const timeoutInMs =
    options.timeoutInMs === undefined ? undefined : checkNumber("timeoutInMs", options.timeoutInMs, { min: 0 });
  if (timeoutInMs !== undefined && timeoutInMs < gracePeriodInMs) {
    throw new RangeError(
      `\`timeoutInMs\` (${timeoutInMs}) must not be shorter than the grace period (\`gracePeriodInMs\`, ${gracePeriodInMs}).`,
    );
  }
  return { gracePeriodInMs, timeoutInMs };
}
