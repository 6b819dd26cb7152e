/**
 * Fault-placement explorer over the Azure Files locks (tests/support/explorer.ts), on the library's
 * Files responder: `fileLock` and `shareLock` acquire and release, and the documented increment
 * `fileLock(...).withLock(handle => updateFileUnderLease(...))`. Every single fault at every request,
 * SDK retries on and off, and a seeded sample of pairs. The writes alone: ./files.test.ts.
 *
 * The contract: told "acquired", the handle's lease holds the file (or share), and a fresh fencing
 * token is on record, the same as the handle's; told a failure, nothing holds it (a file lease is
 * infinite: one left held locks the file until someone breaks it). Told "released", nothing holds
 * it; told a definite failure, the handle's lease still does. Either way, nothing but the lease and
 * the lock's own record changes. The increment is applied exactly once when told so, and not at all
 * when told a definite failure; the file is never left leased. Storage is read directly.
 */
import { fileCodecs, isFileWriteNotConfirmedError, updateFileUnderLease } from "../../../src/files/index.js";
import {
  fileLock,
  LOCK_METADATA,
  readLockRecord,
  shareLock,
  type LeaseLock,
  type LockHandle,
} from "../../../src/lease/index.js";
import { isTransientError } from "../../../src/retry/index.js";
import { describeError, type ExploredOperation, type Verdict, type Via } from "../../support/explorer.js";
import {
  FILES_EXPLORER_TIMEOUT,
  FILES_PAIRS,
  normalized,
  openFilesExplorer,
  expectContractsKept,
  type FilesExplorer,
} from "../../support/files-explorer.js";
import { describeResponderOnly } from "../../support/files.js";

/** What a lock may change of what it locks (the lease, its own record), and everything else. */
interface LockView {
  readonly leased: boolean;
  readonly fencingToken: number;
  /** Content, properties and the user's metadata: a lock must leave them alone. */
  readonly rest: string;
}

/** What a lock takes: a file (fileLock) or a share (shareLock). */
interface LockTarget {
  readonly kind: string;
  /** Makes one, with fencing token 3 on record; its name. */
  create(): Promise<string>;
  view(name: string): Promise<LockView>;
  heldBy(name: string, leaseId: string): Promise<boolean>;
  lock(via: Via, name: string): LeaseLock;
  breakLease(name: string): Promise<unknown>;
}

interface LockState {
  readonly name: string;
  readonly before: LockView;
  readonly handle?: LockHandle;
}

const lockNames: readonly string[] = Object.values(LOCK_METADATA);
const lockOptions = { renewIntervalInMs: 600_000, pollIntervalInMs: 20, holderName: "explorer" } as const;

function lockView(leaseState: string | undefined, metadata: Readonly<Record<string, string>>, rest: object): LockView {
  return {
    leased: leaseState === "leased",
    fencingToken: readLockRecord(normalized(metadata)).fencingToken,
    rest: JSON.stringify({ ...rest, metadata: normalized(metadata, lockNames) }),
  };
}

