/**
 * Fault-placement explorer over the lease lock and the fenced table writes
 * (tests/support/explorer.ts): every fault kind (the four, and with SDK retries off the two hangs)
 * at every request, SDK retries on and off, and a seeded sample of pairs. Each run is judged by its
 * contract against storage read directly:
 *
 * - acquire / tryAcquire (also the same lock taken again, writing its record on the ETag it
 *   remembers, and so again after another client wrote a newer record): told "held" => the lease is ours at the service (a renew with the handle's
 *   lease id succeeds) and the fencing token advanced exactly once (recorded = handle's = start + 1);
 *   told refused or failed => the token never went back, and no lease of ours is left behind. One
 *   may be left behind only when a pair of faults hit both tries of giving it back; it then expires
 *   within the lease duration (15 s): counted as its own outcome, and never allowed for one fault.
 * - acquire while another client holds the lock: never told "held"; the other keeps its lease.
 * - lifecycle (acquire, a renewal, release): held until released (one fault never costs the lock),
 *   then the lease is free; a failed release leaves it ours, to expire.
 * - break: told broken => nobody holds the lease.
 * - the same contracts (acquire, acquire while another holds it, the lifecycle) with the lock's
 *   requests sent through an adaptive rate limiter (issue 26): its waits, records and cuts (an
 *   injected 503 is a throttle to it) change nothing of them.
 * - fenced writes (update with the caller's ETag, upsert, create, delete): told done => applied
 *   exactly once, stamped with the holder's token; told failed => untouched; told unknown
 *   (FencedWriteOutcomeUnknownError) => either, counted. Never a stale token: a write by a holder
 *   whose token is lower than the entity's is refused, whatever the faults.
 */
import { randomUUID } from "node:crypto";
import type { ContainerClient } from "@azure/storage-blob";
import type { TableClient } from "@azure/data-tables";
import {
  blobLeasable,
  blobLock,
  guardTable,
  isFencedWriteOutcomeUnknownError,
  isFencedWriteRejectedError,
  isLockTimeoutError,
  LeaseLock,
  LOCK_METADATA,
  readLockRecord,
  type Leasable,
  type LeaseLockOptions,
  type LockHandle,
} from "../../../src/lease/index.js";
import { statusOf } from "../../../src/error-codes.js";
import { AdaptiveRateLimiter } from "../../../src/throttling/index.js";
import {
  ALL_FAULT_KINDS,
  createExplorer,
  describeError,
  TIMEOUT_FAULT_KINDS,
  violationsOf,
  type ExploredOperation,
  type ExplorerRun,
  type Settled,
  type Verdict,
  type Via,
} from "../../support/explorer.js";
import { blobService, tableClient, uniqueName } from "../../support/storage.js";

/**
 * Short time limits, so that a hang costs little, yet long enough that a busy machine (the suite
 * runs beside other work) does not cut off answers that do come: such a cut is a fault of its own.
 */
// Generous enough that a loaded CI machine answers a healthy request within it (at 400 ms, a release retried after
// an applied 500 timed out under load and read as "release failed under one fault"); a hang still costs just this.
const REQUEST_TIMEOUT_IN_MS = 1_000;
/** The lease is the shortest the service grants. */
const LOCK_OPTIONS: LeaseLockOptions = {
  durationInSeconds: 15,
  requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS,
  pollIntervalInMs: 20,
};
const START_TOKEN = 3;
/** Single faults: each kind at each position, with SDK retries on (the four kinds) and off (and the hangs). */
const SINGLES = [
  { sdkRetries: ["on"] as const, kinds: ALL_FAULT_KINDS },
  { sdkRetries: ["off"] as const, kinds: [...ALL_FAULT_KINDS, ...TIMEOUT_FAULT_KINDS] },
];
const PAIRS = 4;
/** Every pair (`ASC_EXPLORE_PAIRS=all`) takes long: an hour at most then, five minutes otherwise. */
const TIME_LIMIT_IN_MS = process.env.ASC_EXPLORE_PAIRS === "all" ? 3_600_000 : 300_000;

