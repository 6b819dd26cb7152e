/**
 * The `messages` scenario's outbox part: the transactional outbox against a write followed by a
 * plain send, on the same consumer settings (a `QueueConsumer` with the claim-check and a memory
 * idempotency store whose effects count each message's handled effect).
 *
 * 1. Writes: `--samples` outbox writes (an entity and its message, one partition: the head's ETag
 *    is cached, one request each) against as many plain `createEntity` calls, one at a time, the
 *    relay not yet running: `outboxWritesPerSec` against `rawWritesPerSec`.
 * 2. Burst: the relay starts and drains those writes (`burstMessagesPerSec`, from its start to the
 *    last handled effect).
 * 3. Latency: write, then wait for the handled effect, one at a time, taking turns: the outbox (its
 *    write, `relay.notify()`, the relay's send) against `createEntity` then `sendMessage`.
 *    `outboxRatio` = median outbox latency / median raw latency (lower is better; 1 would be free).
 * 4. Every message's effect is counted: `lost` (written, never handled) and `doubled` (handled more
 *    than once) over all of them.
 */
import { randomBytes } from "node:crypto";
import type { ContainerClient } from "@azure/storage-blob";
import type { ClaimCheck } from "azure-storage-concurrency/claim-check";
import { MemoryIdempotencyStore, type MemoryEffect } from "azure-storage-concurrency/idempotency";
import { OutboxRelay, TableOutbox } from "azure-storage-concurrency/outbox";
import { QueueConsumer } from "azure-storage-concurrency/queue";
import { exponentialBackoff } from "azure-storage-concurrency/retry";
import { median, round } from "../harness.js";

interface OutboxContext {
  readonly connectionString: string;
  readonly samples: number;
  readonly quick: boolean;
  readonly log: (message: string) => void;
  readonly claimCheck: ClaimCheck;
  /** Where the relay's election lease blob goes. */
  readonly lockContainer: ContainerClient;
}

/** How long a message may take from its write to its effect before it counts as lost. */
const LOST_AFTER_MS = 30_000;

