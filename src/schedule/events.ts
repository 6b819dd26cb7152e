/**
 * What a schedule tells its listeners, and the small hub that tells them: `on(event, listener)`
 * returns a disposable (cockatiel's habit); a listener that throws is logged and never breaks the
 * schedule. Events come after the state change they report (the status written, the signal
 * aborted), and before any telemetry about it.
 */
import { describeError } from "../internal/describe-error.js";
import { logger } from "../internal/logger.js";
import type { ListenerDisposable } from "../queue/index.js";

/** One tick of a schedule. */
export interface ScheduledTick {
  /**
   * `<schedule name>@<due time in ISO 8601 UTC>`: the same for every instance, whichever runs it
   * and however often it is taken over. Use it as the idempotency key of the run's effects.
   */
  readonly id: string;
  /** When the tick is due, by the schedule. */
  readonly dueAt: Date;
}

/** Why a run ended without being recorded: another instance runs its tick again. */
export type AbandonReason =
  /** The lease was lost while the job ran (its signal's reason is a `LeaseLostError`). */
  | "lease-lost"
  /** The schedule stopped and the job's grace period ran out (its signal's reason is a `ScheduleStoppedError`). */
  | "stopped"
  /** Another instance took the tick over before this run's end could be recorded. */
  | "superseded"
  /** The job ended, but its end could not be written (the storage kept failing): `error` says why. */
  | "unrecorded";

/** The events of a {@link Schedule}, with what each carries. */
export interface ScheduleEvents {
  /** `start()` checked the status blob and the schedule runs. */
  readonly started: Record<string, never>;
  /** This instance waits for `tick` (the next it will try to run, or to take over). */
  readonly waiting: {
    /** The tick. */
    readonly tick: ScheduledTick;
  };
  /** This instance claimed `tick` and starts the job. */
  readonly run: {
    /** The tick. */
    readonly tick: ScheduledTick;
    /** 1, or more when this run takes over one that did not end. */
    readonly attempt: number;
    /** How long after the tick's due time the job starts, by this instance's clock. */
    readonly lateByInMs: number;
  };
  /** The job resolved, and its tick is recorded as succeeded. */
  readonly succeeded: {
    /** The tick. */
    readonly tick: ScheduledTick;
    /** 1, or more when this run took over one that did not end. */
    readonly attempt: number;
    /** How long the job took. */
    readonly durationInMs: number;
  };
  /** The job threw (its signal not aborted), and its tick is recorded as failed: it does not run again. */
  readonly failed: {
    /** The tick. */
    readonly tick: ScheduledTick;
    /** 1, or more when this run took over one that did not end. */
    readonly attempt: number;
    /** How long the job took. */
    readonly durationInMs: number;
    /** What the job threw. */
    readonly error: unknown;
  };
  /** The run ended without being recorded: another instance takes `tick` over (or skips it, per `catchUp`). */
  readonly abandoned: {
    /** The tick. */
    readonly tick: ScheduledTick;
    /** 1, or more when this run took over one that did not end. */
    readonly attempt: number;
    /** Why the run was not recorded. */
    readonly reason: AbandonReason;
    /** The signal's reason, or the failure that kept the end from being written. */
    readonly error: unknown;
  };
  /** This instance recorded `count` ticks as missed (catch-up), the last of them `through`. */
  readonly missed: {
    /** How many ticks. */
    readonly count: number;
    /** The last of them. */
    readonly through: ScheduledTick;
  };
  /** A request of the schedule's own failed; it is tried again later. `operation` says what failed. */
  readonly error: {
    /** What was thrown (or the signal's reason). */
    readonly error: unknown;
    /** What failed, in words. */
    readonly operation: string;
  };
  /** The schedule has stopped: no job of it runs, and its lease is released. */
  readonly stopped: Record<string, never>;
}

type Listener<P> = (payload: P) => void;

/** The listeners of one schedule. */
export class ScheduleEventHub {
  readonly #listeners = new Map<keyof ScheduleEvents, Set<Listener<never>>>();

  on<K extends keyof ScheduleEvents>(event: K, listener: Listener<ScheduleEvents[K]>): ListenerDisposable {
    if (typeof listener !== "function") throw new TypeError("`listener` must be a function.");
    let set = this.#listeners.get(event);
    if (!set) this.#listeners.set(event, (set = new Set()));
    set.add(listener);
    const dispose = () => void set.delete(listener);
    return { dispose, [Symbol.dispose]: dispose };
  }

  emit<K extends keyof ScheduleEvents>(event: K, payload: ScheduleEvents[K]): void {
    const set = this.#listeners.get(event);
    for (const listener of set ? [...set] : []) {
      try {
        (listener as Listener<ScheduleEvents[K]>)(payload);
      } catch (error) {
        logger.warning(`A schedule '${String(event)}' listener threw: ${describeError(error)}`);
      }
    }
  }
}
