/**
 * The door of the library's other features into `files/`: its public entry point, and what they need
 * beyond it. Never an entry point of the package; the layering test
 * (tests/unit/project/layering.test.ts) lets a feature import another only through its `index.ts`
 * or its `internal.ts`.
 */
export * from "./index.js";
export { ownRequest } from "./own-request.js";
export { describeFile } from "./request.js";
export { smbConflictError } from "./smb-retry.js";
