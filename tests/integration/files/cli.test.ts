/**
 * `azure-storage-concurrency lock show|break --file / --share`, run as a user runs it (a child
 * process), against the Files responder (or the live account under `npm run test:live`).
 */
import type { ShareClient } from "@azure/storage-file-share";
import { fileLock, isLeaseLostError, shareLock, type LockHandle } from "../../../src/lease/index.js";
import { isFileLeaseConflictError, writeFileLastWriterWins, writeFileUnderLease } from "../../../src/files/index.js";
import { describeFiles, openFilesTarget, type FilesTarget } from "../../support/files.js";
import { spawnWorker } from "../../support/processes.js";

function lost(handle: LockHandle): Promise<unknown> {
  if (handle.signal.aborted) return Promise.resolve(handle.signal.reason);
  return new Promise((resolve) =>
    handle.signal.addEventListener("abort", () => resolve(handle.signal.reason), { once: true }),
  );
}

describeFiles("lock command on Azure Files", () => {
  let target: FilesTarget;
  let share: ShareClient;
  beforeAll(async () => {
    target = await openFilesTarget();
    share = await target.newShare("cli");
  });
  afterAll(() => target.close());

  async function cli(...args: string[]) {
    const run = spawnWorker("tools/cli/main.ts", ["lock", ...args], {
      AZURE_STORAGE_CONNECTION_STRING: target.connectionString,
    });
    const { code } = await run.exited;
    return { code, out: run.lines.join("\n"), err: run.stderr() };
  }

  it("shows a file lock's holder, then breaks it (only with --yes): the live holder notices and its writes are refused", async () => {
    await share.createDirectory("jobs");
    const file = share.getDirectoryClient("jobs").getFileClient("state.json");
    await writeFileLastWriterWins(file, "{}");
    const handle = await fileLock(file, { holderName: "worker-7", renewIntervalInMs: 200 }).acquire();

    const show = await cli("show", "--file", `${share.name}/jobs/state.json`, "--json");
    expect(show.code).toBe(0);
    expect(JSON.parse(show.out)).toMatchObject({
      state: "leased",
      held: true,
      durationType: "infinite",
      fencingToken: 1,
      holder: { name: "worker-7", pid: process.pid, durationInSeconds: "infinite", renewIntervalInMs: 200 },
    });

    const refused = await cli("break", "--file", `${share.name}/jobs/state.json`);
    expect([refused.code, handle.status]).toEqual([3, "held"]);

    const broken = await cli("break", "--file", `${share.name}/jobs/state.json`, "--yes");
    expect(broken.code).toBe(0);
    expect(broken.out).toMatch(/free now\. The service refuses the holder's writes/);
    expect(isLeaseLostError(await lost(handle))).toBe(true);
    expect((await file.getProperties()).leaseState).toBe("broken");
    const stale = await writeFileUnderLease(file, handle.leaseId, "stale").catch((e: unknown) => e);
    expect(isFileLeaseConflictError(stale) && stale.code).toBe("FileLeaseNotHeld");
    await handle.release();
  }, 60_000);

  it("shows and breaks a share lock; the default break waits out the holder's renewal interval, so the holder stops first", async () => {
    const leased = await target.newShare("clishare");
    const handle = await shareLock(leased, {
      durationInSeconds: 15,
      renewIntervalInMs: 500,
      holderName: "janitor",
    }).acquire();
    const show = await cli("show", "--share", leased.name);
    expect(show.out).toMatch(/holder: +'janitor' on .*\(pid \d+\)/);
    expect(show.out).toMatch(/lease: +15 s, renewed every 500 ms/);
    const events: string[] = [];
    handle.signal.addEventListener("abort", () => events.push("holder stopped"));
    const broken = await cli("break", "--share", leased.name, "--yes");
    expect(broken.out).toMatch(/free in 2 s/);
    const next = await shareLock(leased, { durationInSeconds: 15 }).acquire({ timeoutInMs: 20_000 });
    events.push("next holder");
    expect(events).toEqual(["holder stopped", "next holder"]);
    await next.release();
  }, 60_000);

  it("usage errors exit 2 before any request; a missing file exits 4", async () => {
    const cases = [
      ["break", "--file", `${share.name}/x.txt`, "--yes", "--break-period", "5"],
      ["show", "--file", share.name],
      ["show", "--file", `${share.name}/x.txt`, "--share", share.name],
      ["list", "--share", share.name],
      ["show", "--share", share.name, "--azurite"],
    ];
    for (const args of cases) {
      const run = await cli(...args);
      expect([args.join(" "), run.code]).toEqual([args.join(" "), 2]);
    }
    expect((await cli("show", "--share", share.name, "--azurite")).err).toMatch(/Azurite does not emulate it/);
    const missing = await cli("show", "--file", `${share.name}/no/such-file.txt`);
    expect([missing.code, missing.err]).toEqual([4, expect.stringMatching(/does not exist/)]);
  }, 60_000);
});
