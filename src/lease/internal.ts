/**
 * The door of the library's other features into `lease/`: its public entry point, and what they need
 * beyond it. Never an entry point of the package; the layering test
 * (tests/unit/project/layering.test.ts) lets a feature import another only through its `index.ts`
 * or its `internal.ts`.
 */
export * from "./index.js";
export {
  ExpiryGuard,
  type GuardClock,
  type GuardExpiry,
  type SentAt,
  checkedOnRead,
  sentNow,
  systemClock,
} from "./guard.js";
export { checkLockBlobName } from "./lock-name.js";
export { describeFailure, WaitFailures } from "./wait-failures.js";
