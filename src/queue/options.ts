/**
 * Checks a {@link QueueConsumerOptions} once, when the consumer is created, and fills in defaults:
 * every limit of the service (32 messages per receive, whole-second visibility timeouts of 1 s to
 * 7 days) and every cross-option rule (the heartbeat must beat before the visibility timeout ends,
 * the refetch threshold must be below the concurrency) is a TypeError or RangeError naming the
 * option, before any request is made.
 */
import { randomUUID } from "node:crypto";
import type { QueueClient } from "@azure/storage-queue";
import { exponentialBackoff, type BackoffStrategy } from "../retry/index.js";
import {
  checkNonEmptyString,
  checkNumber,
  checkOptionalFunction,
  checkOptionalInstance,
  checkOptionalSignal,
  optionalNumber,
} from "../internal/validate.js";
import type { AdaptiveRateLimiter } from "../throttling/index.js";
import type { ConsumerClaimCheck } from "./claim-check-hook.js";
import { textCodec, type MessageCodec } from "./codecs.js";
import { checkRetention } from "../idempotency/internal.js";
import type { IdempotencyStore } from "../idempotency/index.js";
import type { QueueConsumerOptions, ReceivedQueueMessage, StopOptions } from "./types.js";

/** The default `requestTimeoutInMs` is a quarter of the visibility timeout, at most this. */
const MAX_DEFAULT_REQUEST_TIMEOUT_IN_MS = 10_000;
/** The service's limit on messages per receive. */
const MAX_BATCH_SIZE = 32;
/** The service's limit on a visibility timeout, in seconds (7 days). */
export const MAX_VISIBILITY_TIMEOUT_IN_SECONDS = 604_800;
/** The default time between two background purges of the idempotency store. */
const DEFAULT_PURGE_INTERVAL_IN_MS = 3_600_000;

export interface ResolvedOptions<T, TEffect> {
  readonly codec: MessageCodec<T>;
  readonly batchSize: number;
  readonly concurrency: number;
  readonly newBatchThreshold: number;
  readonly visibilityTimeoutInSeconds: number;
  readonly heartbeatIntervalInMs: number;
  readonly maxDequeueCount: number;
  readonly retryBackoff: BackoffStrategy;
  readonly pollingBackoff: BackoffStrategy;
  readonly poisonQueue: QueueClient | undefined;
  readonly poisonTimeToLiveInSeconds: number;
  readonly poisonMessageFormat: "envelope" | "raw";
  readonly idempotency:
    | {
        readonly store: IdempotencyStore<TEffect>;
        readonly key: (body: T, message: ReceivedQueueMessage) => string;
        readonly partitionKey: ((body: T, message: ReceivedQueueMessage) => string) | undefined;
        /** The key is the message id (no `key` option): a first delivery cannot collide with anyone. */
        readonly keyIsMessageId: boolean;
        /** `effects: "tables-only"`: a first delivery is not claimed, whatever its key (see `claim.ts`). */
        readonly tablesOnlyEffects: boolean;
        readonly retentionInMs: number | undefined;
        /** The background purge's interval, or undefined for none. */
        readonly purgeIntervalInMs: number | undefined;
      }
    | undefined;
  readonly handlerTimeoutInMs: number | undefined;
  readonly claimCheck: ConsumerClaimCheck | undefined;
  readonly gracePeriodInMs: number;
  readonly requestTimeoutInMs: number;
  readonly keepAlive: boolean;
  readonly consumerId: string;
  readonly abortSignal: AbortSignal | undefined;
  readonly rateLimiter: AdaptiveRateLimiter | undefined;
}

