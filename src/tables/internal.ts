/**
 * The door of the library's other features into `tables/`: its public entry point, and what they need
 * beyond it. Never an entry point of the package; the layering test
 * (tests/unit/project/layering.test.ts) lets a feature import another only through its `index.ts`
 * or its `internal.ts`.
 */
export * from "./index.js";
export { estimateActionBytes, tableUrlBytes, transactionBytes } from "./payload.js";
export { type CheckedAction, ENTITY_LIMITS, UNPAIRED_SURROGATE, checkActions } from "./validation.js";