type Explorer = Awaited<ReturnType<typeof createExplorer>>;
/** Three explorers (each its own proxies and request counter), so that the three groups run side by side. */
let acquireExplorer: Explorer;
let holdExplorer: Explorer;
let limitedExplorer: Explorer;
let fenceExplorer: Explorer;
let container: ContainerClient;
let table: TableClient;
let fenceHolder: LockHandle;
let serial = 0;

beforeAll(async () => {
  acquireExplorer = await createExplorer("Lease locks: acquiring", ["blob"]);
  holdExplorer = await createExplorer("Lease locks: waiting, holding, releasing, breaking", ["blob"]);
  limitedExplorer = await createExplorer("Lease locks with the adaptive limiter", ["blob"]);
  fenceExplorer = await createExplorer("Fenced table writes", ["table"]);
  container = blobService().getContainerClient(uniqueName("explorelk"));
  await container.create();
  table = tableClient(uniqueName("explorelk"));
  await table.createTable();
  // One holder for every fenced-write run: its lease renews in the background, directly.
  fenceHolder = await blobLock(container, "fence-holder", { durationInSeconds: 60 }).acquire();
});
afterAll(async () => {
  await acquireExplorer.close("locks-acquire");
  await holdExplorer.close("locks-hold");
  await limitedExplorer.close("locks-limited");
  await fenceExplorer.close("locks-fenced-writes");
  await fenceHolder.release();
  await table.deleteTable();
  await container.delete();
});

/** Runs each operation with single faults and a sample of pairs; returns every run. */
async function exploreAll(
  explorer: Explorer,
  operations: readonly ExploredOperation<never, never>[],
): Promise<ExplorerRun[]> {
  const runs: ExplorerRun[] = [];
  for (const op of operations) {
    for (const singles of SINGLES) runs.push(...(await explorer.explore(op, { ...singles, pairs: PAIRS })));
  }
  return runs;
}

/** Contract breaks, plus outcomes allowed under pairs of faults but not under a single one. */
function problems(runs: readonly ExplorerRun[], notForOneFault: RegExp): string[] {
  const single = runs
    .filter((r) => r.placement.length <= 1 && notForOneFault.test(r.outcome))
    .map((r) => `${r.operation} [${r.faults}]: ${r.outcome} under one fault`);
  return [...violationsOf(runs), ...single];
}

// ---------------------------------------------------------------------------------------------
// The lock

interface LockState {
  readonly name: string;
  /** The lease id of another client holding the lock, if one does. */
  readonly other?: string;
}

const lockVia = (via: Via, name: string, options: LeaseLockOptions = {}) =>
  blobLock(blobService(via.connectionString, via.storageOptions).getContainerClient(container.containerName), name, {
    ...LOCK_OPTIONS,
    ...options,
  });

async function stored(name: string) {
  const properties = await container.getBlockBlobClient(name).getProperties();
  return { leased: properties.leaseState === "leased", token: readLockRecord(properties.metadata ?? {}).fencingToken };
}

/** Whether `leaseId` holds the lease now (a renew with it succeeds; anything else is refused with 409). */
async function holds(name: string, leaseId: string): Promise<boolean> {
  return container
    .getBlockBlobClient(name)
    .getBlobLeaseClient(leaseId)
    .renewLease()
    .then(
      () => true,
      (error: unknown) => (statusOf(error) === 409 ? false : Promise.reject(error)),
    );
}

function lockState({ exists = true, heldByOther = false } = {}) {
  return async (): Promise<LockState> => {
    const name = `lock-${(serial += 1)}`;
    if (!exists) return { name };
    const blob = container.getBlockBlobClient(name);
    await blob.upload("", 0, { metadata: { [LOCK_METADATA.fencingToken]: String(START_TOKEN) } });
    if (!heldByOther) return { name };
    const other = randomUUID();
    await blob.getBlobLeaseClient(other).acquireLease(15);
    return { name, other };
  };
}

