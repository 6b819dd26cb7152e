/**
 * What the other features of the library use from `retry/` beyond its public entry point
 * (`index.ts`): their door into it, never an entry point of the package.
 */
export { isResourceFailure } from "./classify.js";