export function resolveOptions<T, TEffect>(
  queueClient: QueueClient,
  handler: unknown,
  options: QueueConsumerOptions<T, TEffect>,
): ResolvedOptions<T, TEffect> {
  if (typeof queueClient !== "object" || queueClient === null || typeof queueClient.receiveMessages !== "function") {
    throw new TypeError("`queueClient` must be a QueueClient from @azure/storage-queue.");
  }
  if (typeof handler !== "function")
    throw new TypeError(
      "`handler` must be an async function: (body, context) => result, or (messages, context) => outcomes.",
    );
  if (typeof options !== "object" || options === null) throw new TypeError("`options` must be an object.");

  const codec = options.codec ?? (textCodec as unknown as MessageCodec<T>);
  if (typeof codec !== "object" || codec === null || typeof codec.decode !== "function") {
    throw new TypeError(
      "`codec` must be a MessageCodec (textCodec, base64Codec, jsonCodec() or your own { name, decode, encode }).",
    );
  }
  const batchSize = optionalNumber("batchSize", options.batchSize, 16, { min: 1, max: MAX_BATCH_SIZE, integer: true });
  const concurrency = optionalNumber("concurrency", options.concurrency, batchSize, { min: 1, integer: true });
  const newBatchThreshold = optionalNumber(
    "newBatchThreshold",
    options.newBatchThreshold,
    Math.floor(concurrency / 2),
    {
      min: 0,
      integer: true,
    },
  );
  if (newBatchThreshold >= concurrency) {
    throw new RangeError(
      `\`newBatchThreshold\` (${newBatchThreshold}) must be less than \`concurrency\` (${concurrency}): the consumer receives more only when fewer handlers than that are running.`,
    );
  }
  const visibilityTimeoutInSeconds = optionalNumber(
    "visibilityTimeoutInSeconds",
    options.visibilityTimeoutInSeconds,
    30,
    {
      min: 1,
      max: MAX_VISIBILITY_TIMEOUT_IN_SECONDS,
      integer: true,
    },
  );
  const heartbeatIntervalInMs = optionalNumber(
    "heartbeatIntervalInMs",
    options.heartbeatIntervalInMs,
    (visibilityTimeoutInSeconds * 1000) / 3,
    { min: 1 },
  );
  if (heartbeatIntervalInMs >= visibilityTimeoutInSeconds * 1000) {
    throw new RangeError(
      `\`heartbeatIntervalInMs\` (${heartbeatIntervalInMs}) must be shorter than \`visibilityTimeoutInSeconds\` (${visibilityTimeoutInSeconds} s): ` +
        "the heartbeat has to hide the message again before it becomes visible. A third of the visibility timeout is a good choice.",
    );
  }
  const maxDequeueCount = optionalNumber("maxDequeueCount", options.maxDequeueCount, 5, { min: 1, integer: true });
  const retryBackoff =
    checkBackoff("retryBackoff", options.retryBackoff) ??
    exponentialBackoff({ deltaInMs: 1_000, minInMs: 0, maxInMs: 60_000 });
  const pollingBackoff =
    checkBackoff("pollingBackoff", options.pollingBackoff) ??
    exponentialBackoff({ deltaInMs: 100, minInMs: 0, maxInMs: 60_000 });
  if (options.poisonQueue !== undefined && typeof options.poisonQueue?.sendMessage !== "function") {
    throw new TypeError("`poisonQueue` must be a QueueClient from @azure/storage-queue.");
  }
  if (
    options.poisonQueue === undefined &&
    typeof queueClient.name === "string" &&
    queueClient.name.length > 63 - "-poison".length
  ) {
    throw new RangeError(
      `The queue name '${queueClient.name}' is too long for a '-poison' queue next to it (queue names have at most 63 characters): pass \`poisonQueue\`.`,
    );
  }
  const poisonTimeToLiveInSeconds = optionalNumber("poisonTimeToLiveInSeconds", options.poisonTimeToLiveInSeconds, -1, {
    min: -1,
    integer: true,
  });
  if (poisonTimeToLiveInSeconds === 0)
    throw new RangeError("`poisonTimeToLiveInSeconds` must be -1 (never expire) or at least 1, got 0.");
  const poisonMessageFormat = options.poisonMessageFormat ?? "envelope";
  if (poisonMessageFormat !== "envelope" && poisonMessageFormat !== "raw")
    throw new RangeError(
      `\`poisonMessageFormat\` must be "envelope" or "raw", got ${JSON.stringify(String(poisonMessageFormat))}.`,
    );
  const gracePeriodInMs = optionalNumber("gracePeriodInMs", options.gracePeriodInMs, 30_000, { min: 0 });
  const requestTimeoutInMs = optionalNumber(
    "requestTimeoutInMs",
    options.requestTimeoutInMs,
    Math.min(MAX_DEFAULT_REQUEST_TIMEOUT_IN_MS, (visibilityTimeoutInSeconds * 1000) / 4),
    { min: 1 },
  );
  if (requestTimeoutInMs >= visibilityTimeoutInSeconds * 1000) {
    throw new RangeError(
      `\`requestTimeoutInMs\` (${requestTimeoutInMs}) must be shorter than \`visibilityTimeoutInSeconds\` (${visibilityTimeoutInSeconds} s): ` +
        "a heartbeat that hangs must be given up, and tried again, while the message is still hidden.",
    );
  }
  if (options.keepAlive !== undefined && typeof options.keepAlive !== "boolean") {
    throw new TypeError("`keepAlive` must be a boolean.");
  }
  const consumerId =
    options.consumerId === undefined
      ? `consumer-${randomUUID()}`
      : checkNonEmptyString("consumerId", options.consumerId);
  checkOptionalSignal("abortSignal", options.abortSignal);
  checkOptionalInstance("rateLimiter", options.rateLimiter, "run", "an AdaptiveRateLimiter");

  return {
    codec,
    batchSize,
    concurrency,
    newBatchThreshold,
    visibilityTimeoutInSeconds,
    heartbeatIntervalInMs,
    maxDequeueCount,
    retryBackoff,
    pollingBackoff,
    poisonQueue: options.poisonQueue,
    poisonTimeToLiveInSeconds,
    poisonMessageFormat,
    idempotency: resolveIdempotency(options, visibilityTimeoutInSeconds),
    handlerTimeoutInMs:
      options.handlerTimeoutInMs === undefined
        ? undefined
        : checkNumber("handlerTimeoutInMs", options.handlerTimeoutInMs, { min: 1 }),
    claimCheck: checkClaimCheck(options.claimCheck, visibilityTimeoutInSeconds),
    gracePeriodInMs,
    requestTimeoutInMs,
    keepAlive: options.keepAlive ?? true,
    consumerId,
    abortSignal: options.abortSignal,
    rateLimiter: options.rateLimiter,
  };
}

