/**
 * `azure-storage-concurrency/functions`: Azure Functions (Node.js v4 programming model, from
 * @azure/functions 4.2.0) with exactly-once effects: `idempotentQueueHandler` for `app.storageQueue`
 * handlers (keyed by the message id or the body, with the host's poison queue accounted for), and
 * `idempotentHttp` for HTTP triggers keyed by an `Idempotency-Key` header. Only types of
 * @azure/functions are imported. See `docs/integrations.md`.
 *
 * @packageDocumentation
 */
export { idempotentQueueHandler, type IdempotentQueueHandler, type IdempotentQueueHandlerOptions } from "./queue.js";
export { idempotentHttp, type IdempotentHttpHandler, type IdempotentHttpOptions } from "./http.js";
export type { IdempotencyKeyOptions, IdempotencyOfRequest } from "../idempotency/internal.js";
