/**
 * A cell whose reads and writes go through an adaptive rate limiter (`rateLimiter` of
 * {@link optimisticUpdate}): every request of the update's rounds, the read-backs that settle a
 * lost answer included, waits for a token of the partition that serves the cell, and its answer
 * teaches the limiter. The cell's identity (`key`) is the same, so the round, the write-skip cache
 * and coalescing treat it as the cell itself.
 *
 * The partition is read from the cell's key, which the cells of this folder build from their URL:
 * a table entity's partition (`table-entity-…|<table url>|["pk","rk"]`), a blob, a container's
 * metadata. A cell of the application's own is keyed by its `key`, under no account.
 */
import { throttleScopeOf, type AdaptiveRateLimiter, type ThrottleScope } from "../throttling/index.js";
import type { VersionedCell } from "./cell.js";

/** `cell` with its requests sent through `rateLimiter`; `cell` itself without one. */
export function throttledCell<T>(
  cell: VersionedCell<T>,
  rateLimiter: AdaptiveRateLimiter | undefined,
): VersionedCell<T> {
  if (rateLimiter === undefined) return cell;
  const scope = scopeOfCell(cell.key);
  return {
    key: cell.key,
    description: cell.description,
    read: (options) => rateLimiter.run(scope, () => cell.read(options), signalOf(options)),
    write: (content, options) => rateLimiter.run(scope, () => cell.write(content, options), signalOf(options)),
    decode: (content) => cell.decode(content),
    encode: (value) => cell.encode(value),
    ...(cell.sizeInBytes ? { sizeInBytes: (content: unknown) => cell.sizeInBytes!(content) } : {}),
    ...(cell.mergeWrite
      ? { mergeWrite: (stored: unknown, written: unknown) => cell.mergeWrite!(stored, written) }
      : {}),
  };
}

function signalOf(options: { readonly abortSignal?: AbortSignal | undefined }) {
  return options.abortSignal ? { abortSignal: options.abortSignal } : {};
}

/** The partition of a cell, from its key (see the module documentation). */
export function scopeOfCell(key: string): ThrottleScope {
  const bar = key.indexOf("|");
  const kind = key.slice(0, bar);
  try {
    if (kind.startsWith("table-entity-")) {
      const keysAt = key.lastIndexOf("|[");
      const [partitionKey] = JSON.parse(key.slice(keysAt + 1)) as [string, string];
      return throttleScopeOf(key.slice(bar + 1, keysAt), { service: "table", partitionKey });
    }
    if (kind.startsWith("blob-") || kind === "container-metadata") {
      return throttleScopeOf(key.slice(bar + 1), { service: "blob" });
    }
  } catch {
    // not a key of this folder's cells after all: keyed as a cell of the application's own
  }
  return { account: "account:", partition: `cell:${key}` };
}