export async function measureOutbox(
  { connectionString, samples, log, claimCheck, lockContainer }: OutboxContext,
  { queues, tables }: { queues: typeof import("@azure/storage-queue"); tables: typeof import("@azure/data-tables") },
): Promise<{ figures: Record<string, number | null>; lost: number; doubled: number }> {
  const suffix = `${Date.now().toString(36)}${randomBytes(2).toString("hex")}`;
  const table = tables.TableClient.fromConnectionString(connectionString, `benchoutbox${suffix}`, {
    allowInsecureConnection: connectionString.includes("http://"),
  });
  const service = queues.QueueServiceClient.fromConnectionString(connectionString);
  const outboxQueue = service.getQueueClient(`bench-outbox-${suffix}`);
  const rawQueue = service.getQueueClient(`bench-plain-${suffix}`);
  await Promise.all([table.createTable(), outboxQueue.create(), rawQueue.create()]);

  const effects = new Map<string, number>();
  const waiting = new Map<string, () => void>();
  /** Resolves when `id`'s effect is done, or after {@link LOST_AFTER_MS} (then it counts as lost). */
  const handled = (id: string) =>
    new Promise<void>((resolve) => {
      if (effects.has(id)) return resolve();
      const timer = setTimeout(() => {
        waiting.delete(id);
        log(`message '${id}' was not handled within ${LOST_AFTER_MS} ms: lost`);
        resolve();
      }, LOST_AFTER_MS);
      waiting.set(id, () => (clearTimeout(timer), resolve()));
    });
  const consumerFor = (queue: typeof outboxQueue, keyFromBody: boolean) =>
    new QueueConsumer<string, MemoryEffect>(
      queue,
      async (body, { idempotency, addEffects }) => {
        const id = idempotency!.key;
        addEffects(() => {
          effects.set(id, (effects.get(id) ?? 0) + 1);
          waiting.get(id)?.();
          waiting.delete(id);
        });
        return body.length;
      },
      {
        claimCheck,
        idempotency: { store: new MemoryIdempotencyStore(), ...(keyFromBody ? { key: (body: string) => body } : {}) },
        pollingBackoff: exponentialBackoff({ deltaInMs: 2, minInMs: 0, maxInMs: 10 }),
        keepAlive: false,
      },
    );
  // Outbox messages carry their id (the default key); plain ones carry it as their body.
  const consumers = [consumerFor(outboxQueue, false), consumerFor(rawQueue, true)];
  const relay = new OutboxRelay(table, outboxQueue, {
    claimCheck,
    lockContainer,
    pollIntervalInMs: 5,
    maxPollIntervalInMs: 50,
    keepAlive: false,
  });
  const outbox = new TableOutbox(table);
  const ids: string[] = [];
  try {
    await Promise.all(consumers.map((c) => c.start()));

    // 1. Writes, the relay not running yet.
    let started = performance.now();
    for (let i = 0; i < samples; i++) {
      const id = `burst-${i}`;
      ids.push(id);
      await outbox.write([["create", { partitionKey: "burst", rowKey: id }]], [{ body: id, id }]);
    }
    const outboxWritesPerSec = samples / ((performance.now() - started) / 1000);
    started = performance.now();
    for (let i = 0; i < samples; i++) await table.createEntity({ partitionKey: "plain", rowKey: `plain-${i}` });
    const rawWritesPerSec = samples / ((performance.now() - started) / 1000);
    log(`writes: outbox ${round(outboxWritesPerSec, 0)}/s, plain createEntity ${round(rawWritesPerSec, 0)}/s`);

    // 2. The relay drains them.
    started = performance.now();
    const leading = new Promise<void>((resolve) => relay.on("leading", () => resolve()));
    await relay.start();
    await leading;
    await Promise.all(ids.map(handled));
    const burstMessagesPerSec = samples / ((performance.now() - started) / 1000);
    log(`burst: ${samples} outbox messages relayed and handled at ${round(burstMessagesPerSec, 0)}/s`);

    // 3. Write-to-effect latency, taking turns.
    const outboxMs: number[] = [];
    const rawMs: number[] = [];
    const viaOutbox = async (i: number) => {
      const id = `latency-${i}`;
      ids.push(id);
      const begun = performance.now();
      await outbox.write([["create", { partitionKey: "latency", rowKey: id }]], [{ body: id, id }]);
      relay.notify();
      await handled(id);
      outboxMs.push(performance.now() - begun);
    };
    const viaRaw = async (i: number) => {
      const id = `plain-latency-${i}`;
      ids.push(id);
      const begun = performance.now();
      await table.createEntity({ partitionKey: "plain-latency", rowKey: id });
      await rawQueue.sendMessage(id);
      await handled(id);
      rawMs.push(performance.now() - begun);
    };
    for (let i = 0; i < samples; i++) {
      if (i % 2 === 0) {
        await viaOutbox(i);
        await viaRaw(i);
      } else {
        await viaRaw(i);
        await viaOutbox(i);
      }
    }
    const outboxP50 = median(outboxMs);
    const rawP50 = median(rawMs);
    log(`write to handled effect: outbox ${round(outboxP50, 1)} ms, write then send ${round(rawP50, 1)} ms (median)`);
    return {
      figures: {
        outboxWritesPerSec: round(outboxWritesPerSec, 0),
        rawWritesPerSec: round(rawWritesPerSec, 0),
        burstMessagesPerSec: round(burstMessagesPerSec, 0),
        outboxLatencyP50Ms: round(outboxP50, 2),
        rawLatencyP50Ms: round(rawP50, 2),
        outboxRatio: round(outboxP50 / rawP50, 3),
      },
      lost: ids.filter((id) => !effects.has(id)).length,
      doubled: [...effects.values()].filter((n) => n > 1).length,
    };
  } finally {
    await Promise.all([relay.stop(), ...consumers.map((c) => c.stop())]);
    await Promise.all([table.deleteTable(), outboxQueue.deleteIfExists(), rawQueue.deleteIfExists()]);
  }
}
