/**
 * The hostile-values explorer (issue 21): whatever a handler, `fn`, `mutate` or lock callback
 * throws (null, undefined, numbers, strings, Symbols, BigInts, functions, objects without a
 * prototype, with throwing getters or a throwing toString, revoked Proxies, circular objects:
 * tests/support/hostile.ts), the process survives and the outcome is an ordinary failure: the
 * consumer retries or poisons the message with a reason that describes the value; `idempotent()`,
 * `optimisticUpdate` and `withLock` reject with that very value and leave nothing claimed, written
 * or held. With OpenTelemetry off, then on.
 *
 * The runs happen in a process of their own (workers/hostile-values.ts) that installs no handler
 * for unhandled rejections: a crash is seen as its exit code (r20: a handler throwing a
 * null-prototype object ended the process once OpenTelemetry was on). Prints its table and writes
 * it to .test-results/explorer/hostile-values.md.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { spawnWorker, type WorkerProcess } from "../../support/processes.js";
import { hostileValues } from "../../support/hostile.js";

interface Run {
  readonly otel: "off" | "on";
  readonly operation: string;
  readonly value: string;
  readonly problem?: string;
}

const script = fileURLToPath(new URL("./workers/hostile-values.ts", import.meta.url));
let worker: WorkerProcess;
let exit: { code: number | null; signal: NodeJS.Signals | null };
let runs: Run[] = [];

beforeAll(async () => {
  worker = spawnWorker(script);
  exit = await worker.exited;
  runs = worker.messages.filter((m): m is Run => typeof (m as Run).operation === "string");
}, 180_000);

afterAll(() => {
  const rows = new Map<
    string,
    { operation: string; otel: string; values: Set<string>; runs: number; violations: number }
  >();
  for (const run of runs) {
    const key = `${run.operation}\u0000${run.otel}`;
    const row = rows.get(key) ?? {
      operation: run.operation,
      otel: run.otel,
      values: new Set(),
      runs: 0,
      violations: 0,
    };
    row.values.add(run.value);
    row.runs += 1;
    if (run.problem) row.violations += 1;
    rows.set(key, row);
  }
  const text = [
    "### Hostile values: what code throws at the library (a process of its own)",
    "",
    `process: exit code ${exit?.code ?? "-"}${exit?.signal ? `, signal ${exit.signal}` : ""}`,
    "",
    "| operation | OpenTelemetry | hostile values | runs | violations |",
    "| --- | --- | --- | --- | --- |",
    ...[...rows.values()].map((r) => `| ${r.operation} | ${r.otel} | ${r.values.size} | ${r.runs} | ${r.violations} |`),
  ].join("\n");
  mkdirSync(".test-results/explorer", { recursive: true });
  writeFileSync(".test-results/explorer/hostile-values.md", `${text}\n`);
  process.stdout.write(`\n${text}\n\n`);
});

it("the process survives every hostile value, with OpenTelemetry off and on", () => {
  if (exit.code !== 0 || !worker.messages.some((m) => (m as { done?: boolean }).done)) {
    throw new Error(
      `the worker ended with exit code ${exit.code} (signal ${exit.signal}); stderr:\n${worker.stderr()}`,
    );
  }
});

it("every hostile value is an ordinary failure: described, poisoned with a reason, nothing left claimed, written or held", () => {
  const problems = runs
    .filter((r) => r.problem)
    .map((r) => `${r.operation} [OpenTelemetry ${r.otel}] ${r.value}: ${r.problem}`);
  expect(problems).toEqual([]);
  expect(runs).toHaveLength(hostileValues().length * 4 * 2); // values x operations x (off, on)
});

it("r20: with OpenTelemetry on, a handler throwing a null-prototype object is poisoned with a reason, and the process lives on", () => {
  const run = runs.find(
    (r) => r.otel === "on" && r.operation === "queue consumer" && r.value === "a null-prototype object",
  );
  expect(run).toBeDefined();
  expect(run?.problem).toBeUndefined();
  expect(exit.code).toBe(0);
});