/** The acquire contract (see the module's description); releases what it was given. */
async function judgeAcquire(
  state: LockState,
  result: Settled<LockHandle | undefined>,
  start: number,
): Promise<Verdict> {
  const now = await stored(state.name).catch(() => ({ leased: false, token: 0 }));
  if (result.ok && result.value) {
    const handle = result.value;
    const ours = await holds(state.name, handle.leaseId);
    await handle.release().catch(() => undefined); // cleanup, not part of the contract
    if (!ours) return { outcome: "held", violation: "told held, but the lease is not ours at the service" };
    if (handle.fencingToken !== start + 1 || now.token !== start + 1)
      return {
        outcome: "held",
        violation: `token ${start} -> recorded ${now.token}, handle ${handle.fencingToken}: not advanced exactly once`,
      };
    return { outcome: "held" };
  }
  const outcome = result.ok ? "refused" : `failed: ${describeError(result.error)}`;
  if (now.token < start) return { outcome, violation: `the token went back: ${start} -> ${now.token}` };
  // Nobody else takes this lock, so a lease on it is one of ours that was not given back.
  return now.leased ? { outcome: `${outcome}; lease left to expire (<= 15 s)` } : { outcome };
}

const acquireFree = (exists: boolean): ExploredOperation<LockState, LockHandle> => ({
  name: exists ? "acquire" : "acquire (creates the lock blob)",
  setup: lockState({ exists }),
  run: (state, via) => lockVia(via, state.name).acquire({ timeoutInMs: 5_000 }),
  judge: (state, result) => judgeAcquire(state, result, exists ? START_TOKEN : 0),
});

const tryAcquireFree: ExploredOperation<LockState, LockHandle | undefined> = {
  name: "tryAcquire",
  setup: lockState(),
  run: (state, via) => lockVia(via, state.name).tryAcquire(),
  async judge(state, result) {
    const verdict = await judgeAcquire(state, result, START_TOKEN);
    // Nobody holds it: "someone else holds it" is a false answer.
    return result.ok && !result.value
      ? { ...verdict, violation: verdict.violation ?? "told held by another; it was free" }
      : verdict;
  },
};

const acquireHeld: ExploredOperation<LockState, LockHandle> = {
  name: "acquire (held by another client)",
  setup: lockState({ heldByOther: true }),
  run: (state, via) => lockVia(via, state.name, { pollIntervalInMs: 50 }).acquire({ timeoutInMs: 150 }),
  async judge(state, result) {
    const otherHolds = await holds(state.name, state.other!);
    const now = await stored(state.name);
    await container.getBlockBlobClient(state.name).getBlobLeaseClient(state.other).releaseLease();
    if (result.ok) {
      await result.value.release().catch(() => undefined);
      return { outcome: "held", violation: "told held while another client held the lease" };
    }
    const outcome = isLockTimeoutError(result.error) ? "timed out" : `failed: ${describeError(result.error)}`;
    if (!otherHolds) return { outcome, violation: "the other client lost its lease" };
    if (now.token !== START_TOKEN) return { outcome, violation: `the token moved: ${START_TOKEN} -> ${now.token}` };
    return { outcome };
  },
};

/** A lock whose leasable can be pointed at another client: warmed up directly, then run through the faults. */
interface WarmLock extends LockState {
  readonly lock: LeaseLock;
  readonly through: { inner: Leasable };
  /** The token recorded before the explored acquire. */
  readonly start: number;
}

/**
 * The same `LeaseLock` taken again: its own latest record makes the record write conditional on
 * the ETag it remembers, without a read. With `newerRecord`, another client took the lock in
 * between and wrote a newer record, so that remembered ETag is stale (the write is refused with 412
 * and the record read after the acquire).
 */
