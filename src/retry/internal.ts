/**
 * The door of the library's other features into `retry/`: its public entry point, and what they
 * need beyond it from the one classifier. Never an entry point of the package; the layering test
 * (tests/unit/project/layering.test.ts) lets a feature import another only through its `index.ts`
 * or its `internal.ts`.
 */
export * from "./index.js";
export { isResourceFailure, mayHaveBeenApplied } from "./classify.js";