function resolveIdempotency<T, TEffect>(
  options: QueueConsumerOptions<T, TEffect>,
  visibilityTimeoutInSeconds: number,
): ResolvedOptions<T, TEffect>["idempotency"] {
  const idempotency = options.idempotency;
  if (idempotency === undefined) return undefined;
  if (typeof idempotency !== "object" || idempotency === null)
    throw new TypeError("`idempotency` must be an object with a `store`.");
  const store = idempotency.store;
  if (
    typeof store !== "object" ||
    store === null ||
    typeof store.claim !== "function" ||
    typeof store.complete !== "function"
  ) {
    throw new TypeError(
      "`idempotency.store` must be an IdempotencyStore (TableIdempotencyStore or MemoryIdempotencyStore).",
    );
  }
  checkOptionalFunction("idempotency.key", idempotency.key);
  checkOptionalFunction("idempotency.partitionKey", idempotency.partitionKey);
  const effects: unknown = idempotency.effects;
  if (effects !== undefined && effects !== "any" && effects !== "tables-only") {
    throw new RangeError(
      `\`idempotency.effects\` must be "any" (the default: the key is claimed before the handler runs) or "tables-only" ` +
        `(every effect goes through addEffects: no claim on a first delivery); got ${JSON.stringify(effects)}.`,
    );
  }
  const retentionInMs =
    idempotency.retentionInMs === undefined
      ? undefined
      : checkRetention("idempotency.retentionInMs", idempotency.retentionInMs, 0);
  if (retentionInMs !== undefined && retentionInMs <= visibilityTimeoutInSeconds * 1000) {
    throw new RangeError(
      `\`idempotency.retentionInMs\` (${retentionInMs}) must be longer than the visibility timeout (${visibilityTimeoutInSeconds} s): ` +
        "a message whose delete was lost comes back after it, and its done record must still be there to recognise it.",
    );
  }
  return {
    store,
    key: idempotency.key ?? ((_body, message) => message.messageId),
    partitionKey: idempotency.partitionKey,
    keyIsMessageId: idempotency.key === undefined,
    tablesOnlyEffects: effects === "tables-only",
    retentionInMs,
    purgeIntervalInMs: resolvePurgeInterval(idempotency.purge, typeof store.purge === "function"),
  };
}