const acquireAgain = (newerRecord: boolean): ExploredOperation<WarmLock, LockHandle> => ({
  name: newerRecord ? "acquire again (another client wrote since)" : "acquire again (same lock, no read)",
  async setup() {
    const state = await lockState()();
    const through = { inner: blobLeasable(container, state.name) };
    const forward = <K extends keyof Leasable>(key: K) =>
      ((...args: unknown[]) => (through.inner[key] as (...a: unknown[]) => unknown)(...args)) as Leasable[K];
    const leasable: Leasable = {
      description: through.inner.description,
      finiteDurations: true,
      conditionalMetadataWrites: true,
      acquire: forward("acquire"),
      renew: forward("renew"),
      release: forward("release"),
      change: forward("change"),
      breakLease: forward("breakLease"),
      getProperties: forward("getProperties"),
      setMetadata: forward("setMetadata"),
      createIfMissing: forward("createIfMissing"),
    };
    const lock = new LeaseLock(leasable, LOCK_OPTIONS);
    await (await lock.acquire()).release();
    if (newerRecord) await (await blobLock(container, state.name, LOCK_OPTIONS).acquire()).release();
    return { ...state, lock, through, start: (await stored(state.name)).token };
  },
  run: (state, via) => {
    state.through.inner = blobLeasable(
      blobService(via.connectionString, via.storageOptions).getContainerClient(container.containerName),
      state.name,
    );
    return state.lock.acquire({ timeoutInMs: 5_000 });
  },
  judge: (state, result) => judgeAcquire(state, result, state.start),
});

interface Lifecycle {
  readonly handle: LockHandle;
  /** The handle's status once a renewal succeeded (or the lock was lost). */
  readonly statusBeforeRelease: string;
  readonly releaseError?: unknown;
}

/** Acquire, hold until one renewal succeeded, release: the renewal and the release under faults. */
const lifecycleWith = (rateLimiter?: () => AdaptiveRateLimiter): ExploredOperation<LockState, Lifecycle> => ({
  name: `acquire, renew, release${rateLimiter ? ", adaptive limiter" : ""}`,
  setup: lockState(),
  async run(state, via) {
    const inner = blobLeasable(
      blobService(via.connectionString, via.storageOptions).getContainerClient(container.containerName),
      state.name,
    );
    let renewed = 0;
    const counting = {
      ...inner,
      renew: (id: string, o?: object) => inner.renew(id, o).then(() => void (renewed += 1)),
    };
    // The guard 1 s after the last renewal sent, a renewal every 100 ms: a failed one is soon tried again.
    const lock = new LeaseLock(counting, {
      ...LOCK_OPTIONS,
      safetyMarginInMs: 14_000,
      renewIntervalInMs: 100,
      ...(rateLimiter ? { rateLimiter: rateLimiter() } : {}),
    });
    const handle = await lock.acquire({ timeoutInMs: 5_000 });
    while (renewed < 1 && handle.status === "held") await new Promise((resolve) => setTimeout(resolve, 10));
    const statusBeforeRelease = handle.status;
    const releaseError = await handle.release().then(
      () => undefined,
      (error: unknown) => error,
    );
    return { handle, statusBeforeRelease, releaseError };
  },
  async judge(state, result) {
    if (!result.ok) return judgeAcquire(state, result, START_TOKEN);
    const { handle, statusBeforeRelease, releaseError } = result.value;
    const now = await stored(state.name);
    if (now.token !== START_TOKEN + 1) return { outcome: "held", violation: `token ${START_TOKEN} -> ${now.token}` };
    if (statusBeforeRelease !== "held") return { outcome: "lost" };
    if (releaseError !== undefined) {
      const ours = now.leased && (await holds(state.name, handle.leaseId));
      return { outcome: `release failed: ${describeError(releaseError)}; lease ${ours ? "left to expire" : "free"}` };
    }
    return now.leased
      ? { outcome: "released", violation: "told released, but the lease is still held" }
      : { outcome: "released" };
  },
});
const lifecycle = lifecycleWith();

/** A fresh adaptive limiter per run (issue 26); its high floor keeps the waits after an injected 503 short. */
const freshLimiter = () => new AdaptiveRateLimiter({ minRatePerSec: 200 });

const limitedAcquire: ExploredOperation<LockState, LockHandle> = {
  ...acquireFree(true),
  name: "acquire, adaptive limiter",
  run: (state, via) => lockVia(via, state.name, { rateLimiter: freshLimiter() }).acquire({ timeoutInMs: 5_000 }),
};

const limitedAcquireHeld: ExploredOperation<LockState, LockHandle> = {
  ...acquireHeld,
  name: "acquire (held by another client), adaptive limiter",
  run: (state, via) =>
    lockVia(via, state.name, { pollIntervalInMs: 50, rateLimiter: freshLimiter() }).acquire({ timeoutInMs: 150 }),
};

