/**
 * The fault-placement explorer (docs/development.md, "Proving exactly-once"): instead of the faults
 * a test's author thought of, every single fault at every request of an operation, and a sample of
 * every pair.
 *
 * 1. Run the operation once with no fault and count its requests: N.
 * 2. For each fault kind and each k = 1..N+1, start from a fresh state, place exactly that fault on
 *    the k-th request, run the operation, and judge the outcome by the operation's contract, written
 *    once as `judge(state, result)`, which reads storage directly (not through the faults).
 * 3. Pairs of faults (k1 < k2, every pair of kinds), all of them or a seeded sample; the seed is
 *    printed so that a failing run can be replayed (`ASC_EXPLORE_SEED=…`).
 *
 * Requests are counted across every service the operation talks to (each has its own proxy in front
 * of Azurite, sharing one counter), in the order they reach the proxies.
 *
 * Environment: `ASC_EXPLORE_PAIRS=all` runs every pair instead of the sample (the exhaustive run, for
 * closing notes and after changing a write path); `ASC_EXPLORE_SEED=n` replays a sample.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { buildConnectionString, createFaultProxy, seededRandom } from "../../src/testing/index.js";
import type { FaultAction, FaultProxy } from "../../src/testing/index.js";
import { endpoints, quickSdkRetries } from "./storage.js";

/** The fault kinds every operation is explored with. */
export const FAULT_KINDS = {
  /** The service applied the request; the answer is lost on the way back (the SDK retries it). */
  drop: { type: "dropResponse" },
  /** 503 ServerBusy, the request never reached the service. */
  busy503: { type: "serverBusy" },
  /** The connection is cut before the request reached the service. */
  reset: { type: "reset" },
  /** The service applied the request, and the client hears 500 OperationTimedOut. */
  applied500: { type: "statusAfterApply", statusCode: 500, serviceCode: "OperationTimedOut" },
  /** No answer ever, and the service never saw the request: only a client-side time limit ends it. */
  hang: { type: "hang" },
  /** The service applied the request, and its answer never comes: only a client-side time limit ends it. */
  hangAfterApply: { type: "hang", afterApply: true },
} as const satisfies Record<string, FaultAction>;

export type FaultKind = keyof typeof FAULT_KINDS;
/** The kinds every operation is explored with by default: each ends with an answer or a cut connection. */
export const ALL_FAULT_KINDS: FaultKind[] = ["drop", "busy503", "reset", "applied500"];
/**
 * The kinds that never end by themselves: for operations whose every request runs under a
 * client-side time limit (`kinds: [...ALL_FAULT_KINDS, ...TIMEOUT_FAULT_KINDS]`). Each run costs
 * at least that limit.
 */
export const TIMEOUT_FAULT_KINDS: FaultKind[] = ["hang", "hangAfterApply"];

export type Service = "blob" | "queue" | "table" | "file";

/**
 * Where each service's proxy forwards to: `blobEndpoint` etc. Unset services go to the test run's
 * Azurite; `fileEndpoint` must be given for `"file"` (Azurite has no Azure Files: pass a Files
 * responder's `endpoint`, tests/support/files.ts).
 */
export type ExplorerTargets = Partial<Record<`${Service}Endpoint`, string>>;

/** How an operation reached its end: resolved with a value, or rejected. */
export type Settled<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

/** The contract's verdict on one run. */
export interface Verdict {
  /**
   * What the caller was told, in the contract's words: e.g. `applied`, `refused`, `unknown`. Counted
   * per operation in the table, so that "unknown" outcomes are measured, not guessed.
   */
  readonly outcome: string;
  /** Set when the contract is broken: what was stored against what the caller was told. */
  readonly violation?: string;
}

/** One request of a run, as the proxies saw it (in the order requests reached them), and the fault placed on it. */
export interface TracedRequest {
  /** Its position in the run, 1 for the first. */
  readonly k: number;
  /** `GET`, `PUT`, … */
  readonly method: string;
  /** Path and query. */
  readonly path: string;
  /** The fault placed on it, if one was. */
  readonly fault?: FaultKind;
}

/**
 * What a judge may use besides the result: every request of the run and the faults that fired (a
 * fault planned past the last request fires none). It lets a contract say, for example, that
 * "unknown" is allowed only when a fault hit the read that should have decided it.
 */