/** The background purge's interval: none when turned off or when the store cannot purge. */
function resolvePurgeInterval(purge: unknown, storeCanPurge: boolean): number | undefined {
  if (purge === undefined || purge === true) return storeCanPurge ? DEFAULT_PURGE_INTERVAL_IN_MS : undefined;
  if (purge === false) return undefined;
  if (typeof purge !== "object" || purge === null)
    throw new TypeError("`idempotency.purge` must be a boolean or an object such as { intervalInMs: 3_600_000 }.");
  if (!storeCanPurge) throw new TypeError("`idempotency.purge` is set, but the idempotency store has no `purge()`.");
  return optionalNumber(
    "idempotency.purge.intervalInMs",
    (purge as { intervalInMs?: unknown }).intervalInMs,
    DEFAULT_PURGE_INTERVAL_IN_MS,
    { min: 1_000 },
  );
}

/** The `claimCheck` option: its methods, and a sweep grace that outlasts the visibility timeout. */
function checkClaimCheck(
  claimCheck: ConsumerClaimCheck | undefined,
  visibilityTimeoutInSeconds: number,
): ConsumerClaimCheck | undefined {
  if (claimCheck === undefined) return undefined;
  const given = claimCheck as Partial<ConsumerClaimCheck> | null; // from JavaScript, anything
  if (
    typeof given !== "object" ||
    given === null ||
    typeof given.resolve !== "function" ||
    typeof given.deletePayload !== "function" ||
    typeof given.keepPayload !== "function"
  ) {
    throw new TypeError("`claimCheck` must be a ClaimCheck (new ClaimCheck(containerClient)).");
  }
  if (typeof given.sweepGraceInMs === "number" && given.sweepGraceInMs <= visibilityTimeoutInSeconds * 1000) {
    throw new RangeError(
      `The claim-check's \`sweepGraceInMs\` (${given.sweepGraceInMs}) must be longer than \`visibilityTimeoutInSeconds\` (${visibilityTimeoutInSeconds} s): ` +
        "a message received just before it expires is read after it, and its payload must still be there.",
    );
  }
  return claimCheck;
}

function checkBackoff(name: string, value: unknown): BackoffStrategy | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "object" || value === null || typeof (value as BackoffStrategy).delayInMs !== "function") {
    throw new TypeError(`\`${name}\` must be a BackoffStrategy (exponentialBackoff(), fixedBackoff(), …).`);
  }
  return value as BackoffStrategy;
}

/** Checks the options of `stop()`: a grace period, and a deadline that leaves the grace period room. */
export function checkStopOptions(
  options: StopOptions,
  defaultGracePeriodInMs: number,
): { gracePeriodInMs: number; timeoutInMs: number | undefined } {
  if (typeof options !== "object" || options === null) throw new TypeError("`options` must be an object.");
  const gracePeriodInMs =
    options.gracePeriodInMs === undefined
      ? defaultGracePeriodInMs
      : checkNumber("gracePeriodInMs", options.gracePeriodInMs, { min: 0 });
  const timeoutInMs =
    options.timeoutInMs === undefined ? undefined : checkNumber("timeoutInMs", options.timeoutInMs, { min: 0 });
  if (timeoutInMs !== undefined && timeoutInMs < gracePeriodInMs) {
    throw new RangeError(
      `\`timeoutInMs\` (${timeoutInMs}) must not be shorter than the grace period (\`gracePeriodInMs\`, ${gracePeriodInMs}): ` +
        "running handlers get the grace period before their signals are aborted; pass a shorter `gracePeriodInMs` too.",
    );
  }
  return { gracePeriodInMs, timeoutInMs };
}
