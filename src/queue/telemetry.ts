/**
 * The queue consumer's telemetry (docs/observability.md), per OpenTelemetry's messaging semantic
 * conventions (https://opentelemetry.io/docs/specs/semconv/messaging/): a `process <queue>` span
 * (kind CONSUMER) around each message, from its reception to its settling, whose outcome is the
 * consumer's own event that settled it; the histogram `messaging.process.duration` (the span's
 * duration, with the conventions' bucket boundaries) and the counter
 * `messaging.client.consumed.messages` (once per delivery, by outcome); and the count of receives
 * that found the queue empty.
 *
 * Called after the consumer's state and events, never in their way: every call into OpenTelemetry
 * goes through the fail-safe wrappers of `../observability/`, and `process(step)` runs once
 * whatever telemetry does.
 */
import { outcomeAttributes, telemetryIfLoaded } from "../observability/helpers.js";
import { ATTR, MESSAGING_SYSTEM, METRIC, SPAN } from "../observability/names.js";
import { defineInstruments, loadOpenTelemetry, MESSAGING_SECONDS, openTelemetryLoaded } from "../observability/otel.js";
import {
  currentScope,
  endScope,
  instrumentation,
  openScope,
  runInScope,
  secondsSince,
} from "../observability/scope.js";

const instruments = defineInstruments((meter) => ({
  processDuration: meter.histogram(METRIC.processDuration, {
    description: "Duration of processing one message, from its reception to its settling",
    unit: "s",
    boundaries: MESSAGING_SECONDS,
  }),
  consumed: meter.counter(METRIC.consumedMessages, {
    description: "Messages delivered to the consumer, by how they were settled",
    unit: "{message}",
  }),
  emptyReceives: meter.counter(METRIC.emptyReceives, {
    description: "Receives that found the queue empty",
    unit: "{receive}",
  }),
}));

/** The consumer's events that settle a message, as its span's outcome. */
const MESSAGE_OUTCOMES: ReadonlySet<string> = new Set(["processed", "duplicate", "failed", "poisoned"]);

/** What the message span reads of a received message. */
interface MessageLike {
  readonly messageId: string;
  readonly dequeueCount: number;
}

/**
 * Wraps the consumer's processing of one message (from reception to settling): a `process <queue>`
 * span (kind CONSUMER) whose outcome comes from the consumer's own events
 * ({@link noteConsumerEvent}), the process duration and the consumed messages. `process(step)`
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
      const failure = error ?? scope.failure;
      const made = instruments(scope.telemetry);
      const common = {
        [ATTR.messagingSystem]: MESSAGING_SYSTEM,
        [ATTR.messagingDestination]: queue,
        ...outcomeAttributes(outcome, failure),
      };
      made?.processDuration.record(secondsSince(scope.startedAt), {
        ...common,
        [ATTR.messagingOperationName]: "process",
      });
      made?.consumed.add(1, { ...common, [ATTR.messagingOperationName]: "receive" });
      endScope(scope, outcome, undefined, failure);
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
    instrumentation(() => instruments(telemetryIfLoaded())?.emptyReceives.add(1), undefined);
    return;
  }
  if (!MESSAGE_OUTCOMES.has(event)) return;
  // The message's scope: a batch's messages are settled each in its own (see `settle.ts`).
  const scope = currentScope();
  if (!scope) return;
  const { error, reason } = payload as { error?: unknown; reason?: string };
  scope.detail = event;
  // A failure (a retry's or a poison's) marks the span failed; the error's `error.type` says why.
  // (`undefined` can be thrown too: then the event's reason, or its name, stands for it.)
  scope.failure = event === "failed" || event === "poisoned" ? (error ?? new Error(reason ?? event)) : undefined;
}