const breakLock: ExploredOperation<LockState, number> = {
  name: "break",
  setup: lockState({ heldByOther: true }),
  run: (state, via) => lockVia(via, state.name).break({ breakPeriodInSeconds: 0 }),
  async judge(state, result) {
    const now = await stored(state.name);
    if (!result.ok) return { outcome: `failed: ${describeError(result.error)}` };
    return now.leased ? { outcome: "broken", violation: "told broken, but the lease is held" } : { outcome: "broken" };
  },
};

/** Outcomes allowed under a pair of faults but never under one: a lease left behind, a lost lock, a failed release. */
const NOT_FOR_ONE_FAULT = /left to expire|lost|release failed/;

it.concurrent(
  "the lock: acquire (the lock blob there or missing), tryAcquire",
  async () => {
    const runs = await exploreAll(acquireExplorer, [
      acquireFree(true),
      acquireFree(false),
      tryAcquireFree,
      acquireAgain(false),
      acquireAgain(true),
    ] as unknown as ExploredOperation<never, never>[]);
    expect(problems(runs, NOT_FOR_ONE_FAULT)).toEqual([]);
  },
  TIME_LIMIT_IN_MS,
);

it.concurrent(
  "the lock: acquire while another client holds it, renew and release, break",
  async () => {
    const runs = await exploreAll(holdExplorer, [acquireHeld, lifecycle, breakLock] as unknown as ExploredOperation<
      never,
      never
    >[]);
    expect(problems(runs, NOT_FOR_ONE_FAULT)).toEqual([]);
  },
  TIME_LIMIT_IN_MS,
);

it.concurrent(
  "the lock with the adaptive limiter: acquire, acquire while another client holds it, renew and release",
  async () => {
    const runs = await exploreAll(limitedExplorer, [
      limitedAcquire,
      limitedAcquireHeld,
      lifecycleWith(freshLimiter),
    ] as unknown as ExploredOperation<never, never>[]);
    expect(problems(runs, NOT_FOR_ONE_FAULT)).toEqual([]);
  },
  TIME_LIMIT_IN_MS,
);

// ---------------------------------------------------------------------------------------------
// Fenced table writes

interface EntityState {
  readonly rowKey: string;
  /** The entity's value before the write; undefined when absent. */
  readonly start: number | undefined;
  /** The fencing token it carries. */
  readonly startToken: number;
  /** The ETag of the caller's own read, when it read. */
  readonly etag?: string;
}

type Stored = { value: number | undefined; token: number | undefined; writeId: string | undefined };

async function storedEntity(rowKey: string): Promise<Stored> {
  try {
    const entity = await table.getEntity<{ value: number; lockFencingToken: number; lockWriteId: string }>("p", rowKey);
    return { value: entity.value, token: entity.lockFencingToken, writeId: entity.lockWriteId };
  } catch (error) {
    if (statusOf(error) === 404) return { value: undefined, token: undefined, writeId: undefined };
    throw error;
  }
}

function entityState({ start, token }: { start: number | undefined; token?: "ours" | "later" }) {
  return async (): Promise<EntityState> => {
    const rowKey = `e-${(serial += 1)}`;
    const startToken =
      token === "later" ? fenceHolder.fencingToken! + 1 : token === "ours" ? fenceHolder.fencingToken! : 0;
    if (start === undefined) return { rowKey, start, startToken };
    await table.createEntity({ partitionKey: "p", rowKey, value: start, lockFencingToken: startToken });
    const read = await table.getEntity("p", rowKey);
    return { rowKey, start, startToken, etag: read.etag };
  };
}

const guardedVia = (via: Via) =>
  guardTable(tableClient(table.tableName, via.connectionString, via.tableOptions), fenceHolder, {
    requestTimeoutInMs: REQUEST_TIMEOUT_IN_MS,
  });

