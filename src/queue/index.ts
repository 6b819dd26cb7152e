/**
 * `azure-storage-concurrency/queue`: the queue consumer: at-least-once delivery with visibility extension for long work, a
 * poison queue, and exactly-once effects through an idempotency store (`/idempotency`).
 *
 * @packageDocumentation
 */
export { QueueConsumer } from "./consumer.js";
export { textCodec, base64Codec, jsonCodec, type MessageCodec, type JsonCodecOptions } from "./codecs.js";
export {
  MessageDecodeError,
  isMessageDecodeError,
  MessageOwnershipLostError,
  isMessageOwnershipLostError,
  ConsumerStoppedError,
  isConsumerStoppedError,
  ConsumerResourceError,
  isConsumerResourceError,
  HandlerTimeoutError,
  isHandlerTimeoutError,
  EffectsRefusedError,
  isEffectsRefusedError,
  type ConsumerResource,
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
