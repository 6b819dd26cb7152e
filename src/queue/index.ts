export { QueueConsumer } from "./consumer.js";
export { textCodec, base64Codec, jsonCodec, type MessageCodec, type JsonCodecOptions } from "./codecs.js";
export {
  MessageDecodeError,
  isMessageDecodeError,
  MessageOwnershipLostError,
  isMessageOwnershipLostError,
  IdempotencyClaimLostError,
  isIdempotencyClaimLostError,
  ConsumerStoppedError,
  isConsumerStoppedError,
  ConsumerResourceError,
  isConsumerResourceError,
  HandlerTimeoutError,
  isHandlerTimeoutError,
  EffectsRefusedError,
  isEffectsRefusedError,
  type ConsumerResource,
  type IdempotencyClaimLossReason,
} from "./errors.js";
export { parsePoisonMessage, poisonQueueNameOf, type PoisonEnvelope } from "./poison.js";
export type { ListenerDisposable } from "./events.js";
export type { ConsumerClaimCheck, ConsumerClaimCheckCallOptions } from "./claim-check-hook.js";
export type { BatchMessage, BatchMessageHandler, BatchMessageOutcome, BatchContext } from "./batch.js";
export type {
  ReceivedQueueMessage,
  MessageContext,
  IdempotencyContext,
  MessageHandler,
  IdempotencyOptions,
  PurgeScheduleOptions,
  QueueConsumerOptions,
  QueueConsumerStatus,
  QueueConsumerEvents,
  StopOptions,
  StopResult,
} from "./types.js";
export {
  MAX_RESULT_JSON_LENGTH,
  type IdempotencyStore,
  type ClaimRequest,
  type ClaimOutcome,
  type IdempotencyClaim,
  type CompleteOptions,
  type CompleteEntry,
  type PurgeOptions,
  type PurgeResult,
  type IdempotencyStoreCallOptions,
} from "./idempotency/store.js";
export {
  MemoryIdempotencyStore,
  type MemoryEffect,
  type MemoryIdempotencyStoreOptions,
  type MemoryIdempotencyRecord,
} from "./idempotency/memory.js";
export { TableIdempotencyStore, type TableIdempotencyStoreOptions } from "./idempotency/table.js";
export {
  idempotent,
  type IdempotentContext,
  type IdempotentCallOptions,
  type IdempotentFunction,
  type JsonRoundTrip,
} from "./idempotency/idempotent.js";
export type { IdempotentOptions } from "./idempotency/idempotent-options.js";
export {
  IdempotencyPayloadMismatchError,
  isIdempotencyPayloadMismatchError,
  IdempotencyInProgressError,
  isIdempotencyInProgressError,
} from "./idempotency/errors.js";
