/**
 * A process of its own for the hostile-values explorer (../hostile-values.test.ts): it must survive
 * code that throws values which are not Errors, or Errors that fight back (tests/support/hostile.ts),
 * so it installs no `unhandledRejection` or `uncaughtException` handler: a rejection the library
 * leaves unhandled ends it, and the parent sees the exit code.
 *
 * Twice, with OpenTelemetry off, then on (a real SDK: tracer, meter, context manager), for every
 * hostile value:
 * - queue consumer: a handler throws it on its message's only allowed reception: one `failed`
 *   event (not retried), the message poisoned with a reason that describes the value, gone from
 *   its queue, and no `error` event;
 * - idempotent() (Table store): `fn` throws it: the call rejects with that very value, the claim is
 *   released, and the next call with the key runs `fn` and gets its result;
 * - optimisticUpdate: `mutate` throws it: the update rejects with that very value, the blob is unchanged;
 * - withLock: the callback throws it: withLock rejects with that very value, the lock is free again.
 *
 * Prints one JSON line per run: `{ otel, operation, value, problem? }`, then `{ done: true }`.
 * Env: ASC_TEST_CONNECTION_STRING; ASC_VALUES (labels, `|`-separated) runs only those values.
 */
import { context, metrics, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { blobJsonCell, optimisticUpdate } from "../../../../src/optimistic/index.js";
import { blobLock } from "../../../../src/lease/index.js";
import { exponentialBackoff } from "../../../../src/retry/index.js";
import { idempotent, TableIdempotencyStore } from "../../../../src/idempotency/index.js";
import { parsePoisonMessage, QueueConsumer, textCodec } from "../../../../src/queue/index.js";
import { describeError } from "../../../../src/internal/describe-error.js";
import { hostileValues } from "../../../support/hostile.js";
import { blobService, queueService, tableClient, uniqueName } from "../../../support/storage.js";

type Otel = "off" | "on";
const print = (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(line)}\n`);
const only = process.env.ASC_VALUES?.split("|");
const values = hostileValues().filter(([label]) => !only || only.includes(label));

/** Whether `caught` is the very value `thrown` (NaN-safe, and without reading either). */
const same = (caught: unknown, thrown: unknown) => Object.is(caught, thrown);

async function until(condition: () => boolean, timeoutInMs: number): Promise<void> {
  const deadline = Date.now() + timeoutInMs;
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
}

/** Every value thrown by a handler, one message each, one consumer. */
async function consumer(otel: Otel): Promise<void> {
  const queue = queueService().getQueueClient(uniqueName(`hostile${otel}`));
  const poison = queueService().getQueueClient(`${queue.name}-poison`);
  await queue.create();
  try {
    for (let i = 0; i < values.length; i++) await queue.sendMessage(String(i));
    const failed = new Map<string, number>();
    const poisoned = new Map<string, string>();
    /** `error` events by message (`*` for those about no message in particular). */
    const errors = new Map<string, string[]>();
    const consumer = new QueueConsumer(
      queue,
      async (text: string) => {
        throw values[Number(text)]![1]();
      },
      {
        codec: textCodec,
        maxDequeueCount: 1,
        visibilityTimeoutInSeconds: 5,
        pollingBackoff: exponentialBackoff({ deltaInMs: 20, minInMs: 0, maxInMs: 100 }),
      },
    );
    consumer.on("failed", ({ message, willRetry }) => {
      if (!willRetry) failed.set(message.messageText, (failed.get(message.messageText) ?? 0) + 1);
    });
    consumer.on("poisoned", ({ message, reason }) => void poisoned.set(message.messageText, reason));
    consumer.on("error", ({ error, operation, message }) => {
      const key = message?.messageText ?? "*";
      errors.set(key, [...(errors.get(key) ?? []), `${operation}: ${describeError(error)}`]);
    });
    await consumer.start();
    await until(() => poisoned.size >= values.length, 15_000);
    await consumer.stop();
    const envelopes = new Map<string, string | undefined>();
    for (let round = 0; round < 2 && envelopes.size < values.length; round++) {
      const { receivedMessageItems } = await poison.receiveMessages({ numberOfMessages: 32 });
      for (const item of receivedMessageItems) {
        const envelope = parsePoisonMessage(item.messageText);
        if (envelope) envelopes.set(envelope.messageText, envelope.reason);
      }
    }
    const left = (await queue.peekMessages({ numberOfMessages: 32 })).peekedMessageItems.length;
    values.forEach(([label, , described], i) => {
      const key = String(i);
      const reason = poisoned.get(key);
      const problems = [
        failed.get(key) === 1 ? undefined : `${failed.get(key) ?? 0} final 'failed' events, not 1`,
        reason === undefined ? "not poisoned" : undefined,
        reason !== undefined && !described.test(reason.replace(/^.*last error: /, ""))
          ? `poisoned with the reason "${reason}"`
          : undefined,
        envelopes.get(key) === reason ? undefined : `the poison envelope's reason is "${envelopes.get(key)}"`,
        errors.has(key) || errors.has("*")
          ? `error events: ${[...(errors.get(key) ?? []), ...(errors.get("*") ?? [])].join("; ")}`
          : undefined,
        left === 0 ? undefined : `${left} messages left in the queue`,
      ].filter((p) => p !== undefined);
      print({ otel, operation: "queue consumer", value: label, problem: problems.join("; ") || undefined });
    });
  } finally {
    await Promise.allSettled([queue.deleteIfExists(), poison.deleteIfExists()]);
  }
}

