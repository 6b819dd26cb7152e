import { BlobServiceClient } from "@azure/storage-blob";
import { startAzurite } from "../../../src/testing/index.js";

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

  it("two instances are independent (in memory, separate ports)", async () => {
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
});
