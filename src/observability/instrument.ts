/**
 * The library's instrumented operations, one helper per call site, so that each site stays one line
 * (`src/optimistic`, `src/lease`, `src/tables`, `src/queue`). Each helper costs a property read when
 * OpenTelemetry is off (see `otel.ts`), and builds attributes only for a recording span.
 *
 * No helper can throw into the library or change what an operation answers: every OpenTelemetry
 * object is a fail-safe wrapper (`guard.ts`), the library's own instrumentation code runs inside
 * {@link instrumentation}, and a wrapped operation (`traceAcquire`, `traceBatch`, `traceMessage`,
 * `finishUpdate`) passes its own result or error through unchanged. Call sites change state and
 * signal first, and call these after.
 */
import { hostname } from "node:os";
import type { Attributes } from "@opentelemetry/api";
import { stringProperty } from "../internal/describe-error.js";
import { ATTR, EVENT, EVENT_ATTR, MESSAGING_SYSTEM, SPAN } from "./names.js";
import { loadOpenTelemetry, openTelemetryLoaded, telemetry } from "./otel.js";
import {
  currentScope,
  endScope,
  errorType,
  instrumentation,
  momentSpan,
  openScope,
  runInScope,
  secondsSince,
  type Scope,
} from "./scope.js";

// ---------------------------------------------------------------------------------------------
// Optimistic updates

/** What an update's outcome carries (the engine's `OptimisticUpdateResult`). */
interface UpdateResult {
  readonly written: boolean;
  readonly attempts: number;
  readonly coalesced: number;
  readonly recoveredLostResponse: boolean;
}

/** Opens the span of one `optimisticUpdate` call (after {@link ready}), or `undefined` when off. */
export function startUpdate(cell: { readonly description: string }): Scope | undefined {
  return openScope(SPAN.optimisticUpdate, () => ({ [ATTR.target]: cell.description }));
}

/** A conflict in a round: counted on (and told to) the span of every update sharing the round. */
export function noteConflict(
  participants: readonly { readonly settings: { readonly observation?: Scope | undefined } }[],
  attempt: number,
  delayInMs: number,
): void {
  instrumentation(() => {
    for (const { settings } of participants) {
      const scope = settings.observation;
      if (!scope) continue;
      scope.count += 1;
      scope.span?.addEvent(EVENT.conflict, () => ({ [ATTR.attempts]: attempt, [EVENT_ATTR.delay]: delayInMs / 1000 }));
    }
  }, undefined);
}

/** Ends the update's span and records its metrics when `outcome` settles; the promise itself when off. */
export function finishUpdate<R extends UpdateResult>(scope: Scope | undefined, outcome: Promise<R>): Promise<R> {
  if (!scope) return outcome;
  const instruments = scope.telemetry.instruments;
  return outcome.then(
    (result) => {
      instrumentation(() => {
        instruments?.updateAttempts.record(result.attempts);
        instruments?.updateConflicts.record(scope.count);
        endScope(scope, result.written ? "written" : "skipped", () => ({
          [ATTR.attempts]: result.attempts,
          [ATTR.conflicts]: scope.count,
          [ATTR.coalesced]: result.coalesced,
          [ATTR.recoveredLostResponse]: result.recoveredLostResponse,
        }));
      }, undefined);
      return result;
    },
    (error: unknown) => {
      instrumentation(() => {
        const code = codeOf(error);
        const outcome =
          code === "OptimisticOutcomeUnknown"
            ? "unknown"
            : code === "OptimisticConflict"
              ? "conflict"
              : isAbort(error)
                ? "cancelled"
                : "failed";
        if (outcome === "unknown") instruments?.unknownOutcomes.add(1);
        instruments?.updateConflicts.record(scope.count);
        endScope(scope, outcome, () => ({ [ATTR.conflicts]: scope.count }), error);
      }, undefined);
      throw error;
    },
  );
}

// ---------------------------------------------------------------------------------------------
// Locks

/** A lock's holder as its record tells it (`LockHolder`). */
interface Holder {
  readonly name?: string | undefined;
  readonly host: string;
  readonly pid: number;
}

/** What the acquisition span reads of the lock and of its handle. */
interface LockLike {
  readonly leasable: { readonly description: string };
  readonly options: { readonly holderName: string | undefined };
}

/**
 * Wraps `LeaseLock.acquire`/`tryAcquire`: the span `asc.lock.acquire` (wait, attempts, fencing
 * token, holder), the wait duration and the handoffs.
 */
