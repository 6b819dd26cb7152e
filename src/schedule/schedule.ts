/**
 * `schedule()`: a job that runs once per tick across any number of instances, on a blob lease and a
 * status blob, with the timer trigger of Azure Functions (`UseMonitor`: a schedule-status blob
 * with the last and next occurrences, one past-due run after a restart) as the anchor
 * (https://github.com/Azure/azure-webjobs-sdk-extensions, `Timers/Scheduling/ScheduleMonitor.cs`,
 * `Timers.Storage/StorageScheduleMonitor.cs`). Learnt from it, and changed:
 *
 * - Functions keeps one host as the timer's listener (a singleton lease held for as long as the
 *   host runs) and writes the status blob unconditionally after each run, so a handover between
 *   hosts can run a tick twice. Here any instance may run any tick: each tick is claimed in the
 *   status blob with `If-Match` under a lease taken for that tick (`./session.ts`), and the status,
 *   never a clock, says which ticks are done (`./status.ts`).
 * - Functions catches up one past-due occurrence, on start only. Here `catchUp` says what happens to
 *   every tick missed (`./catch-up.ts`), whenever it is found missed.
 *
 * Each instance waits for the next tick after the last it knows settled, and then tries the lease
 * (one request). The instance that gets it claims the due tick, runs it, records it, catches up
 * what is due, and releases. The others found the lease held: they look again at the next tick,
 * or after `takeoverCheckIntervalInMs` if that comes first, which is how a run whose instance died
 * is taken over once its lease has lapsed.
 *
 * Clock skew: an instance whose clock is ahead by `s` tries each tick up to `s` early, and may
 * start it early; it never runs a tick another instance has settled. Catch-up decisions (`"latest"`,
 * `"none"`) are made on the clock of the instance that holds the lease, so a skew larger than the
 * period can make it count a tick as missed that another instance would have run. See
 * docs/scheduled-jobs.md.
 */
import type { ContainerClient } from "@azure/storage-blob";
import { describeError } from "../internal/describe-error.js";
import { logger } from "../internal/logger.js";
import { sleep, uniform } from "../internal/sleep.js";
import { checkNonEmptyString } from "../internal/validate.js";
import { blobLock, type LeaseLock } from "../lease/index.js";
import type { StorageResource } from "../observability/resource.js";
import { detached } from "../observability/scope.js";
import { ScheduleStoppedError } from "./errors.js";
import { ScheduleEventHub, type ScheduledTick, type ScheduleEvents } from "./events.js";
import {
  checkStopOptions,
  resolveScheduleOptions,
  type ResolvedScheduleOptions,
  type ScheduleOptions,
  type ScheduleStopOptions,
} from "./options.js";
import { runSession, type RunningJob, type ScheduledJob } from "./session.js";
import { createdStatus, holderOf, settledThrough, type ScheduleHolder, type ScheduleStatusRecord } from "./status.js";
import { StatusCell } from "./status-cell.js";
import { telemetryReady } from "./telemetry.js";
import { resolveTiming, tickId, type ScheduleTiming, type Timing } from "./timing.js";
import type { ListenerDisposable } from "../queue/index.js";

/** Where a schedule is in its life. */
export type ScheduleState = "idle" | "starting" | "running" | "stopping" | "stopped" | "failed";

/** What {@link Schedule.stop} resolves to. */
export interface ScheduleStopResult {
  /** True when `timeoutInMs` ran out while a job that ignored its aborted signal was still running. */
  readonly timedOut: boolean;
  /** The tick whose job was still running then (only when `timedOut`). */
  readonly stillRunning: ScheduledTick | undefined;
}

/** The clock a schedule reads (tests pass a fixed one); its waits use real timers. */
interface ScheduleClock {
  /** Now, in milliseconds since the epoch. */
  now(): number;
}

/** The key of a test's clock in the options (not part of the public options). */
export const SCHEDULE_CLOCK: unique symbol = Symbol("azure-storage-concurrency.schedule-clock");

/** A schedule name: letters, digits, `.`, `_`, `-` (it names blobs, and starts every tick id). */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

/** The longest single wait: a long wait is cut in pieces, so that a wall clock set forward is noticed. */
const MAX_WAIT_IN_MS = 60_000;

