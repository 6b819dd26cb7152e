/**
 * azure-storage-concurrency: the concurrency strategies of Azure Storage, as typed wrappers over the
 * official SDK clients.
 *
 * The root carries the error base that every feature's errors extend, and the one guard that
 * narrows any of them by its code. Each feature has an entry point of its own, from its folder:
 * `azure-storage-concurrency/optimistic`, `/lease`, `/queue`, `/idempotency`, `/tables`, `/files`,
 * `/retry`, `/semaphore`, `/schedule`, `/claim-check`, `/outbox`, `/throttling`, `/testing`, and
 * `/errors` (what the library reads out of the SDKs' errors). Importing a lock from `/lease` loads
 * no queue consumer. For code written for 0.1, the root also re-exports every feature (below).
 *
 * @packageDocumentation
 */
export * from "./error-codes.js";

// Every feature's public API, also from the root, so that code written for 0.1 (which had one entry
// point) keeps working through 0.x. New code imports from the feature's own entry point: smaller
// autocompletion, and a cold import that loads one feature.
export * from "./retry/index.js";
export * from "./files/index.js";
export * from "./lease/index.js";
export * from "./tables/index.js";
export * from "./idempotency/index.js";
export * from "./queue/index.js";
export * from "./optimistic/index.js";
export * from "./throttling/index.js";
export * from "./semaphore/index.js";
export * from "./schedule/index.js";
export * from "./claim-check/index.js";
export * from "./outbox/index.js";