export interface RunTrace {
  readonly requests: readonly TracedRequest[];
  readonly fired: readonly TracedRequest[];
}

/** One operation, its start state and its contract. */
export interface ExploredOperation<S, T> {
  readonly name: string;
  /**
   * A fresh start state, made directly against storage (never through the faults). `via` is for
   * state that must live on the proxied clients (e.g. a lock handle whose release is under test):
   * its requests pass the proxies fault-free and are not counted.
   */
  setup(via: Via): Promise<S>;
  /**
   * The operation under test. Build its SDK clients on `via.connectionString`, which sends every
   * service through the explorer's proxies (quick SDK retries: `blobService(via.connectionString)` etc.
   * from tests/support/storage.ts). Background work it starts must be stopped before it resolves.
   */
  run(state: S, via: Via): Promise<T>;
  /** The contract: reads storage directly and judges what the caller was told (`trace`: what happened on the wire). */
  judge(state: S, result: Settled<T>, trace: RunTrace): Promise<Verdict>;
  /**
   * How long one run may take before it counts as a violation ("did not settle").
   * @default 20_000
   */
  readonly runTimeoutInMs?: number;
}

/** Where an operation under exploration sends its requests, and how its SDK clients retry. */
export interface Via {
  /** Every service through its proxy. */
  readonly connectionString: string;
  /** `on`: the SDK's own retries with quick delays; `off`: one try, so every fault reaches the library. */
  readonly sdkRetries: SdkRetries;
  /** Pipeline options for blob, queue and file clients: `blobService(via.connectionString, via.storageOptions)`. */
  readonly storageOptions: { readonly retryOptions: { readonly maxTries: number } };
  /** Options for table clients: `tableClient(name, via.connectionString, via.tableOptions)`. */
  readonly tableOptions: { readonly retryOptions: { readonly maxRetries: number } };
}

export type SdkRetries = "on" | "off";

/** Which faults to place. */
export interface ExploreOptions {
  /**
   * Run every placement with the SDK's own retries on (quick delays), off (one try), or both. With
   * them on, most single faults are absorbed by the SDK; with them off, each one reaches the library.
   * @default ["on", "off"]
   */
  readonly sdkRetries?: readonly SdkRetries[];
  /** @default {@link ALL_FAULT_KINDS} (add {@link TIMEOUT_FAULT_KINDS} for operations with client-side time limits) */
  readonly kinds?: readonly FaultKind[];
  /**
   * Pairs of faults: `false` for none, `"all"` for every one, or how many to sample (seeded).
   * `ASC_EXPLORE_PAIRS=all` turns any sample into every pair.
   * @default false
   */
  readonly pairs?: false | "all" | number;
  /**
   * Positions k run from 1 to N + `extraPositions` (faults make retries, so a pair's second fault may
   * land after the N-th request).
   * @default 1 for single faults, 2 for pairs
   */
  readonly extraPositions?: number;
}

/** One run's row. */
export interface ExplorerRun {
  readonly operation: string;
  /** `"none"`, a kind, or `"kind@k1+kind@k2"`. */
  readonly faults: string;
  readonly placement: readonly { readonly kind: FaultKind; readonly k: number }[];
  readonly requests: number;
  /** The faults that fired, with the requests they hit. */
  readonly fired?: readonly TracedRequest[];
  /** How long the operation took (setup and judging not counted). */
  readonly durationInMs?: number;
  readonly outcome: string;
  readonly violation?: string;
}

/** A summary row of the table: an operation under one fault kind (or pairs). */
interface SummaryRow {
  operation: string;
  faults: string;
  positions: Set<number>;
  runs: number;
  violations: number;
  outcomes: Map<string, number>;
}

/**
 * Starts one proxy per service in front of the test run's Azurite (or the endpoint `targets` names
 * for it), with one request counter shared between them. Use one explorer per test file; `close()` it
 * in `afterAll`.
 */
