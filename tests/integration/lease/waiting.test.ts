/**
 * The lock's cheap paths against a real Azurite, counted on a pass-through proxy: a lock taken
 * again by the same process writes its record on the ETag it remembers (no read), and a release in
 * a process hands the lock to that process's waiter at once (no look), which also writes on the
 * releaser's record. Fencing tokens still go up by one per acquisition.
 */
import { expect } from "@jest/globals";
import { blobLock } from "../../../src/lease/index.js";
import { blobService, faultProxyFor, uniqueName } from "../../support/storage.js";

/** The requests the proxy saw from `from` on, as `METHOD kind status`. */
function seen(requests: readonly { method: string; path: string; statusCode: number | undefined }[], from = 0) {
  return requests.slice(from).map((r) => {
    const kind = r.path.includes("comp=lease") ? "lease" : r.path.includes("comp=metadata") ? "metadata" : "blob";
    return `${r.method} ${kind} ${r.statusCode}`;
  });
}

describe("lease lock: cheap paths", () => {
  it("a lock taken again costs the acquire, the record write and the release: no read, the token one up", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    const c = blobService(connectionString).getContainerClient(uniqueName("again"));
    await c.create();
    const lock = blobLock(c, "again", { durationInSeconds: 15 });
    const first = await lock.acquire();
    await first.release();
    const before = proxy.requests.length;
    const second = await lock.acquire();
    await second.release();
    expect([first.fencingToken, second.fencingToken]).toEqual([1, 2]);
    expect(seen(proxy.requests, before)).toEqual(["PUT lease 201", "PUT metadata 200", "PUT lease 200"]);
  });

  it("after someone else wrote the record, the remembered ETag is refused and the record read: tokens stay unique", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    const c = blobService(connectionString).getContainerClient(uniqueName("stale"));
    await c.create();
    const lock = blobLock(c, "stale", { durationInSeconds: 15 });
    await (await lock.acquire()).release();
    await (await blobLock(blobService().getContainerClient(c.containerName), "stale").acquire()).release(); // token 2
    const before = proxy.requests.length;
    const handle = await lock.acquire();
    await handle.release();
    expect(handle.fencingToken).toBe(3);
    expect(seen(proxy.requests, before)).toEqual([
      "PUT lease 201",
      "PUT metadata 412",
      "HEAD blob 200",
      "PUT metadata 200",
      "PUT lease 200",
    ]);
  });

  it("a release hands the lock to a waiter of the same process at once, without a look", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    const c = blobService(connectionString).getContainerClient(uniqueName("handoff"));
    await c.create();
    // Looks a minute apart: only the handoff can give the waiter the lock within the test's time.
    const options = { durationInSeconds: 15, pollIntervalInMs: 60_000 };
    const holder = await blobLock(c, "handoff", options).acquire();
    const before = proxy.requests.length;
    const waiting = blobLock(c, "handoff", options).acquire({ timeoutInMs: 20_000 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    // The lock is held in this process: the waiter did not even try.
    expect(proxy.requests.length).toBe(before);
    await holder.release();
    const handle = await waiting;
    expect([holder.fencingToken, handle.fencingToken]).toEqual([1, 2]);
    expect(seen(proxy.requests, before)).toEqual(["PUT lease 200", "PUT lease 201", "PUT metadata 200"]);
    await handle.release();
  }, 30_000);
});
