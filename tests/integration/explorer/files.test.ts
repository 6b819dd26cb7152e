/**
 * Fault-placement explorer over the Azure Files writes (tests/support/explorer.ts), with the proxy in
 * front of the library's Files responder (Azurite has no Azure Files): every single fault at every
 * request, SDK retries on and off, and a seeded sample of pairs. The locks: ./files-locks.test.ts.
 *
 * The contract of a write (`writeFileLastWriterWins`, `writeFileUnderLease`, `updateFileUnderLease`):
 * told "written", the new content is stored whole (its Content-MD5 matches), with the write's id,
 * the metadata and properties as documented (an update carries over the metadata, content type and
 * SMB properties it read); told a definite failure, the file is exactly as before (same ETag); told
 * "unknown" (`FileWriteNotConfirmedError`), either of the two. An update's `mutate` runs at most
 * once. A write under a lease leaves the lease the caller's. Storage is read directly.
 */
import {
  fileCodecs,
  isFileWriteNotConfirmedError,
  updateFileUnderLease,
  WRITE_ID_METADATA_KEY,
  writeFileLastWriterWins,
  writeFileUnderLease,
  type FileWriteResult,
} from "../../../src/files/index.js";
import { fileLock, type LockHandle } from "../../../src/lease/index.js";
import { describeError, type ExploredOperation, type Settled, type Verdict } from "../../support/explorer.js";
import {
  FILES_EXPLORER_TIMEOUT,
  FILES_PAIRS,
  normalized,
  openFilesExplorer,
  expectContractsKept,
  type FilesExplorer,
  type StoredFile,
} from "../../support/files-explorer.js";
import { describeResponderOnly } from "../../support/files.js";

interface WriteState {
  readonly name: string;
  readonly before: StoredFile | undefined;
  /** The lease the write is made under: a lease id, or a fileLock handle. */
  readonly lease?: string | LockHandle;
  mutateCalls: number;
}

/** What a write applied whole leaves in the file. */
interface Expected {
  readonly content: string;
  readonly metadata: Readonly<Record<string, string>>;
  readonly contentType: string;
  /** The SMB properties of the file before are carried over (updates). */
  readonly keepsSmb: boolean;
}

const NEW = '{"n":"replaced"}';
const writeOptions = { metadata: { team: "ops" }, httpProperties: { contentType: "text/plain" } };
const replaced: Expected = { content: NEW, metadata: { team: "ops" }, contentType: "text/plain", keepsSmb: false };