describeResponderOnly("fault-placement explorer over the Azure Files locks", () => {
  let files: FilesExplorer;
  beforeAll(async () => void (files = await openFilesExplorer("Azure Files locks")));
  afterAll(() => files.close("files-locks"));

  const fileTarget: LockTarget = {
    kind: "fileLock",
    async create() {
      const name = files.nextName("l");
      await files.seedFile(name, { [LOCK_METADATA.fencingToken]: "3" });
      return name;
    },
    async view(name) {
      const { leaseState, metadata, etag: _etag, ...rest } = (await files.stored(name))!;
      return lockView(leaseState, metadata, rest);
    },
    heldBy: (name, leaseId) => files.leaseHeldBy(name, leaseId),
    lock: (via, name) => fileLock(files.viaFile(via, name), lockOptions),
    breakLease: (name) => files.direct(name).getShareLeaseClient().breakLease(),
  };

  const directShare = (name: string) => files.target.shares().getShareClient(name);
  const shareTarget: LockTarget = {
    kind: "shareLock",
    async create() {
      const name = files.nextName("explorelock").replace(/[^a-z0-9]/g, "");
      await directShare(name).create({ metadata: { owner: "ops", [LOCK_METADATA.fencingToken]: "3" } });
      return name;
    },
    async view(name) {
      const { leaseState, metadata, quota } = await directShare(name).getProperties();
      return lockView(leaseState, metadata ?? {}, { quota });
    },
    heldBy: (name, leaseId) =>
      directShare(name)
        .getProperties({ leaseAccessConditions: { leaseId } })
        .then(
          () => true,
          () => false,
        ),
    lock: (via, name) =>
      shareLock(files.viaShare(via, name), { ...lockOptions, durationInSeconds: 15, renewIntervalInMs: 10_000 }),
    // The SDK passes `breakPeriod` on, though its type omits it (tests/support/files.ts).
    breakLease: (name) =>
      directShare(name)
        .getShareLeaseClient()
        .breakLease({ breakPeriod: 0 } as never),
  };

  /** Checks what the lock must have left alone, runs `check`, then frees what the run left held. */
  async function lockVerdict(
    lockTarget: LockTarget,
    state: LockState,
    outcome: string,
    check: (now: LockView) => Promise<string[]>,
    handle?: LockHandle,
  ): Promise<Verdict> {
    const now = await lockTarget.view(state.name);
    const problems = await check(now);
    if (now.rest !== state.before.rest) problems.push(`changed what is not the lock's: ${now.rest}`);
    await handle?.release().catch(() => undefined);
    if (now.leased) await lockTarget.breakLease(state.name).catch(() => undefined);
    return problems.length === 0 ? { outcome } : { outcome, violation: problems.join("; ") };
  }

  const acquire = (lockTarget: LockTarget): ExploredOperation<LockState, LockHandle> => ({
    name: `${lockTarget.kind} acquire`,
    async setup() {
      const name = await lockTarget.create();
      return { name, before: await lockTarget.view(name) };
    },
    run: (state, via) => lockTarget.lock(via, state.name).acquire({ timeoutInMs: 5_000 }),
    judge(state, result) {
      if (!result.ok) {
        return lockVerdict(lockTarget, state, `failed: ${describeError(result.error)}`, async (now) =>
          now.leased ? ["told it failed, but it is left leased"] : [],
        );
      }
      const handle = result.value;
      return lockVerdict(
        lockTarget,
        state,
        "acquired",
        async (now) => {
          const problems: string[] = [];
          if (!(await lockTarget.heldBy(state.name, handle.leaseId)))
            problems.push("the handle's lease does not hold it");
          if (handle.fencingToken === undefined || handle.fencingToken <= state.before.fencingToken)
            problems.push(`fencing token ${handle.fencingToken} after ${state.before.fencingToken}`);
          if (now.fencingToken !== handle.fencingToken)
            problems.push(`the record says token ${now.fencingToken}, the handle ${handle.fencingToken}`);
          return problems;
        },
        handle,
      );
    },
  });

  const release = (lockTarget: LockTarget): ExploredOperation<LockState, void> => ({
    name: `${lockTarget.kind} release`,
    async setup(via) {
      const name = await lockTarget.create();
      // Acquired through the proxy (fault-free, not counted), so that its release goes through it.
      const handle = await lockTarget.lock(via, name).acquire();
      return { name, before: await lockTarget.view(name), handle };
    },
    run: (state) => state.handle!.release(),
    judge(state, result) {
      if (result.ok) {
        return lockVerdict(lockTarget, state, "released", async (now) =>
          now.leased ? ["told released, but it is still leased"] : [],
        );
      }
      // No answer: released or not, no read can tell the caller more than "try again".
      if (isTransientError(result.error)) return lockVerdict(lockTarget, state, "unknown", async () => []);
      return lockVerdict(lockTarget, state, `failed: ${describeError(result.error)}`, async () =>
        (await lockTarget.heldBy(state.name, state.handle!.leaseId))
          ? []
          : ["told the release failed, but the handle's lease no longer holds it"],
      );
    },
  });

  it(
    "fileLock and shareLock: acquire and release",
    async () => {
      const runs = [];
      for (const lockTarget of [fileTarget, shareTarget]) {
        runs.push(...(await files.explorer.explore(acquire(lockTarget), { pairs: FILES_PAIRS })));
        runs.push(...(await files.explorer.explore(release(lockTarget), { pairs: FILES_PAIRS })));
      }
      expectContractsKept(runs);
    },
    FILES_EXPLORER_TIMEOUT,
  );

  it(
    "fileLock(...).withLock(handle => updateFileUnderLease(...)): the documented increment",
    async () => {
      const codec = fileCodecs.json<{ n: number }>();
      const increment: ExploredOperation<{ name: string; mutateCalls: number }, number> = {
        name: "withLock + updateFileUnderLease",
        async setup() {
          const name = files.nextName("i");
          await files.seedFile(name);
          return { name, mutateCalls: 0 };
        },
        run(state, via) {
          const file = files.viaFile(via, state.name);
          const add = (c: { n: number }) => ((state.mutateCalls += 1), { n: c.n + 1 });
          return fileLock(file, lockOptions).withLock(
            async (handle) => (await updateFileUnderLease(file, handle, add, { codec })).value.n,
            { timeoutInMs: 5_000 },
          );
        },
        async judge(state, result) {
          const now = (await files.stored(state.name))!;
          const n = (JSON.parse(now.content) as { n: number }).n;
          const unknown = !result.ok && isFileWriteNotConfirmedError(result.error);
          const outcome = result.ok ? "incremented" : unknown ? "unknown" : `failed: ${describeError(result.error)}`;
          const problems: string[] = [];
          if (state.mutateCalls > 1) problems.push(`mutate ran ${state.mutateCalls} times`);
          if (!(result.ok ? [6] : unknown ? [5, 6] : [5]).includes(n))
            problems.push(`told ${outcome}, stored n = ${n}`);
          if (now.leaseState === "leased") {
            problems.push("the file is left leased");
            await fileTarget.breakLease(state.name);
          }
          return problems.length === 0 ? { outcome } : { outcome, violation: problems.join("; ") };
        },
      };
      const runs = await files.explorer.explore(increment, { pairs: FILES_PAIRS });
      expectContractsKept(runs);
    },
    FILES_EXPLORER_TIMEOUT,
  );
});