export async function traceAcquire<H extends { readonly fencingToken: number | undefined } | undefined>(
  lock: LockLike,
  waits: boolean,
  acquire: () => Promise<H>,
): Promise<H> {
  if (!openTelemetryLoaded()) await loadOpenTelemetry();
  const scope = openScope(SPAN.lockAcquire, () => ({
    [ATTR.target]: lock.leasable.description,
    [ATTR.holder]: describeHolder({ name: lock.options.holderName, host: hostname(), pid: process.pid }),
    [ATTR.lockWaits]: waits,
  }));
  if (!scope) return acquire();
  const waited = (outcome: string) =>
    scope.telemetry.instruments?.lockWait.record(secondsSince(scope.startedAt), { [ATTR.outcome]: outcome });
  return traced(
    scope,
    acquire,
    (handle) => {
      const outcome = handle ? "acquired" : "busy";
      waited(outcome);
      if (handle && scope.detail !== undefined) scope.telemetry.instruments?.lockHandoffs.add(1);
      return {
        outcome,
        attributes: () => ({
          [ATTR.lockWait]: secondsSince(scope.startedAt),
          [ATTR.lockAttempts]: scope.count,
          ...(handle?.fencingToken === undefined ? {} : { [ATTR.fencingToken]: handle.fencingToken }),
          ...(scope.detail === undefined ? {} : { [ATTR.previousHolder]: scope.detail }),
        }),
      };
    },
    (error) => waited(codeOf(error) === "LockTimeout" ? "timeout" : isAbort(error) ? "cancelled" : "failed"),
  );
}

/** One acquisition request of the lock under way (counted on its span). */
export function noteLockAttempt(): void {
  const scope = currentScope();
  if (scope) scope.count += 1;
}

/** The lock was seen held by someone else while acquiring: an event when the holder changes. */
export function noteLockBusy(holder: Holder | undefined): void {
  const scope = currentScope();
  if (!scope || holder === undefined) return;
  instrumentation(() => {
    const described = describeHolder(holder);
    if (described === scope.detail) return;
    scope.detail = described;
    scope.span?.addEvent(EVENT.lockBusy, () => ({ [ATTR.previousHolder]: described }));
  }, undefined);
}

/** A held lock ended: released (`lost` undefined) or lost. Records the hold time, and a loss. */
export function noteLockEnded(description: string, acquiredAt: Date, lost?: { reason: string; error: unknown }): void {
  const on = telemetryIfLoaded();
  if (!on) return;
  instrumentation(() => {
    const heldFor = Math.max(0, (Date.now() - acquiredAt.getTime()) / 1000);
    on.instruments?.lockHold.record(heldFor, { [ATTR.outcome]: lost ? "lost" : "released" });
    if (!lost) return;
    on.instruments?.lockLosses.add(1, { [ATTR.lossReason]: lost.reason });
    momentSpan(
      SPAN.lockLost,
      () => ({ [ATTR.target]: description, [ATTR.lossReason]: lost.reason, [ATTR.heldFor]: heldFor }),
      lost.error,
    );
  }, undefined);
}

/** A background renewal failed (and will be tried again, or the lock is lost: see {@link noteLockEnded}). */
export function noteRenewalFailed(description: string, error: unknown): void {
  const on = telemetryIfLoaded();
  if (!on) return;
  instrumentation(() => {
    on.instruments?.renewalFailures.add(1, { [ATTR.errorType]: errorType(error) });
    momentSpan(SPAN.lockRenewalFailed, () => ({ [ATTR.target]: description }), error);
  }, undefined);
}

/** This process became leader, or stepped down. */
export function noteLeaderChange(description: string, identity: string, transition: "elected" | "stepped-down"): void {
  const on = telemetryIfLoaded();
  if (!on) return;
  instrumentation(() => {
    on.instruments?.leaderChanges.add(1, { [ATTR.leaderTransition]: transition });
    momentSpan(SPAN.leaderChange, () => ({
      [ATTR.target]: description,
      [ATTR.leaderIdentity]: identity,
      [ATTR.leaderTransition]: transition,
    }));
  }, undefined);
}

function describeHolder(holder: Holder): string {
  return `${holder.name ? `${holder.name} on ` : ""}${holder.host} (pid ${holder.pid})`;
}

// ---------------------------------------------------------------------------------------------
// Table batches

/** What the batch span reads of `writeBatch`'s result. */
interface BatchResult {
  readonly ok: boolean;
  readonly transactions: readonly { readonly status: string; readonly actionIndexes: readonly number[] }[];
}

/** Wraps one `writeBatch` call: the span `asc.tables.batch_write` and the transaction sizes. */
export async function traceBatch<R extends BatchResult>(
  table: string,
  transactions: number,
  operations: number,
  write: () => Promise<R>,
): Promise<R> {
  if (!openTelemetryLoaded()) await loadOpenTelemetry();
  const scope = openScope(SPAN.batchWrite, () => ({
    [ATTR.target]: table,
    [ATTR.transactions]: transactions,
    [ATTR.operations]: operations,
  }));
  if (!scope) return write();
  return traced(scope, write, (result) => {
    const counts = { committed: 0, failed: 0, "not-sent": 0 } as Record<string, number>;
    for (const t of result.transactions) {
      counts[t.status] = (counts[t.status] ?? 0) + 1;
      if (t.status !== "not-sent") scope.telemetry.instruments?.transactionSize.record(t.actionIndexes.length);
    }
    return {
      outcome: result.ok ? "committed" : counts.committed ? "partial" : "failed",
      attributes: () => ({
        [ATTR.committedTransactions]: counts.committed ?? 0,
        [ATTR.failedTransactions]: counts.failed ?? 0,
        [ATTR.notSentTransactions]: counts["not-sent"] ?? 0,
      }),
    };
  });
}

