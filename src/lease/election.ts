/**
 * Leader election: a campaign loop over a lease lock. Each candidate looks at the lock every retry
 * period; when it is free, it tries to take it. The leader renews every retry period and stops
 * leading when no renewal succeeded for the renew deadline (the lock's expiry guard), before the
 * lease can expire and another candidate take it. Stopping releases the lease, so the next
 * candidate takes over at its next look instead of waiting for the lease to expire.
 *
 * The timings follow Kubernetes' leader election (client-go `leaderelection`): lease duration >
 * renew deadline > 1.2 x retry period, defaults 15 s, 10 s and 2 s. The gap between the renew
 * deadline and the lease duration is the lock's safety margin, so it must be at least the margin a
 * lock gets by default (10% of the duration, at least one second).
 */
import { describeError } from "../internal/describe-error.js";
import { noteLeaderChange } from "./telemetry.js";
import { logger } from "../internal/logger.js";
import { sleep, uniform } from "../internal/sleep.js";
import { checkOptionalFunction, checkOptionalSignal, optionalNumber } from "../internal/validate.js";
import { classifyError } from "../retry/index.js";
import type { LockHandle } from "./handle.js";
import type { Leasable } from "./leasable.js";
import { LeaseLock } from "./lock.js";
import { checkHolderName, defaultSafetyMarginInMs, MAX_LEASE_SECONDS, MIN_LEASE_SECONDS } from "./options.js";

/** Options for {@link startLeaderElection}. */
export interface LeaderElectionOptions {
  /** This candidate's identity, recorded as the lock's holder name and given to `onNewLeader`. */
  readonly identity: string;
  /**
   * The lease duration: how long a crashed leader keeps the leadership. 15 to 60.
   * @default 15
   */
  readonly leaseDurationInSeconds?: number;
  /**
   * How long the leader keeps leading without a successful renewal before it stops (its signal
   * aborts). Shorter than the lease duration by at least the lock's safety margin (10% of the
   * duration, at least 1 s: at most 13 500 for a 15 s lease), so that it stops before anyone else can start.
   * @default 10000
   */
  readonly renewDeadlineInMs?: number;
  /**
   * How often the leader renews and each candidate looks at the lock (jittered by ±20%).
   * @default 2000
   */
  readonly retryPeriodInMs?: number;
  /**
   * Called when this candidate becomes the leader, with a signal that aborts when it stops leading
   * (lost, or the election stopped). Should wind down when the signal aborts: stopping waits for it.
   * Returning keeps this candidate the leader (the work may go on elsewhere, as in client-go);
   * throwing (or rejecting) makes it step down: the lease is released so that another candidate can
   * lead, and this one campaigns again after a retry period.
   */
  readonly onStartedLeading?: (abortSignal: AbortSignal, handle: LockHandle) => void | Promise<void>;
  /** Called after this candidate stopped leading (its `onStartedLeading` has settled). */
  readonly onStoppedLeading?: () => void | Promise<void>;
  /** Called when a different leader is seen (including this candidate itself). */
  readonly onNewLeader?: (identity: string) => void;
  /** Stops the election, like {@link LeaderElection.stop}. */
  readonly abortSignal?: AbortSignal;
}

/** A running election, as returned by {@link startLeaderElection}. */
export interface LeaderElection extends AsyncDisposable {
  /** Whether this candidate leads now. */
  readonly isLeader: boolean;
  /** The last leader seen (this candidate's identity while it leads). */
  readonly leader: string | undefined;
  /** Stops campaigning; a leader stops leading and releases the lease. Resolves when all is done. */
  stop(): Promise<void>;
}

/**
 * Starts campaigning for leadership over `leasable` (a blob, usually).
 *
 * @example
 * ```ts
 * import { BlobServiceClient } from "@azure/storage-blob";
 * import { blobLeasable, startLeaderElection } from "azure-storage-concurrency/lease";
 *
 * const container = BlobServiceClient.fromConnectionString(process.env.AZURE_STORAGE_CONNECTION_STRING!)
 *   .getContainerClient("locks");
 * declare function runScheduledJobs(signal: AbortSignal): Promise<void>; // your own work
 *
 * const election = startLeaderElection(blobLeasable(container, "scheduler-leader"), {
 *   identity: `worker-${process.pid}`,
 *   onStartedLeading: async (signal) => {
 *     while (!signal.aborted) await runScheduledJobs(signal);
 *   },
 *   onNewLeader: (identity) => console.log(`leader: ${identity}`),
 * });
 * process.once("SIGTERM", () => void election.stop());
 * ```
 */
