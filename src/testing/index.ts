/**
 * `azure-storage-concurrency/testing`: what the library's own tests use, for users' tests too:
 * a real Azurite started on free ports (data in a temporary folder), a fault-injecting proxy (with a model of the
 * service's throttling: `createFaultProxy({ target, throttling })`), and an Azure Files REST responder (Azurite does
 * not emulate Azure Files).
 *
 * @packageDocumentation
 */
export {
  startAzurite,
  findAzuriteCli,
  buildConnectionString,
  AZURITE_ACCOUNT_NAME,
  AZURITE_ACCOUNT_KEY,
  type StartAzuriteOptions,
  type AzuriteAccount,
  type RunningAzurite,
  type DevelopmentEndpoints,
} from "./azurite.js";
export {
  createFaultProxy,
  seededRandom,
  type FaultAction,
  type FaultRule,
  type FaultRequestInfo,
  type FaultProxy,
  type FaultProxyOptions,
  type ProxiedRequest,
} from "./fault-proxy.js";
export type { ThrottlingModel, ThrottlingModelOptions, ThrottlingModelStats } from "./throttling-model.js";
export {
  startFilesResponder,
  type FilesResponder,
  type FilesResponderOptions,
  type FilesResponderRequest,
  type SmbSimulator,
  type SmbHandle,
  type SmbOpenOptions,
} from "./files-responder/responder.js";
export type { SmbShareMode, SmbAccess } from "./files-responder/store.js";
export { SmbSharingViolationError } from "./files-responder/smb-rules.js";
