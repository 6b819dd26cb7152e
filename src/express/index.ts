/**
 * `azure-storage-concurrency/express`: `Idempotency-Key` handling for Express (4.21 and 5) as a
 * middleware: a retried POST gets the first request's response, and its route ran once, per
 * tenant and key, on an idempotency store shared by every instance of the app. The middleware is a
 * plain `(req, res, next)` function over Node's `http` types, so this entry point loads nothing
 * of Express itself. See `docs/integrations.md`.
 *
 * @packageDocumentation
 */
export { expressIdempotency, idempotencyOf, type ExpressIdempotencyMiddleware } from "./middleware.js";
export type { IdempotencyKeyOptions, IdempotencyOfRequest } from "../idempotency/internal.js";
