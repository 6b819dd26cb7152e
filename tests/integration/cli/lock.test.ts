/**
 * `azure-storage-concurrency lock` run as a user runs it (a child process on the test Azurite):
 * list, show and break, with the documented exit codes.
 */
import { blobLock, isLeaseLostError } from "../../../src/index.js";
import { spawnWorker } from "../../support/processes.js";
import { blobService, connectionString, uniqueName } from "../../support/storage.js";

async function cli(...args: string[]) {
  const run = spawnWorker("src/cli/main.ts", ["lock", ...args], {
    AZURE_STORAGE_CONNECTION_STRING: connectionString(),
  });
  const { code } = await run.exited;
  return { code, out: run.lines.join("\n"), err: run.stderr() };
}

describe("lock command", () => {
  it("lists locks and shows one lock's holder, state and token", async () => {
    const container = blobService().getContainerClient(uniqueName("cli"));
    const held = await blobLock(container, "jobs/report", { durationInSeconds: 15, holderName: "reporter" }).acquire();
    await blobLock(container, "jobs/idle").withLock(() => undefined);
    await container.getBlockBlobClient("not-a-lock").upload("x", 1);

    const list = await cli("list", container.containerName);
    expect(list.code).toBe(0);
    expect(list.out).toMatch(/jobs\/report\s+leased\s+1\s+\d+s\s+'reporter' on /);
    expect(list.out).toMatch(/jobs\/idle\s+available\s+1/);
    expect(list.out).not.toMatch(/not-a-lock/);

    const show = await cli("show", container.containerName, "jobs/report", "--json");
    expect(show.code).toBe(0);
    expect(JSON.parse(show.out)).toMatchObject({
      state: "leased",
      held: true,
      fencingToken: 1,
      holder: { name: "reporter", pid: process.pid, durationInSeconds: 15, renewIntervalInMs: 5000 },
    });
    expect((await cli("show", container.containerName, "jobs/report")).out).toMatch(
      /holder: +'reporter' on .*\(pid \d+\)/,
    );
    await held.release();
  }, 60_000);

  it("break needs --yes (exit 3); with it the lease is broken and the live holder notices", async () => {
    const container = blobService().getContainerClient(uniqueName("cli"));
    const lock = blobLock(container, "stuck", { durationInSeconds: 15, renewIntervalInMs: 200 });
    const handle = await lock.acquire();

    const refused = await cli("break", container.containerName, "stuck");
    expect(refused.code).toBe(3);
    expect(refused.err).toMatch(/--yes/);
    expect((await lock.inspect()).state).toBe("leased");

    const broken = await cli("break", container.containerName, "stuck", "--yes", "--now");
    expect(broken.code).toBe(0);
    expect(broken.out).toMatch(/free now/);
    expect(["broken", "available"]).toContain((await lock.inspect()).state);
    if (!handle.signal.aborted)
      await new Promise((resolve) => handle.signal.addEventListener("abort", resolve, { once: true }));
    expect(isLeaseLostError(handle.signal.reason)).toBe(true);
  }, 60_000);

  it("the default break waits out the holder's renewal interval, so the holder stops first", async () => {
    const container = blobService().getContainerClient(uniqueName("cli"));
    const handle = await blobLock(container, "live", { durationInSeconds: 15, renewIntervalInMs: 500 }).acquire();
    const events: string[] = [];
    handle.signal.addEventListener("abort", () => events.push("holder stopped"));
    const broken = await cli("break", container.containerName, "live", "--yes");
    expect(broken.out).toMatch(/free in 2 s/);
    const next = await blobLock(container, "live", { durationInSeconds: 15 }).acquire({ timeoutInMs: 20_000 });
    events.push("next holder");
    expect(events).toEqual(["holder stopped", "next holder"]);
    await next.release();
  }, 60_000);

  it("missing things exit 4; bad usage exits 2", async () => {
    const missing = uniqueName("cli");
    expect((await cli("show", missing, "x")).code).toBe(4);
    expect((await cli("list", missing)).code).toBe(4);
    expect((await cli("frob", missing)).code).toBe(2);
    expect((await cli("break", missing, "x", "--yes", "--break-period", "90")).code).toBe(2);
  }, 60_000);
});
