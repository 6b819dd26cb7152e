/**
 * The door of the library's other features into `queue/`: its public entry point, and the wire
 * format of claim-check envelopes (`envelope.ts`), which the consumer reads itself (an outbox
 * message's key is its idempotency key whatever the consumer's options) and the claim-check writes.
 * Never an entry point of the package; the layering test (tests/unit/project/layering.test.ts) lets
 * a feature import another only through its `index.ts` or its `internal.ts`.
 */
export * from "./index.js";
export {
  blobEnvelopeOf,
  envelopeText,
  ENVELOPE_KIND,
  isEnvelopeText,
  MAX_MESSAGE_BYTES,
  messageBytes,
  parseEnvelope,
  type BlobEnvelope,
  type ClaimCheckCompression,
} from "./envelope.js";
