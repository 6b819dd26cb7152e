/**
 * Telemetry can never change an outcome (issue 21): whatever the application's OpenTelemetry
 * set-up throws, and wherever, each instrumented helper gives back what the operation gave, runs
 * the operation once, and logs the failure once per part. The explorer
 * (tests/integration/explorer/telemetry.test.ts) checks the same of every operation against
 * Azurite; these are the cases a real SDK does not produce (a context manager that never calls
 * back, or calls back twice).
 */
import { AzureLogger, setLogLevel } from "@azure/logger";
import { context, metrics, ROOT_CONTEXT, trace, type Context, type ContextManager } from "@opentelemetry/api";
import { BasicTracerProvider } from "@opentelemetry/sdk-trace-base";
import { resetTelemetryFailures, telemetryFailuresCaught } from "../../../src/observability/guard.js";
import { finishUpdate, noteConflict, startUpdate } from "../../../src/optimistic/telemetry.js";
import { noteLeaderChange, noteLockEnded, noteRenewalFailed, traceAcquire } from "../../../src/lease/telemetry.js";
import { traceBatch } from "../../../src/tables/telemetry.js";
import { traceMessage } from "../../../src/queue/telemetry.js";
import { loadOpenTelemetry, resetOpenTelemetry } from "../../../src/observability/otel.js";
import { detached, openScope, runInScope } from "../../../src/observability/scope.js";

const logged: string[] = [];
const originalLog = AzureLogger.log;
beforeAll(() => {
  setLogLevel("warning");
  AzureLogger.log = (...args: unknown[]) => void logged.push(args.map(String).join(" "));
});
afterAll(() => {
  AzureLogger.log = originalLog;
  setLogLevel();
});
beforeEach(async () => {
  logged.length = 0;
  resetTelemetryFailures();
  resetOpenTelemetry();
  await loadOpenTelemetry();
});
afterEach(() => {
  trace.disable();
  metrics.disable();
  context.disable();
});

const nullProto = () => Object.create(null) as object;
/** An object every method of which throws a null-prototype object (but `disable`, so that the test can unregister it). */
const throwingEverything = <T extends object>(): T =>
  new Proxy({} as T, {
    get: (_, key) =>
      key === "disable"
        ? () => undefined
        : () => {
            throw nullProto();
          },
  });

const result = { written: true, attempts: 1, coalesced: 1, recoveredLostResponse: false };
const lock = { leasable: { description: "blob 'c/lock'" }, options: { holderName: "me" } };

/** Every helper, each with an operation whose answer (or error) must come back unchanged. */
async function everyHelper() {
  const scope = startUpdate({ description: "blob 'c/b'" });
  noteConflict([{ settings: { observation: scope } }], 1, 10);
  expect(await finishUpdate(scope, Promise.resolve(result))).toBe(result);
  const failure = new Error("the update's own failure");
  await expect(finishUpdate(startUpdate({ description: "blob 'c/b'" }), Promise.reject(failure))).rejects.toBe(failure);
  const handle = { fencingToken: 3 };
  expect(await traceAcquire(lock, true, undefined, () => Promise.resolve(handle))).toBe(handle);
  await expect(traceAcquire(lock, false, undefined, () => Promise.reject(failure))).rejects.toBe(failure);
  const batch = { ok: true, transactions: [{ status: "committed", actionIndexes: [0, 1] }] };
  expect(
    await traceBatch({ url: "http://127.0.0.1:10002/devstoreaccount1", tableName: "t" }, 1, 2, undefined, () =>
      Promise.resolve(batch),
    ),
  ).toBe(batch);
  let processed = 0;
  await traceMessage("jobs", { messageId: "m1", dequeueCount: 1 }, undefined, async () => void processed++, 0);
  expect(processed).toBe(1);
  noteLockEnded({ description: "blob 'c/lock'" }, new Date(), { reason: "renewal-rejected", error: nullProto() });
  noteLockEnded({ description: "blob 'c/lock'" }, new Date());
  noteRenewalFailed({ description: "blob 'c/lock'" }, nullProto());
  noteLeaderChange({ description: "blob 'c/lock'" }, "me", "elected");
  let calls = 0;
  expect(detached(() => ++calls)()).toBe(1);
  expect(runInScope(openScope("asc.test"), () => ++calls)).toBe(2);
}

it("a tracer provider, a meter provider and a context manager that throw on every call: outcomes unchanged, logged once each", async () => {
  trace.setGlobalTracerProvider(throwingEverything());
  metrics.setGlobalMeterProvider(throwingEverything());
  context.setGlobalContextManager(throwingEverything());
  await everyHelper();
  await everyHelper();
  expect(telemetryFailuresCaught()).toBeGreaterThan(0);
  const lines = logged.filter((line) => line.includes("OpenTelemetry:"));
  expect(lines.length).toBeGreaterThan(0);
  expect(new Set(lines).size).toBe(lines.length); // once per part
  expect(lines.join("\n")).toMatch(/no outcome changed/);
});

it("spans whose every method throws, and instruments that throw: outcomes unchanged", async () => {
  const provider = new BasicTracerProvider();
  const tracer = provider.getTracer("t");
  trace.setGlobalTracerProvider({
    getTracer: () => ({
      startSpan: (...args: Parameters<typeof tracer.startSpan>) => {
        tracer.startSpan(...args).end();
        return throwingEverything();
      },
      startActiveSpan: () => {
        throw new Error("not used");
      },
    }),
  });
  metrics.setGlobalMeterProvider({
    getMeter: () =>
      new Proxy({} as never, {
        get: () => () => throwingEverything(),
      }),
  });
  await everyHelper();
  expect(telemetryFailuresCaught()).toBeGreaterThan(0);
});

/** A context manager (over the default one's behaviour) whose `with` misbehaves as told. */
function contextManager(withImpl: (fn: () => unknown) => unknown): ContextManager {
  const manager = {
    active: () => ROOT_CONTEXT,
    with: (_: Context, fn: () => unknown) => withImpl(fn),
    bind: (_: Context, target: unknown) => target,
    enable: () => manager,
    disable: () => manager,
  };
  return manager as unknown as ContextManager;
}

it.each([
  [
    "throws before calling back",
    (_fn: () => unknown) => {
      throw nullProto();
    },
  ],
  [
    "throws after calling back",
    (fn: () => unknown) => {
      fn();
      throw new Error("after");
    },
  ],
  ["never calls back", (_fn: () => unknown) => "not the function's answer"],
  ["calls back twice", (fn: () => unknown) => (fn(), fn())],
  ["answers something else", (fn: () => unknown) => (fn(), "not the function's answer")],
])("a context manager whose with() %s: the operation runs once, with its own answer and error", async (_, withImpl) => {
  trace.setGlobalTracerProvider(new BasicTracerProvider());
  context.setGlobalContextManager(contextManager(withImpl));
  const scope = openScope("asc.test");
  expect(scope?.context).toBeDefined();
  let calls = 0;
  expect(runInScope(scope, () => ++calls)).toBe(1);
  expect(calls).toBe(1);
  const own = nullProto();
  let caught: unknown;
  try {
    runInScope(scope, () => {
      calls++;
      throw own;
    });
  } catch (error) {
    caught = error;
  }
  expect(caught === own).toBe(true);
  expect(calls).toBe(2);
  const handle = { fencingToken: 1 };
  expect(await traceAcquire(lock, true, undefined, () => Promise.resolve(handle))).toBe(handle);
});
