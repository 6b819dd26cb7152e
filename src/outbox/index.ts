export {
  TableOutbox,
  type TableOutboxOptions,
  type OutboxWriteOptions,
  type OutboxWriteResult,
  type PreparedOutbox,
} from "./outbox.js";
export {
  OutboxRelay,
  type OutboxRelayOptions,
  type OutboxRelayEvents,
  type OutboxRelayStatus,
  type OutboxRelayListener,
} from "./relay.js";
export type { OutboxRelayedMessage } from "./relay-pass.js";
export { MAX_OUTBOX_PAYLOAD_BYTES, type OutboxMessage } from "./rows.js";
export { OutboxPayloadTooLargeError, isOutboxPayloadTooLargeError } from "./errors.js";