// ---------------------------------------------------------------------------------------------
// Queue consumer

/** The consumer's events that settle a message, as its span's outcome. */
const MESSAGE_OUTCOMES: ReadonlySet<string> = new Set(["processed", "duplicate", "failed", "poisoned"]);

/** What the message span reads of a received message. */
interface MessageLike {
  readonly messageId: string;
  readonly dequeueCount: number;
}

/**
 * Wraps the consumer's processing of one message (from reception to settling): a `process <queue>`
 * span (kind CONSUMER, per the messaging semantic conventions) whose outcome comes from the
 * consumer's own events ({@link noteConsumerEvent}), and the messages counter. `process(step)`
 * never rejects. When OpenTelemetry is off, it answers `process(step)` itself: nothing is built,
 * not even a closure.
 */
export function traceMessage<A>(
  queue: string,
  message: MessageLike,
  handlerTimeoutInMs: number | undefined,
  process: (step: A) => Promise<void>,
  step: A,
): Promise<void> {
  if (!openTelemetryLoaded())
    return loadOpenTelemetry().then(() => traceMessage(queue, message, handlerTimeoutInMs, process, step));
  const scope = openScope(
    `${SPAN.messageProcess} ${queue}`,
    () => ({
      [ATTR.messagingSystem]: MESSAGING_SYSTEM,
      [ATTR.messagingDestination]: queue,
      [ATTR.messagingOperationName]: "process",
      [ATTR.messagingOperationType]: "process",
      [ATTR.messagingMessageId]: message.messageId,
      [ATTR.dequeueCount]: message.dequeueCount,
      ...(handlerTimeoutInMs === undefined ? {} : { [ATTR.handlerTimeout]: handlerTimeoutInMs / 1000 }),
    }),
    "consumer",
  );
  if (!scope) return process(step);
  const end = (error?: unknown) =>
    instrumentation(() => {
      // Unsettled: the consumer stopped, or the message was lost to another consumer.
      const outcome = error === undefined ? (scope.detail ?? "unsettled") : "failed";
      scope.telemetry.instruments?.messages.add(1, { [ATTR.outcome]: outcome, [ATTR.messagingDestination]: queue });
      endScope(scope, outcome, undefined, error ?? scope.failure);
    }, undefined);
  return runInScope(scope, () => process(step)).then(
    () => end(),
    (error: unknown) => {
      end(error);
      throw error;
    },
  );
}

/** Told every event the consumer emits: settles the message span's outcome, counts empty receives. */
export function noteConsumerEvent(event: string, payload: unknown): void {
  if (!openTelemetryLoaded()) return;
  if (event === "empty") {
    telemetry()?.instruments?.emptyReceives.add(1);
    return;
  }
  if (!MESSAGE_OUTCOMES.has(event)) return;
  // The message's scope: a batch's messages are settled each in its own (see `attempt.ts`).
  const scope = currentScope();
  if (!scope) return;
  const { error, reason } = payload as { error?: unknown; reason?: string };
  scope.detail = event;
  // A failure (a retry's or a poison's) marks the span failed; the error's `error.type` says why.
  // (`undefined` can be thrown too: then the event's reason, or its name, stands for it.)
  scope.failure = event === "failed" || event === "poisoned" ? (error ?? new Error(reason ?? event)) : undefined;
}

/** One call of the consumer's handler (a message, or a batch) took `durationInMs`. */
export function noteHandlerCall(durationInMs: number): void {
  if (!openTelemetryLoaded()) return;
  telemetry()?.instruments?.handlerDuration.record(durationInMs / 1000);
}

// ---------------------------------------------------------------------------------------------
// Shared

/**
 * Runs `fn` in the scope and ends its span with `describe`'s outcome (or the error). Answers what
 * `fn` answers, or throws what it throws: telemetry after the operation, and never in its way.
 */
async function traced<R>(
  scope: Scope,
  fn: () => Promise<R>,
  describe: (result: R) => { outcome: string; attributes?: () => Attributes },
  onError?: (error: unknown) => void,
): Promise<R> {
  let result: R;
  try {
    result = await runInScope(scope, fn);
  } catch (error) {
    instrumentation(() => {
      onError?.(error);
      endScope(scope, isAbort(error) ? "cancelled" : "failed", undefined, error);
    }, undefined);
    throw error;
  }
  instrumentation(() => {
    const { outcome, attributes } = describe(result);
    endScope(scope, outcome, attributes);
  }, undefined);
  return result;
}

/** The telemetry when the API was loaded (events after an instrumented call never load it themselves). */
function telemetryIfLoaded() {
  return openTelemetryLoaded() ? telemetry() : undefined;
}

function codeOf(error: unknown): string | undefined {
  return stringProperty(error, "code");
}

function isAbort(error: unknown): boolean {
  return stringProperty(error, "name") === "AbortError";
}
