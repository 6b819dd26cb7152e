/**
 * `azure-storage-concurrency semaphore` against the test Azurite (run in this process, as the tool
 * runs it: tests/integration/cli/lock.test.ts starts the tool as a process of its own): list, show
 * and break with the lock command's safety and exit codes; the account and container named first;
 * holders shown (escaped) before a break; nothing broken without --yes.
 */
import { expect, jest } from "@jest/globals";
import { blobSemaphore, isLeaseLostError, type PermitHandle } from "../../../src/index.js";
import { runCli } from "../../../tools/cli/run.js";
import { blobService, connectionString, uniqueName } from "../../support/storage.js";

async function cli(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const o = jest.spyOn(process.stdout, "write").mockImplementation((s) => (out.push(String(s)), true));
  const e = jest.spyOn(process.stderr, "write").mockImplementation((s) => (err.push(String(s)), true));
  const saved = process.env["AZURE_STORAGE_CONNECTION_STRING"];
  process.env["AZURE_STORAGE_CONNECTION_STRING"] = connectionString();
  try {
    const code = await runCli(["semaphore", ...argv]);
    return { code, out: out.join("").trimEnd(), err: err.join("").trimEnd() };
  } finally {
    o.mockRestore();
    e.mockRestore();
    if (saved === undefined) delete process.env["AZURE_STORAGE_CONNECTION_STRING"];
    else process.env["AZURE_STORAGE_CONNECTION_STRING"] = saved;
  }
}

const aborted = (permit: PermitHandle) =>
  new Promise<unknown>((resolve) =>
    permit.abortSignal.aborted
      ? resolve(permit.abortSignal.reason)
      : permit.abortSignal.addEventListener("abort", () => resolve(permit.abortSignal.reason), { once: true }),
  );

describe("semaphore command", () => {
  it("lists semaphores and shows one's slots (holders escaped); breaks only with --yes, naming whom it breaks", async () => {
    const container = blobService().getContainerClient(uniqueName("semcli"));
    const exports = blobSemaphore(container, "jobs/exports", {
      maxCount: 3,
      durationInSeconds: 15,
      renewIntervalInMs: 200,
      holderName: "export\u001b[2J\nfake",
    });
    const [a, b] = [await exports.acquire(), await exports.acquire()];
    const held = [a.slot, b.slot].sort((x, y) => x - y);
    await blobSemaphore(container, "other", { maxCount: 1 }).withPermit(() => undefined);

    const list = await cli("list", container.containerName);
    expect(list.code).toBe(0);
    expect(list.err.split("\n")[0]).toMatch(
      new RegExp(
        `^account 'devstoreaccount1' \\(.*\\), from AZURE_STORAGE_CONNECTION_STRING; container '${container.containerName}'$`,
      ),
    );
    expect(list.out.split("\n")).toEqual([
      expect.stringMatching(/^NAME +SLOTS +HELD +HELD SLOTS$/),
      expect.stringMatching(new RegExp(`^jobs/exports +2 +2 +${held.join(",")}$`)),
      expect.stringMatching(/^other +1 +0 +-$/),
    ]);
    expect(JSON.parse((await cli("list", container.containerName, "--json")).out)).toEqual([
      { name: "jobs/exports", slots: 2, held: 2, heldSlots: held },
      { name: "other", slots: 1, held: 0, heldSlots: [] },
    ]);

    const show = await cli("show", container.containerName, "jobs/exports");
    expect(show.code).toBe(0);
    expect(show.out).toContain("\\u001b[2J\\u000afake"); // escaped: no terminal escape, no forged line
    expect(show.out.split("\n")).toHaveLength(4);
    const json = JSON.parse((await cli("show", "--json", container.containerName, "jobs/exports")).out) as {
      held: number;
      slots: { slot: number; state: string; fencingToken: number; holder: { pid: number } }[];
    };
    expect(json.held).toBe(2);
    expect(json.slots.map((s) => [s.slot, s.state, s.fencingToken, s.holder.pid])).toEqual(
      held.map((slot) => [slot, "leased", 1, process.pid]),
    );

    // Without --yes nothing is broken (exit 3); with it, the holder is named first and notices the break.
    const refused = await cli("break", container.containerName, "jobs/exports", "--slot", String(a.slot), "--now");
    expect(refused.code).toBe(3);
    expect(a.status).toBe("held");
    const broken = await cli(
      "break",
      container.containerName,
      "jobs/exports",
      "--slot",
      String(a.slot),
      "--yes",
      "--now",
    );
    expect(broken.code).toBe(0);
    expect(broken.err).toMatch(
      new RegExp(
        `breaking the permit on slot ${a.slot} of semaphore 'jobs/exports', held by .*\\(pid ${process.pid}\\)`,
      ),
    );
    expect(broken.out).toMatch(new RegExp(`^broke the permit on slot ${a.slot} \\(.*\\); it is free now$`));
    const reason = await aborted(a);
    expect(isLeaseLostError(reason) && reason.reason).toBe("renewal-rejected");
    expect(b.status).toBe("held");

    // --all breaks every held slot; by default each waits out its holder's renewal interval (0.2 s, rounded up, + 1 s).
    const all = await cli("break", container.containerName, "jobs/exports", "--all", "--yes");
    expect(all.code).toBe(0);
    expect(all.out).toMatch(new RegExp(`^breaking the permit on slot ${b.slot} .*: free in 2 s`));
    await aborted(b);
    await Promise.all([a.release(), b.release()]);
  });

  it("says what is missing: exit 4 for a missing container, semaphore or slot; usage errors name the fix", async () => {
    const container = blobService().getContainerClient(uniqueName("semcli"));
    expect(await cli("show", container.containerName, "exports")).toMatchObject({
      code: 4,
      err: expect.stringMatching(/container '.*' does not exist$/),
    });
    await blobSemaphore(container, "exports", { maxCount: 1 }).withPermit(() => undefined);
    expect(await cli("show", container.containerName, "nothing")).toMatchObject({
      code: 4,
      err: expect.stringMatching(/semaphore 'nothing' has no slots in container/),
    });
    expect(await cli("break", container.containerName, "exports", "--slot", "7", "--yes")).toMatchObject({ code: 4 });
    expect(await cli("break", container.containerName, "exports", "--all", "--yes")).toMatchObject({
      code: 0,
      out: "no permit of semaphore 'exports' is held; nothing to break",
    });
    for (const [argv, message] of [
      [["break", container.containerName, "exports", "--yes"], /needs --slot <n> \(one slot\) or --all/],
      [["break", container.containerName, "exports", "--slot", "1", "--all"], /use --slot <n> or --all, not both/],
      [["break", container.containerName, "exports", "--slot", "x"], /--slot takes a slot number, got "x"/],
      [["show", container.containerName], /semaphore show needs the semaphore's name/],
      [["list", container.containerName, "extra"], /unexpected argument "extra"/],
      [["list", container.containerName, "--slot", "1"], /--slot does not apply to semaphore list/],
      [["frob"], /semaphore needs an action: list, show or break, got "frob"/],
    ] as const) {
      const run = await cli(...argv);
      expect({ argv, code: run.code }).toEqual({ argv, code: 2 });
      expect(run.err).toMatch(message);
    }
  });
});