describeResponderOnly("fault-placement explorer over the Azure Files writes", () => {
  let files: FilesExplorer;
  beforeAll(async () => void (files = await openFilesExplorer("Azure Files writes")));
  afterAll(() => files.close("files"));

  /** How the stored file differs from the write applied whole; empty when it is there. */
  function differences(now: StoredFile | undefined, state: WriteState, writeId: string, expected: Expected): string[] {
    if (!now) return ["the file is missing"];
    const wrong: string[] = [];
    if (now.content !== expected.content) wrong.push(`content ${JSON.stringify(now.content)}`);
    const metadata = normalized({ ...expected.metadata, [WRITE_ID_METADATA_KEY]: writeId });
    if (JSON.stringify(now.metadata) !== JSON.stringify(metadata))
      wrong.push(`metadata ${JSON.stringify(now.metadata)}`);
    if (now.contentType !== expected.contentType) wrong.push(`content type ${now.contentType}`);
    if (!now.md5Matches) wrong.push("a Content-MD5 that does not match the content");
    if (expected.keepsSmb) {
      for (const key of ["attributes", "permissionKey", "createdOn"] as const)
        if (now[key] !== state.before?.[key]) wrong.push(`${key} not carried over`);
    }
    return wrong;
  }

  /** Told written: applied whole. Told unknown: applied whole, or untouched. Told a failure: untouched. */
  async function judgeWrite(
    state: WriteState,
    result: Settled<{ readonly writeId: string; readonly confirmed: boolean }>,
    expected: Expected,
  ): Promise<Verdict> {
    const now = await files.stored(state.name);
    const untouched = JSON.stringify(now) === JSON.stringify(state.before);
    const problems: string[] = [];
    if (state.mutateCalls > 1) problems.push(`mutate ran ${state.mutateCalls} times`);
    const leaseId = typeof state.lease === "string" ? state.lease : state.lease?.leaseId;
    if (leaseId && !(await files.leaseHeldBy(state.name, leaseId))) problems.push("the caller's lease was lost");
    let outcome: string;
    if (result.ok) {
      outcome = result.value.confirmed ? "written (confirmed after a lost answer)" : "written";
      const wrong = differences(now, state, result.value.writeId, expected);
      if (wrong.length > 0) problems.push(`told written, but stored ${wrong.join(", ")}`);
    } else if (isFileWriteNotConfirmedError(result.error)) {
      outcome = "unknown";
      const whole = differences(now, state, result.error.writeId, expected).length === 0;
      if (!whole && !untouched) problems.push("told unknown, but the file is neither as before nor written whole");
    } else {
      outcome = `failed: ${describeError(result.error)}`;
      if (!untouched) problems.push(`told it failed, but the file changed: ${JSON.stringify(now)}`);
    }
    if (typeof state.lease === "object") await state.lease.release().catch(() => undefined);
    else if (leaseId) await files.direct(state.name).getShareLeaseClient(leaseId).releaseLease();
    return problems.length === 0 ? { outcome } : { outcome, violation: problems.join("; ") };
  }

  const confirmed = (r: FileWriteResult) => ({ writeId: r.writeId, confirmed: r.confirmedAfterLostResponse });

  /** A write of `NEW` with `writeOptions`, from the start state `setup` makes. */
  function write(
    name: string,
    setup: (name: string) => Promise<WriteState>,
    run: (file: Parameters<typeof writeFileLastWriterWins>[0], state: WriteState) => Promise<FileWriteResult>,
    expected: (state: WriteState) => Expected = () => replaced,
  ): ExploredOperation<WriteState, FileWriteResult> {
    return {
      name,
      setup: () => setup(files.nextName("w")),
      run: (state, via) => run(files.viaFile(via, state.name), state),
      judge: (state, result) =>
        judgeWrite(state, result.ok ? { ok: true, value: confirmed(result.value) } : result, expected(state)),
    };
  }

  const seeded = async (name: string): Promise<WriteState> => {
    await files.seedFile(name);
    return { name, before: await files.stored(name), mutateCalls: 0 };
  };
  const leased = async (name: string): Promise<WriteState> => {
    await files.seedFile(name);
    const lease = files.direct(name).getShareLeaseClient();
    await lease.acquireLease(-1);
    return { name, before: await files.stored(name), lease: lease.leaseId, mutateCalls: 0 };
  };
  const locked = async (name: string): Promise<WriteState> => {
    await files.seedFile(name);
    const handle = await fileLock(files.direct(name), { renewIntervalInMs: 600_000 }).acquire();
    return { name, before: await files.stored(name), lease: handle, mutateCalls: 0 };
  };

  it(
    "writeFileLastWriterWins and writeFileUnderLease: every fault at every request, and pairs",
    async () => {
      const operations = [
        write("writeFileLastWriterWins (replace)", seeded, (file) => writeFileLastWriterWins(file, NEW, writeOptions)),
        write(
          "writeFileLastWriterWins (create)",
          async (name) => ({ name, before: undefined, mutateCalls: 0 }),
          (file) => writeFileLastWriterWins(file, NEW, writeOptions),
        ),
        write("writeFileUnderLease (lease id)", leased, (file, state) =>
          writeFileUnderLease(file, state.lease!, NEW, writeOptions),
        ),
        write(
          "writeFileUnderLease (fileLock handle)",
          locked,
          (file, state) => writeFileUnderLease(file, state.lease!, NEW, writeOptions),
          // The handle's lock record is kept next to the caller's metadata.
          (state) => ({ ...replaced, metadata: { team: "ops", ...(state.lease as LockHandle).lockMetadata } }),
        ),
      ];
      const runs = [];
      for (const operation of operations)
        runs.push(...(await files.explorer.explore(operation, { pairs: FILES_PAIRS })));
      expectContractsKept(runs);
    },
    FILES_EXPLORER_TIMEOUT,
  );

  it(
    "updateFileUnderLease: a JSON counter under a lease, keeping metadata and properties",
    async () => {
      const codec = fileCodecs.json<{ n: number }>();
      const update = write(
        "updateFileUnderLease",
        leased,
        async (file, state) => {
          const result = await updateFileUnderLease(
            file,
            state.lease!,
            (current) => ((state.mutateCalls += 1), { n: current.n + 1 }),
            { codec },
          );
          if (!result.written) throw new Error("mutate never declines here, yet nothing was written");
          return { ...result, writeId: result.writeId!, lastModified: undefined };
        },
        // The metadata, content type and SMB properties read are carried over.
        () => ({ content: '{"n":6}', metadata: { owner: "ops" }, contentType: "application/json", keepsSmb: true }),
      );
      const runs = await files.explorer.explore(update, { pairs: FILES_PAIRS });
      expectContractsKept(runs);
    },
    FILES_EXPLORER_TIMEOUT,
  );
});