async function idempotentCalls(otel: Otel): Promise<void> {
  const inbox = tableClient(uniqueName(`hostile${otel}`));
  await inbox.createTable();
  try {
    for (const [label, make] of values) {
      let calls = 0;
      let thrown: unknown;
      const call = idempotent(
        async () => {
          calls += 1;
          if (calls === 1) throw (thrown = make());
          return "second call's result";
        },
        { store: new TableIdempotencyStore(inbox), key: () => `key-${label}` },
      );
      let caught: unknown = "did not reject";
      await call(undefined).catch((error: unknown) => void (caught = error));
      const again = await call(undefined).then(
        (result) => result,
        (error: unknown) => `rejected: ${describeError(error)}`,
      );
      const problems = [
        same(caught, thrown)
          ? undefined
          : `the first call rejected with ${describeError(caught)}, not the thrown value`,
        again === "second call's result" ? undefined : `the second call answered "${again}"`,
        calls === 2 ? undefined : `fn ran ${calls} times, not 2`,
      ].filter((p) => p !== undefined);
      print({ otel, operation: "idempotent()", value: label, problem: problems.join("; ") || undefined });
    }
  } finally {
    await inbox.deleteTable().catch(() => undefined);
  }
}

async function optimisticAndLocks(otel: Otel): Promise<void> {
  const container = blobService().getContainerClient(uniqueName(`hostile${otel}`));
  await container.create();
  try {
    for (const [label, make] of values) {
      const blob = container.getBlockBlobClient(`${uniqueName("doc")}.json`);
      await blob.upload(JSON.stringify({ n: 1 }), 7);
      let thrown: unknown;
      let caught: unknown = "did not reject";
      await optimisticUpdate(blobJsonCell<{ n: number }>(blob), () => {
        throw (thrown = make());
      }).catch((error: unknown) => void (caught = error));
      const stored = (await blob.downloadToBuffer()).toString();
      const problems = [
        same(caught, thrown) ? undefined : `rejected with ${describeError(caught)}, not the thrown value`,
        stored === '{"n":1}' ? undefined : `the blob holds ${stored}`,
      ].filter((p) => p !== undefined);
      print({ otel, operation: "optimisticUpdate", value: label, problem: problems.join("; ") || undefined });

      const lock = blobLock(container, uniqueName("lock"), { durationInSeconds: 15 });
      caught = "did not reject";
      await lock
        .withLock(() => {
          throw (thrown = make());
        })
        .catch((error: unknown) => void (caught = error));
      const held = (await lock.inspect()).held;
      const lockProblems = [
        same(caught, thrown) ? undefined : `rejected with ${describeError(caught)}, not the thrown value`,
        held ? "the lock is still held" : undefined,
      ].filter((p) => p !== undefined);
      print({ otel, operation: "withLock", value: label, problem: lockProblems.join("; ") || undefined });
    }
  } finally {
    await container.delete().catch(() => undefined);
  }
}

for (const otel of ["off", "on"] as const) {
  if (otel === "on") {
    trace.setGlobalTracerProvider(
      new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new InMemorySpanExporter())] }),
    );
    metrics.setGlobalMeterProvider(new MeterProvider());
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  }
  await Promise.all([consumer(otel), idempotentCalls(otel), optimisticAndLocks(otel)]);
}
print({ done: true });