/**
 * Runs `job` once per tick of `timing` across every instance that schedules it under the same
 * `name` in the same container. Returns the schedule, not started: subscribe to its events, then
 * `await start()`; `await stop()` ends it.
 *
 * It keeps two blobs in the container: `<name>/lock` (the lease that claims each tick) and
 * `<name>/status.json` (which ticks are settled, the run under way, the last outcome).
 *
 * @param containerClient - the container for the schedule's blobs (created when missing, unless `createIfMissing: false`).
 * @param name - the schedule's name: 1 to 200 letters, digits, `.`, `_` or `-`, starting with a letter or digit.
 * @param timing - `{ everyInMs }` or `{ cron, timeZone? }`; see {@link ScheduleTiming}.
 * @param job - run once per tick; see {@link ScheduledRunContext}.
 * @param options - see {@link ScheduleOptions}; checked here, before any request.
 *
 * @example
 * ```ts
 * import { BlobServiceClient } from "@azure/storage-blob";
 * import { schedule } from "azure-storage-concurrency/schedule";
 *
 * declare function buildReport(options: { abortSignal: AbortSignal; reportId: string }): Promise<void>;
 *
 * const container = BlobServiceClient.fromConnectionString(process.env.AZURE_STORAGE_CONNECTION_STRING!)
 *   .getContainerClient("schedules");
 * // Every instance of the app runs this; each night, one of them builds the report.
 * const nightly = schedule(
 *   container,
 *   "nightly-report",
 *   { cron: "0 2 * * *", timeZone: "Europe/Paris" },
 *   async ({ tick, abortSignal }) => buildReport({ abortSignal, reportId: tick.id }),
 * );
 * nightly.on("failed", ({ tick, error }) => console.error(`${tick.id} failed`, error));
 * await nightly.start();
 * process.once("SIGTERM", () => void nightly.stop({ timeoutInMs: 60_000 }));
 * ```
 */
export function schedule(
  containerClient: ContainerClient,
  name: string,
  timing: ScheduleTiming,
  job: ScheduledJob,
  options: ScheduleOptions = {},
): Schedule {
  return new Schedule(containerClient, name, timing, job, options);
}

/**
 * A scheduled job across a fleet: made by {@link schedule}. One object per instance; `start()` it
 * once, `stop()` it once.
 *
 * @example
 * ```ts
 * import { schedule } from "azure-storage-concurrency/schedule";
 *
 * await using hourly = await schedule(container, "hourly-sync", { everyInMs: 3_600_000 }, async ({ tick }) => {
 *   console.log(`syncing for ${tick.dueAt.toISOString()}`);
 * }).start();
 * // stopped (and its lease released) at the end of the scope
 * ```
 */
export class Schedule implements AsyncDisposable {
  /** The schedule's name. */
  readonly name: string;
  /** The timing in words (`every 200 ms`, `cron '0 2 * * *' in Europe/Paris`). */
  readonly timing: string;
  /** The options, with defaults filled in. */
  readonly options: ResolvedScheduleOptions;

  readonly #timing: Timing;
  readonly #job: ScheduledJob;
  readonly #lock: LeaseLock;
  readonly #cell: StatusCell;
  readonly #target: string;
  /** The schedule, as its spans' attributes. */
  readonly #resource: StorageResource;
  readonly #holder: ScheduleHolder;
  readonly #clock: ScheduleClock;
  readonly #events = new ScheduleEventHub();
  /** Aborted when stopping: ends the waits, and no new tick is claimed. */
  readonly #stopping = new AbortController();
  readonly #closed: Promise<void>;
  #closedSettle!: { resolve: () => void; reject: (error: unknown) => void };
  #state: ScheduleState = "idle";
  #loop: Promise<void> | undefined;
  #running: RunningJob | undefined;
  #shutdown: Promise<void> | undefined;
  #removeAbortListener: (() => void) | undefined;
  /** Ticks through this instant are settled, as far as this instance knows. */
  #cursor = 0;
  /** Not before this instant (after finding the lease held): when to look again. */
  #notBefore = 0;

