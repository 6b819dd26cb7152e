/**
 * `azure-storage-concurrency/fastify`: `Idempotency-Key` handling for Fastify 5 as a plugin: a
 * retried POST gets the first request's response, and its route ran once, per tenant and key, on
 * an idempotency store shared by every instance of the app. See `docs/integrations.md`.
 *
 * @packageDocumentation
 */
export { fastifyIdempotency, idempotencyOf, type FastifyIdempotencyOptions } from "./plugin.js";
export type { IdempotencyKeyOptions, IdempotencyOfRequest } from "../idempotency/internal.js";
