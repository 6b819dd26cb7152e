import { existsSync } from "node:fs";
import { BlobServiceClient } from "@azure/storage-blob";
import { QueueClient } from "@azure/storage-queue";
import { AZURITE_ACCOUNT_KEY, startAzurite } from "../../../src/testing/index.js";
import { spawnWorker } from "../../support/processes.js";

/** Polls `check` until it holds (up to `timeoutInMs`), answering whether it did. */
async function eventually(check: () => Promise<boolean>, timeoutInMs = 20_000): Promise<boolean> {
  for (const end = Date.now() + timeoutInMs; Date.now() < end;) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return check();
}

describe("startAzurite", () => {
  it("starts a real Azurite on free ports that serves requests, and stops it", async () => {
    const azurite = await startAzurite();
    expect(azurite.blobEndpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/devstoreaccount1$/);
    expect(azurite.queueEndpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/devstoreaccount1$/);
    const client = BlobServiceClient.fromConnectionString(azurite.connectionString, { retryOptions: { maxTries: 1 } });
    await client.getContainerClient("started").create();
    const names: string[] = [];
    for await (const c of client.listContainers()) names.push(c.name);
    expect(names).toEqual(["started"]);

    await azurite.stop();
    await azurite.stop(); // idempotent
    await expect(client.getContainerClient("started").getProperties()).rejects.toMatchObject({ code: "ECONNREFUSED" });
  });

  it("keeps its data in a temporary folder by default, removed on stop; or in memory", async () => {
    const onDisk = await startAzurite();
    expect(onDisk.location).toBeDefined();
    const queue = new QueueClient(onDisk.connectionString, "kept");
    await queue.create();
    await queue.sendMessage("on disk");
    expect(existsSync(onDisk.location!)).toBe(true);
    await onDisk.stop();
    expect(existsSync(onDisk.location!)).toBe(false);

    await using inMemory = await startAzurite({ persistence: "memory" });
    expect(inMemory.location).toBeUndefined();
    await new QueueClient(inMemory.connectionString, "kept").create();
    await expect(startAzurite({ persistence: "tape" as "disk" })).rejects.toThrow(/`persistence` must be/);
  });

  it("two instances are independent (separate ports and data)", async () => {
    await using a = await startAzurite();
    await using b = await startAzurite();
    expect(a.blobEndpoint).not.toBe(b.blobEndpoint);
    await BlobServiceClient.fromConnectionString(a.connectionString).getContainerClient("only-in-a").create();
    const exists = await BlobServiceClient.fromConnectionString(b.connectionString)
      .getContainerClient("only-in-a")
      .exists();
    expect(exists).toBe(false);
  });

  it("reports a missing CLI clearly", async () => {
    await expect(startAzurite({ azuriteCliPath: "/nonexistent/azurite.js", startTimeoutInMs: 10_000 })).rejects.toThrow(
      /Azurite exited/,
    );
  });

  it("can be cancelled while starting", async () => {
    await expect(startAzurite({ abortSignal: AbortSignal.abort(new Error("not now")) })).rejects.toThrow("not now");
  });

  it.each(["SIGKILL", "SIGTERM"] as const)(
    "does not outlive its owner ended by %s: Azurite exits and its data folder is removed",
    async (signal) => {
      const owner = spawnWorker("tests/integration/testing/workers/azurite-owner.ts");
      const { blobEndpoint, location } = await owner.waitFor<{ blobEndpoint: string; location: string }>(
        (m) => typeof m?.blobEndpoint === "string",
        60_000,
      );
      expect(existsSync(location)).toBe(true);
      const blobs = BlobServiceClient.fromConnectionString(
        `DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=${AZURITE_ACCOUNT_KEY};BlobEndpoint=${blobEndpoint};`,
        { retryOptions: { maxTries: 1 } },
      );
      const refused = () =>
        blobs.getProperties().then(
          () => false,
          (e: unknown) => (e as { code?: string }).code === "ECONNREFUSED",
        );
      expect(await refused()).toBe(false); // it serves while its owner lives
      await owner.kill(signal);
      expect(await eventually(async () => !existsSync(location) && (await refused()))).toBe(true);
    },
    90_000,
  );
});
