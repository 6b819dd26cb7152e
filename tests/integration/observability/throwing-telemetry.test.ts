/**
 * Regression tests for issue 21's telemetry defects (repros r17, r18), against Azurite: the
 * application's span processor throws in `onEnd` (a bug in it or in its exporter; the SDK's
 * `Span.end()` passes the exception on). Telemetry never changes an outcome:
 * - r17: `optimisticUpdate` reports the write that landed (it rejected, inviting a second write);
 *   `acquire()` hands over the lease it was granted (it rejected, and an unreachable handle kept
 *   renewing the lease: the lock stayed taken);
 * - r18: a renewal the service refuses aborts the holder's signal (the lost-lock span threw before
 *   the abort, so two holders believed they held the lock).
 * tests/integration/explorer/telemetry.test.ts puts a fault at every call into OpenTelemetry.
 */
import type { ContainerClient } from "@azure/storage-blob";
import { trace } from "@opentelemetry/api";
import { BasicTracerProvider, type SpanProcessor } from "@opentelemetry/sdk-trace-base";
import { blobJsonCell, optimisticUpdate } from "../../../src/optimistic/index.js";
import { blobLock, isLeaseLostError } from "../../../src/lease/index.js";
import { blobService, uniqueName } from "../../support/storage.js";

let container: ContainerClient;
const ended: string[] = [];
const throwingProcessor: SpanProcessor = {
  onStart() {},
  onEnd(span) {
    ended.push(span.name);
    throw new Error(`span processor failed on ${span.name}`);
  },
  forceFlush: async () => {},
  shutdown: async () => {},
};

beforeAll(async () => {
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [throwingProcessor] }));
  container = blobService().getContainerClient(uniqueName("throwingotel"));
  await container.create();
});
afterAll(async () => {
  trace.disable();
  await container.delete();
});

it("r17: optimisticUpdate reports the write it made, although ending its span throws", async () => {
  const blob = container.getBlockBlobClient("doc.json");
  const result = await optimisticUpdate(blobJsonCell<{ n: number }>(blob), (current) => ({ n: (current?.n ?? 0) + 1 }));
  expect(result).toMatchObject({ written: true, value: { n: 1 } });
  expect(JSON.parse((await blob.downloadToBuffer()).toString())).toEqual({ n: 1 });
  expect(ended).toContain("asc.optimistic.update"); // the processor did run, and throw
});

it("r17: acquire() hands over the lease it was granted; once released, the lock is free", async () => {
  const lock = blobLock(container, "job", { durationInSeconds: 15 });
  const handle = await lock.acquire({ timeoutInMs: 5_000 });
  expect(handle.status).toBe("held");
  expect((await lock.inspect()).held).toBe(true);
  await handle.release();
  expect(handle.abortSignal.aborted).toBe(true);
  const other = await blobLock(container, "job", { durationInSeconds: 15 }).tryAcquire();
  expect(other).toBeDefined();
  await other?.release();
  expect(ended).toContain("asc.lock.acquire");
});

it("r18: a renewal the service refuses aborts the holder's signal before anyone else can believe it holds the lock alone", async () => {
  const lock = blobLock(container, "broken", { durationInSeconds: 15, renewIntervalInMs: 100 });
  const first = await lock.acquire();
  await lock.break({ breakPeriodInSeconds: 0 });
  const second = await blobLock(container, "broken", { durationInSeconds: 15 }).acquire({ timeoutInMs: 5_000 });
  try {
    // The first holder's next renewal (within about 100 ms) is refused: its signal aborts then.
    const deadline = Date.now() + 10_000;
    while (!first.abortSignal.aborted && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(first.abortSignal.aborted).toBe(true);
    expect(first.status).toBe("lost");
    const reason: unknown = first.abortSignal.reason;
    expect(isLeaseLostError(reason) && reason.reason).toBe("renewal-rejected");
    expect(second.status).toBe("held");
    expect(ended).toContain("asc.lock.lost");
  } finally {
    await Promise.all([first.release(), second.release()]);
  }
});