  /** Use {@link schedule}. */
  constructor(
    containerClient: ContainerClient,
    name: string,
    timing: ScheduleTiming,
    job: ScheduledJob,
    options: ScheduleOptions = {},
  ) {
    if (typeof containerClient?.getBlockBlobClient !== "function") {
      throw new TypeError("`containerClient` must be a ContainerClient from @azure/storage-blob.");
    }
    checkNonEmptyString("name", name);
    if (!NAME.test(name)) {
      throw new TypeError(
        `\`name\` must be 1 to 200 letters, digits, '.', '_' or '-', starting with a letter or digit ` +
          `(it names the schedule's blobs and starts every tick id), got ${JSON.stringify(name.slice(0, 40))}.`,
      );
    }
    if (typeof job !== "function") throw new TypeError("`job` must be a function: async ({ tick, abortSignal }) => ….");
    this.options = resolveScheduleOptions(options);
    this.#clock = (options as { [SCHEDULE_CLOCK]?: ScheduleClock })[SCHEDULE_CLOCK] ?? { now: () => Date.now() };
    this.#timing = resolveTiming(timing, this.#clock.now());
    this.name = name;
    this.timing = this.#timing.description;
    this.#job = job;
    this.#target = `schedule '${name}' in container '${containerClient.containerName}'`;
    this.#resource = { kind: "schedule", container: containerClient.containerName, name, url: containerClient.url };
    this.#holder = holderOf(this.options.holderName);
    const { leaseDurationInSeconds, requestTimeoutInMs, holderName, createIfMissing } = this.options;
    this.#lock = blobLock(containerClient, `${name}/lock`, {
      durationInSeconds: leaseDurationInSeconds,
      requestTimeoutInMs,
      createIfMissing,
      ...(holderName === undefined ? {} : { holderName }),
    });
    this.#cell = new StatusCell(containerClient, `${name}/status.json`, requestTimeoutInMs);
    this.#closed = new Promise<void>((resolve, reject) => (this.#closedSettle = { resolve, reject }));
    this.#closed.catch(() => undefined); // observed through `closed`; never an unhandled rejection
  }

  /** `idle` (not started), `starting`, `running`, `stopping`, `stopped`, or `failed` (`start()` rejected). */
  get state(): ScheduleState {
    return this.#state;
  }

  /** The tick whose job this instance runs right now, if any. */
  get runningTick(): ScheduledTick | undefined {
    return this.#running?.tick;
  }

  /** Settles when the schedule has ended: resolves once stopped, rejects with the error `start()` rejected with. */
  get closed(): Promise<void> {
    return this.#closed;
  }

  /** Subscribes to an event; `dispose()` the result to unsubscribe. */
  on<K extends keyof ScheduleEvents>(event: K, listener: (payload: ScheduleEvents[K]) => void): ListenerDisposable {
    return this.#events.on(event, listener);
  }

  /**
   * Reads the schedule's status blob (`undefined` before any instance started the schedule): the
   * last settled tick, the run under way, the next due tick, the last run's outcome.
   */
  async readStatus(options: { readonly abortSignal?: AbortSignal } = {}): Promise<ScheduleStatusRecord | undefined> {
    return this.#cell.read(options.abortSignal);
  }

  /**
   * Reads the status blob (creating it, and the container, when missing), then starts waiting for
   * ticks. Rejects, and the schedule is `failed`, when the storage cannot be used (a missing
   * container with `createIfMissing: false`, a refused credential, an unreadable status blob:
   * `ScheduleStatusError`). A schedule starts once: after `stop()`, make a new one.
   */
  async start(): Promise<this> {
    if (this.#state !== "idle") {
      throw new Error(`The schedule is ${this.#state}: a schedule starts once; make a new one to run it again.`);
    }
    const signal = this.options.abortSignal;
    if (signal?.aborted) {
      this.#finish();
      return this;
    }
    if (signal) {
      const onAbort = () => void this.stop();
      signal.addEventListener("abort", onAbort, { once: true });
      this.#removeAbortListener = () => signal.removeEventListener("abort", onAbort);
    }
    this.#state = "starting";
    try {
      await telemetryReady();
      const status = await this.#cell.ensure(() => createdStatus(this.#timing, this.#clock.now()), {
        createContainer: this.options.createIfMissing,
        abortSignal: this.#stopping.signal,
      });
      this.#cursor = settledThrough(status);
    } catch (error) {
      if (this.#stopping.signal.aborted) return this; // stopped while starting
      this.#removeAbortListener?.();
      logger.error(`${this.#target} could not start: ${describeError(error)}`);
      this.#state = "failed";
      this.#closedSettle.reject(error);
      throw error;
    }
    if (this.#state !== "starting") return this;
    this.#state = "running";
    this.#events.emit("started", {});
    logger.info(`${this.#target} started (${this.timing})`);
    // Each run starts a trace of its own, not a child of whatever span was active around start().
    this.#loop = detached(() => this.#run())();
    return this;
  }

  /**
   * Stops trying ticks, lets a running job finish for the grace period, then aborts its signal
   * (`ScheduleStoppedError`); resolves when no job of this schedule runs and its lease is released
   * (`timedOut: false`). A job that ends after its signal was aborted is not recorded: another
   * instance takes its tick over at once. With `timeoutInMs`, resolves at that deadline at the
   * latest, with `timedOut: true` when the job ignored its signal. Safe to call more than once.
   */
  async stop(options: ScheduleStopOptions = {}): Promise<ScheduleStopResult> {
    const { gracePeriodInMs, timeoutInMs } = checkStopOptions(options, this.options.gracePeriodInMs);
    const stopped = this.#beginStop(gracePeriodInMs);
    if (timeoutInMs === undefined) {
      await stopped;
      return { timedOut: false, stillRunning: undefined };
    }
    const deadline = new AbortController();
    const timedOut = await Promise.race([
      stopped.then(() => false),
      sleep(timeoutInMs, deadline.signal).then(
        () => true,
        () => false,
      ),
    ]);
    deadline.abort();
    return timedOut
      ? { timedOut: true, stillRunning: this.#running?.tick }
      : { timedOut: false, stillRunning: undefined };
  }

  /** Same as `stop()`, for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  #beginStop(gracePeriodInMs: number): Promise<void> {
    if (this.#shutdown) return this.#shutdown;
    this.#removeAbortListener?.();
    if (this.#state === "idle" || this.#state === "failed") {
      if (this.#state === "idle") this.#finish();
      return (this.#shutdown = Promise.resolve());
    }
    this.#state = "stopping";
    this.#stopping.abort();
    this.#shutdown = (async () => {
      const loop = this.#loop ?? Promise.resolve();
      const grace = new AbortController();
      await Promise.race([loop, sleep(gracePeriodInMs, grace.signal).catch(() => undefined)]);
      grace.abort();
      this.#running?.stop.abort(new ScheduleStoppedError());
      await loop;
      this.#finish();
    })();
    return this.#shutdown;
  }

  #finish(): void {
    this.#state = "stopped";
    logger.info(`${this.#target} stopped`);
    this.#events.emit("stopped", {});
    this.#closedSettle.resolve();
  }

  /** The waiting loop: see the module's description. */
  async #run(): Promise<void> {
    let failures = 0;
    let announced: number | undefined;
    const stopping = this.#stopping.signal;
    while (!stopping.aborted) {
      const next = this.#timing.next(this.#cursor);
      if (next === undefined) {
        logger.warning(`${this.#target}: the timing never ticks again; the schedule waits for stop()`);
        await new Promise((resolve) => stopping.addEventListener("abort", resolve, { once: true }));
        break;
      }
      const wakeAt = Math.max(next, this.#notBefore);
      const waitInMs = wakeAt - this.#clock.now();
      if (waitInMs > 0) {
        if (announced !== next) {
          announced = next;
          this.#events.emit("waiting", { tick: { id: tickId(this.name, next), dueAt: new Date(next) } });
        }
        await sleep(Math.min(waitInMs, MAX_WAIT_IN_MS), stopping, { unref: !this.options.keepAlive }).catch(
          () => undefined,
        );
        continue;
      }
      try {
        const handle = await this.#lock.tryAcquire({ abortSignal: stopping });
        failures = 0;
        if (!handle) {
          // Another instance holds the lease, running the ticks due so far (or catching up): look
          // again at the next tick to come, or sooner to take over a run whose instance died.
          const now = this.#clock.now();
          this.#notBefore = Math.min(this.#timing.next(now) ?? Infinity, now + this.options.takeoverCheckIntervalInMs);
          continue;
        }
        this.#notBefore = 0;
        const settled = await runSession(
          {
            name: this.name,
            target: this.#target,
            resource: this.#resource,
            timing: this.#timing,
            options: this.options,
            cell: this.#cell,
            job: this.#job,
            events: this.#events,
            holder: this.#holder,
            now: () => this.#clock.now(),
            stopping,
            track: (job) => (this.#running = job),
          },
          handle,
        );
        if (settled !== undefined) this.#cursor = Math.max(this.#cursor, settled);
      } catch (error) {
        if (stopping.aborted) break;
        failures += 1;
        const delayInMs = Math.min(5_000, 50 * 2 ** Math.min(failures, 7)) * uniform(0.5, 1.5);
        logger.warning(
          `${this.#target}: ${describeError(error)}; trying again in ${Math.round(delayInMs)} ms (failure ${failures} in a row)`,
        );
        this.#events.emit("error", { error, operation: `run ${this.#target}` });
        await sleep(delayInMs, stopping).catch(() => undefined);
      }
    }
  }
}