export function startLeaderElection(leasable: Leasable, options: LeaderElectionOptions): LeaderElection {
  if (typeof options !== "object" || options === null) throw new TypeError("`options` must be an object.");
  const identity = checkHolderName("identity", options.identity);
  const leaseDurationInSeconds = optionalNumber("leaseDurationInSeconds", options.leaseDurationInSeconds, 15, {
    min: MIN_LEASE_SECONDS,
    max: MAX_LEASE_SECONDS,
    integer: true,
  });
  const renewDeadlineInMs = optionalNumber("renewDeadlineInMs", options.renewDeadlineInMs, 10_000, { min: 1 });
  const retryPeriodInMs = optionalNumber("retryPeriodInMs", options.retryPeriodInMs, 2_000, { min: 10 });
  const margin = defaultSafetyMarginInMs(leaseDurationInSeconds);
  if (renewDeadlineInMs > leaseDurationInSeconds * 1000 - margin) {
    throw new RangeError(
      `\`renewDeadlineInMs\` (${renewDeadlineInMs}) must be shorter than the lease duration ` +
        `(${leaseDurationInSeconds * 1000} ms) by at least the lock's safety margin (${margin} ms): at most ` +
        `${leaseDurationInSeconds * 1000 - margin}, so that the leader stops before its lease can expire at the service.`,
    );
  }
  if (renewDeadlineInMs <= 1.2 * retryPeriodInMs) {
    throw new RangeError(
      `\`renewDeadlineInMs\` (${renewDeadlineInMs}) must be longer than 1.2 x \`retryPeriodInMs\` (${1.2 * retryPeriodInMs}).`,
    );
  }
  for (const name of ["onStartedLeading", "onStoppedLeading", "onNewLeader"] as const)
    checkOptionalFunction(name, options[name]);
  checkOptionalSignal("abortSignal", options.abortSignal);

  const lock = new LeaseLock(leasable, {
    durationInSeconds: leaseDurationInSeconds,
    safetyMarginInMs: leaseDurationInSeconds * 1000 - renewDeadlineInMs,
    renewIntervalInMs: retryPeriodInMs,
    holderName: identity,
  });
  const stopping = new AbortController();
  let isLeader = false;
  let leader: string | undefined;

  const call = async (name: string, callback: (() => unknown) | undefined) => {
    try {
      await callback?.();
    } catch (error) {
      logger.error(`leader election on ${leasable.description}: ${name} threw: ${describeError(error)}`);
    }
  };
  const seeLeader = (seen: string | undefined) => {
    if (seen === undefined || seen === leader) return;
    leader = seen;
    logger.info(`leader election on ${leasable.description}: the leader is ${seen}`);
    void call("onNewLeader", options.onNewLeader && (() => options.onNewLeader!(seen)));
  };

  const lead = async (handle: LockHandle) => {
    isLeader = true;
    seeLeader(identity);
    const leading = new AbortController();
    const end = () => leading.abort(handle.abortSignal.aborted ? handle.abortSignal.reason : stopping.signal.reason);
    handle.abortSignal.addEventListener("abort", end, { once: true });
    stopping.signal.addEventListener("abort", end, { once: true });
    if (stopping.signal.aborted) end();
    noteLeaderChange(leasable, identity, "elected"); // telemetry once the loss is wired to the signal
    const work = (async () => {
      try {
        await options.onStartedLeading?.(leading.signal, handle);
      } catch (error) {
        // A leader that cannot do its work must not keep others from doing it.
        logger.error(
          `leader election on ${leasable.description}: onStartedLeading threw, stepping down: ${describeError(error)}`,
        );
        leading.abort(error);
      }
    })();
    await new Promise<void>((resolve) =>
      leading.signal.aborted ? resolve() : leading.signal.addEventListener("abort", () => resolve(), { once: true }),
    );
    handle.abortSignal.removeEventListener("abort", end);
    stopping.signal.removeEventListener("abort", end);
    await work; // the leader's work has wound down before anyone else can be let in
    isLeader = false;
    await handle.release().catch(() => undefined);
    logger.info(`leader election on ${leasable.description}: ${identity} stopped leading`);
    noteLeaderChange(leasable, identity, "stepped-down"); // telemetry after the lock is given back
    await call("onStoppedLeading", options.onStoppedLeading);
  };

  const campaign = async () => {
    const pause = () => sleep(retryPeriodInMs * uniform(0.8, 1.2), stopping.signal, { unref: true });
    while (!stopping.signal.aborted) {
      try {
        const info = await lock.inspect({ abortSignal: stopping.signal });
        if (info.held) {
          seeLeader(info.holder?.name);
        } else {
          const handle = await lock.tryAcquire({ abortSignal: stopping.signal });
          if (handle) {
            await lead(handle);
            if (stopping.signal.aborted) return;
          }
        }
        await pause();
      } catch (error) {
        if (stopping.signal.aborted) return;
        logger.warning(
          `leader election on ${leasable.description}: ${classifyError(error).kind} failure, trying again`,
        );
        await pause().catch(() => undefined);
      }
    }
  };

  const onExternalAbort = () => stopping.abort(new DOMException("The leader election was stopped.", "AbortError"));
  options.abortSignal?.addEventListener("abort", onExternalAbort, { once: true });
  if (options.abortSignal?.aborted) onExternalAbort();
  const running = campaign().finally(() => options.abortSignal?.removeEventListener("abort", onExternalAbort));

  const stop = async () => {
    if (!stopping.signal.aborted) onExternalAbort();
    await running;
  };
  return {
    get isLeader() {
      return isLeader;
    },
    get leader() {
      return leader;
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