/** `expected`: the value a write stores (undefined: a delete). */
function judgeWrite(expected: number | undefined) {
  return async (state: EntityState, result: Settled<unknown>): Promise<Verdict> => {
    const now = await storedEntity(state.rowKey);
    const token = fenceHolder.fencingToken!;
    const untouched = now.value === state.start && (now.value === undefined || now.token === state.startToken);
    const applied = expected === undefined ? now.value === undefined : now.value === expected && now.token === token;
    if (now.token !== undefined && now.token < state.startToken)
      return { outcome: "any", violation: `the entity's token went back: ${state.startToken} -> ${now.token}` };
    if (result.ok)
      return applied
        ? { outcome: "written" }
        : { outcome: "written", violation: `told written; stored ${JSON.stringify(now)}` };
    if (isFencedWriteOutcomeUnknownError(result.error))
      return applied || untouched
        ? { outcome: "unknown" }
        : { outcome: "unknown", violation: `neither applied nor untouched: ${JSON.stringify(now)}` };
    const outcome = `failed: ${describeError(result.error)}`;
    return untouched ? { outcome } : { outcome, violation: `told failed; stored ${JSON.stringify(now)}` };
  };
}

const fencedUpdate: ExploredOperation<EntityState, void> = {
  name: "fenced update (caller's ETag)",
  setup: entityState({ start: 5, token: "ours" }),
  run: (state, via) =>
    guardedVia(via).updateEntity({ partitionKey: "p", rowKey: state.rowKey, value: 6 }, "Replace", {
      etag: state.etag,
    }),
  judge: judgeWrite(6),
};
const fencedUpsertExisting: ExploredOperation<EntityState, void> = {
  name: "fenced upsert (exists)",
  setup: entityState({ start: 5 }),
  run: (state, via) => guardedVia(via).upsertEntity({ partitionKey: "p", rowKey: state.rowKey, value: 6 }),
  judge: judgeWrite(6),
};
const fencedUpsertMissing: ExploredOperation<EntityState, void> = {
  name: "fenced upsert (missing)",
  setup: entityState({ start: undefined }),
  run: (state, via) => guardedVia(via).upsertEntity({ partitionKey: "p", rowKey: state.rowKey, value: 6 }),
  judge: judgeWrite(6),
};
const fencedCreate: ExploredOperation<EntityState, void> = {
  name: "fenced create",
  setup: entityState({ start: undefined }),
  run: (state, via) => guardedVia(via).createEntity({ partitionKey: "p", rowKey: state.rowKey, value: 6 }),
  judge: judgeWrite(6),
};
const fencedDelete: ExploredOperation<EntityState, void> = {
  name: "fenced delete",
  setup: entityState({ start: 5, token: "ours" }),
  run: (state, via) => guardedVia(via).deleteEntity("p", state.rowKey),
  judge: judgeWrite(undefined),
};
const staleUpdate: ExploredOperation<EntityState, void> = {
  name: "fenced update by a stale holder (caller's ETag)",
  setup: entityState({ start: 5, token: "later" }),
  run: (state, via) =>
    guardedVia(via).updateEntity({ partitionKey: "p", rowKey: state.rowKey, value: 6 }, "Replace", {
      etag: state.etag,
    }),
  async judge(state, result) {
    const now = await storedEntity(state.rowKey);
    const outcome = result.ok
      ? "written"
      : isFencedWriteRejectedError(result.error)
        ? "refused by the fence"
        : `failed: ${describeError(result.error)}`;
    if (now.value !== state.start || now.token !== state.startToken)
      return { outcome, violation: `a stale holder's write landed: ${JSON.stringify(now)}` };
    return result.ok ? { outcome, violation: "a stale holder was told its write was made" } : { outcome };
  },
};

it.concurrent(
  "fenced table writes: update with the caller's ETag, upsert, create, delete, and a stale holder",
  async () => {
    const runs = await exploreAll(fenceExplorer, [
      fencedUpdate,
      fencedUpsertExisting,
      fencedUpsertMissing,
      fencedCreate,
      fencedDelete,
      staleUpdate,
    ] as unknown as ExploredOperation<never, never>[]);
    expect(problems(runs, /unknown/)).toEqual([]);
  },
  TIME_LIMIT_IN_MS,
);
