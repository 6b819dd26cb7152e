/**
 * The `batch` scenario's scale curves (issue 15): how the cost of an entity group transaction grows
 * with its size, on one partition of a fresh table.
 * - by operations: transactions of 1 to 100 inserts of small entities (raw `submitTransaction`, one
 *   at a time): time per transaction and entities per second;
 * - by payload: 100 inserts per call of `writeBatch()` with payloads from 100 bytes to 40 KiB per
 *   entity (4 MB per call at the top), which the library cuts at the service's 4 MiB limit: time per
 *   entity, MB per second and transactions (requests) per call.
 */
import type { TableClient, TransactionAction } from "@azure/data-tables";
import { padNumber, writeBatch } from "azure-storage-concurrency/tables";
import { round } from "../harness.js";

/** Operations per transaction on the first curve. */
const SIZES = [1, 2, 5, 10, 25, 50, 100];
/** Entities inserted per point of the first curve (a transaction of 1 runs 200 times, one of 100 twice). */
const ENTITIES_PER_SIZE = 200;
/** Payload per entity on the second curve, in bytes. */
const PAYLOADS = [100, 1_024, 4_096, 16_384, 40_960];
/** `writeBatch()` calls of 100 entities per point of the second curve. */
const CALLS_PER_PAYLOAD = 2;
/** A string property holds at most 64 KiB (32 Ki UTF-16 characters): payloads are split into parts of this size. */
const PART = 16_384;

function entity(partitionKey: string, rowKey: string, payloadBytes: number) {
  const parts: Record<string, string> = {};
  for (let at = 0, i = 0; at < payloadBytes; at += PART, i++)
    parts[`p${i}`] = "x".repeat(Math.min(PART, payloadBytes - at));
  return { partitionKey, rowKey, ...parts };
}

/** Both curves on `client` (a fresh table); `log` gets a line per point. */
export async function batchScale(client: TableClient, log: (message: string) => void) {
  const bySize = [];
  for (const size of SIZES) {
    const transactions = Math.ceil(ENTITIES_PER_SIZE / size);
    const started = performance.now();
    for (let t = 0; t < transactions; t++) {
      const actions = Array.from({ length: size }, (_, i): TransactionAction => [
        "create",
        entity(`size${size}`, padNumber(t * size + i, 6), 100),
      ]);
      await client.submitTransaction(actions);
    }
    const ms = performance.now() - started;
    bySize.push({
      operations: size,
      msPerTransaction: round(ms / transactions),
      entitiesPerSec: round((transactions * size) / (ms / 1000), 1),
    });
    log(`scale: transactions of ${size}: ${round(ms / transactions)} ms each`);
  }
  const byPayload = [];
  for (const payloadBytes of PAYLOADS) {
    let requests = 0;
    const started = performance.now();
    for (let call = 0; call < CALLS_PER_PAYLOAD; call++) {
      const actions = Array.from({ length: 100 }, (_, i): TransactionAction => [
        "create",
        entity(`payload${payloadBytes}`, padNumber(call * 100 + i, 6), payloadBytes),
      ]);
      const result = await writeBatch(client, actions, { onTransaction: () => void requests++ });
      if (!result.ok) throw new Error(`writeBatch failed: ${result.transactions.find((t) => t.error)?.error?.message}`);
    }
    const seconds = (performance.now() - started) / 1000;
    const entities = 100 * CALLS_PER_PAYLOAD;
    byPayload.push({
      payloadBytes,
      callBytes: payloadBytes * 100,
      msPerEntity: round((seconds * 1000) / entities, 3),
      megabytesPerSec: round((payloadBytes * entities) / 1e6 / seconds, 2),
      transactionsPerCall: round(requests / CALLS_PER_PAYLOAD, 1),
    });
    log(`scale: 100 entities of ${payloadBytes} bytes: ${round((seconds * 1000) / CALLS_PER_PAYLOAD)} ms per call`);
  }
  return { bySize, byPayload };
}
