export {
  ClaimCheck,
  type ClaimCheckReceivedMessage,
  type ClaimCheckReceiveResult,
  type ClaimCheckDeleteResult,
} from "./claim-check.js";
export type { ClaimCheckOptions, ClaimCheckSendOptions, ClaimCheckCallOptions } from "./options.js";
export type { ClaimCheckSendResult } from "./send.js";
export type { ResolvedMessage } from "./read.js";
export type { PayloadDeletion } from "./lifecycle.js";
export type { ClaimCheckSweepOptions, ClaimCheckSweepResult } from "./sweep.js";
export { MAX_MESSAGE_BYTES, type ClaimCheckCompression } from "../queue/internal.js";
export { ClaimCheckPayloadMissingError, ClaimCheckSendError, isClaimCheckSendError } from "./errors.js";
export type { OperationTracingOptions, TracingContext } from "../observability/scope.js";