export async function createExplorer(
  title: string,
  services: readonly Service[] = ["blob", "queue", "table"],
  targets: ExplorerTargets = {},
) {
  let count = 0;
  let plan = new Map<number, FaultKind>();
  let traced: { k: number; method: string; path: string; fault?: FaultKind }[] = [];
  const proxies: FaultProxy[] = [];
  const endpointsVia: Partial<Record<`${Service}Endpoint`, string>> = {};
  for (const service of services) {
    const target = targets[`${service}Endpoint`] ?? (service === "file" ? undefined : endpoints()[service]);
    if (target === undefined) throw new Error('createExplorer: the "file" service needs `targets.fileEndpoint`.');
    const proxy = await createFaultProxy({ target });
    // The first rule only counts (it never fires); the others fire on the planned positions.
    proxy.addRule({
      action: { type: "reset" },
      when: ({ method, path }) => {
        count += 1;
        traced.push({ k: count, method, path });
        return false;
      },
    });
    for (const kind of Object.keys(FAULT_KINDS) as FaultKind[]) {
      proxy.addRule({
        action: FAULT_KINDS[kind],
        when: () => {
          if (plan.get(count) !== kind) return false;
          traced[traced.length - 1]!.fault = kind;
          return true;
        },
      });
    }
    proxies.push(proxy);
    endpointsVia[`${service}Endpoint`] = proxy.endpoint;
  }
  const connectionString = buildConnectionString(endpointsVia);
  const vias: Record<SdkRetries, Via> = {
    on: {
      connectionString,
      sdkRetries: "on",
      storageOptions: { retryOptions: quickSdkRetries.storage },
      tableOptions: { retryOptions: quickSdkRetries.tables },
    },
    off: {
      connectionString,
      sdkRetries: "off",
      storageOptions: { retryOptions: { maxTries: 1 } },
      tableOptions: { retryOptions: { maxRetries: 0 } },
    },
  };
  const runs: ExplorerRun[] = [];
  const seed = Number(process.env.ASC_EXPLORE_SEED ?? Math.floor(Math.random() * 2 ** 31));

  async function runOnce<S, T>(
    op: ExploredOperation<S, T>,
    via: Via,
    placement: readonly { kind: FaultKind; k: number }[],
  ): Promise<ExplorerRun> {
    const state = await op.setup(via);
    count = 0;
    traced = [];
    plan = new Map(placement.map(({ k, kind }) => [k, kind]));
    const limit = op.runTimeoutInMs ?? 20_000;
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const result = await Promise.race([
      op.run(state, via).then(
        (value): Settled<T> => ({ ok: true, value }),
        (error: unknown): Settled<T> => ({ ok: false, error }),
      ),
      new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), limit))),
    ]);
    clearTimeout(timer);
    const durationInMs = performance.now() - started;
    const requests = count;
    plan = new Map();
    const trace: RunTrace = { requests: traced, fired: traced.filter((r) => r.fault !== undefined) };
    const faults = placement.length === 0 ? "none" : placement.map((p) => `${p.kind}@${p.k}`).join("+");
    const verdict: Verdict =
      result === "timeout"
        ? { outcome: "hung", violation: `did not settle within ${limit} ms` }
        : await op.judge(state, result, trace);
    const operation = `${op.name}, SDK retries ${via.sdkRetries}`;
    const run: ExplorerRun = { operation, faults, placement, requests, fired: trace.fired, durationInMs, ...verdict };
    runs.push(run);
    return run;
  }

  /**
   * Explores one operation: the fault-free run, every single fault at every position, and pairs as
   * asked. Returns every run; the caller asserts `violationsOf(runs)` is empty.
   */
  async function explore<S, T>(op: ExploredOperation<S, T>, options: ExploreOptions = {}): Promise<ExplorerRun[]> {
    const kinds = options.kinds ?? ALL_FAULT_KINDS;
    const mine: ExplorerRun[] = [];
    for (const mode of options.sdkRetries ?? (["on", "off"] as const)) {
      const via = vias[mode];
      const clean = await runOnce(op, via, []);
      mine.push(clean);
      const n = clean.requests;
      for (const kind of kinds) {
        for (let k = 1; k <= n + (options.extraPositions ?? 1); k++) mine.push(await runOnce(op, via, [{ kind, k }]));
      }
      const pairsOption = process.env.ASC_EXPLORE_PAIRS === "all" && options.pairs ? "all" : (options.pairs ?? false);
      if (pairsOption === false) continue;
      const last = n + (options.extraPositions ?? 2);
      const all: { kind: FaultKind; k: number }[][] = [];
      for (let k1 = 1; k1 <= last; k1++) {
        for (let k2 = k1 + 1; k2 <= last; k2++) {
          for (const a of kinds)
            for (const b of kinds)
              all.push([
                { kind: a, k: k1 },
                { kind: b, k: k2 },
              ]);
        }
      }
      for (const placement of pairsOption === "all" ? all : sample(all, pairsOption, seed)) {
        mine.push(await runOnce(op, via, placement));
      }
    }
    return mine;
  }

  /**
   * For operations whose every request runs under a client-side time limit: the four default kinds
   * with the SDK's retries on and off (and `pairs`), then the hangs once, with them off (the SDK
   * does not retry a request that never ends).
   */
  async function exploreWithHangs<S, T>(
    op: ExploredOperation<S, T>,
    pairs: ExploreOptions["pairs"] = false,
  ): Promise<ExplorerRun[]> {
    return [
      ...(await explore(op, { kinds: ALL_FAULT_KINDS, pairs })),
      ...(await explore(op, { kinds: TIMEOUT_FAULT_KINDS, sdkRetries: ["off"] })),
    ];
  }

  /** The table: operations x fault kinds, positions, runs, outcomes and violations, as Markdown. */
  function table(): string {
    const rows = new Map<string, SummaryRow>();
    for (const run of runs) {
      const faults =
        run.placement.length === 0 ? "none" : run.placement.length === 1 ? run.placement[0]!.kind : "pairs";
      const key = `${run.operation}\u0000${faults}`;
      const row = rows.get(key) ?? {
        operation: run.operation,
        faults,
        positions: new Set<number>(),
        runs: 0,
        violations: 0,
        outcomes: new Map<string, number>(),
      };
      for (const p of run.placement) row.positions.add(p.k);
      row.runs += 1;
      if (run.violation) row.violations += 1;
      row.outcomes.set(run.outcome, (row.outcomes.get(run.outcome) ?? 0) + 1);
      rows.set(key, row);
    }
    const lines = [
      `### ${title}`,
      "",
      `pairs seed: ${seed}${process.env.ASC_EXPLORE_PAIRS === "all" ? " (every pair)" : ""}`,
      "",
      "| operation | faults | positions | runs | outcomes | violations |",
      "| --- | --- | --- | --- | --- | --- |",
    ];
    for (const row of rows.values()) {
      const positions = row.positions.size === 0 ? "-" : `1..${Math.max(...row.positions)}`;
      const outcomes = [...row.outcomes].map(([o, c]) => `${o} ${c}`).join(", ");
      lines.push(`| ${row.operation} | ${row.faults} | ${positions} | ${row.runs} | ${outcomes} | ${row.violations} |`);
    }
    return lines.join("\n");
  }

  /** Prints the table and writes it to `.test-results/explorer/<file>.md`; stops the proxies. */
  async function close(file: string): Promise<void> {
    const text = table();
    mkdirSync(".test-results/explorer", { recursive: true });
    writeFileSync(`.test-results/explorer/${file}.md`, `${text}\n`);
    process.stdout.write(`\n${text}\n\n`);
    await Promise.all(proxies.map((p) => p.close()));
  }

  return { explore, exploreWithHangs, table, close, seed };
}

/** The runs whose contract was broken, each as one line that says how to replay it. */
export function violationsOf(runs: readonly ExplorerRun[]): string[] {
  return runs
    .filter((r) => r.violation !== undefined)
    .map((r) => `${r.operation} [${r.faults}] (${r.requests} requests): ${r.violation}`);
}

function sample<T>(items: readonly T[], count: number, seed: number): T[] {
  if (count >= items.length) return [...items];
  const random = seededRandom(seed);
  const pool = [...items];
  for (let i = 0; i < count; i++) {
    const j = i + Math.floor(random() * (pool.length - i));
    [pool[i], pool[j]] = [pool[j]!, pool[i]!];
  }
  return pool.slice(0, count);
}

/** A short label for a rejection, for the table's outcome column: its name and code. */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return typeof error;
  const code = (error as { code?: unknown }).code;
  return typeof code !== "string" || code === error.name ? error.name : `${error.name} ${code}`;
}
