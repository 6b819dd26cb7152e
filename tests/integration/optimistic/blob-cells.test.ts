/**
 * Block blob cells against Azurite: create, update with If-Match, carried-over metadata and headers,
 * races between clients, bad content, conditional reads, last writer wins, and the HTTP requests
 * saved by the write-skip cache and by coalescing (counted at the network by a fault proxy).
 */
import type { ContainerClient } from "@azure/storage-blob";
import {
  blobBytesCell,
  blobJsonCell,
  blobTextCell,
  isCellContentError,
  optimisticUpdate,
  readCell,
  SKIP_WRITE,
  writeIfMatch,
  writeLastWriterWins,
} from "../../../src/optimistic/index.js";
import { fixedBackoff } from "../../../src/retry/index.js";
import { isStorageRequestError } from "../../../src/index.js";
import { blobService, faultProxyFor, uniqueName } from "../../support/storage.js";

const quick = { backoff: fixedBackoff({ delayInMs: 2 }) };
let container: ContainerClient;

beforeAll(async () => {
  container = blobService().getContainerClient(uniqueName("optblob"));
  await container.create();
});
afterAll(async () => {
  await container.delete();
});

describe("block blob cells", () => {
  it("creates an absent JSON blob, then updates it, keeping other metadata and the content headers", async () => {
    const blob = container.getBlockBlobClient("doc.json");
    const cell = blobJsonCell<{ title: string; revision: number }>(blob);
    const created = await optimisticUpdate(cell, (current) => ({
      title: "Home",
      revision: (current?.revision ?? 0) + 1,
    }));
    expect(created).toMatchObject({ written: true, value: { title: "Home", revision: 1 }, attempts: 1 });
    expect((await blob.getProperties()).contentType).toBe("application/json; charset=utf-8");

    await blob.setMetadata({ owner: "ada", asc_optimistic: (await blob.getProperties()).metadata!["asc_optimistic"]! });
    await blob.setHTTPHeaders({ blobContentType: "application/vnd.wiki+json", blobCacheControl: "no-cache" });
    const updated = await optimisticUpdate(cell, (current) => ({ ...current!, revision: current!.revision + 1 }));
    const properties = await blob.getProperties();
    expect(updated.value).toEqual({ title: "Home", revision: 2 });
    expect(updated.etag).toBe(properties.etag);
    expect(properties.metadata).toMatchObject({ owner: "ada" });
    expect(properties.contentType).toBe("application/vnd.wiki+json");
    expect(properties.cacheControl).toBe("no-cache");
  });

  it("two clients creating the same blob at once: one gets 409, applies on top of the other, none is lost", async () => {
    const name = "race-create.json";
    const cells = [blobService(), blobService()].map((s) =>
      blobJsonCell<number>(s.getContainerClient(container.containerName).getBlockBlobClient(name)),
    );
    const results = await Promise.all(
      cells.map((cell) => optimisticUpdate(cell, (n) => (n ?? 0) + 1, { ...quick, coalesce: false })),
    );
    expect((await readCell(cells[0]!)).exists && (await readCell(cells[0]!))).toMatchObject({ value: 2 });
    expect(results.map((r) => r.value).sort()).toEqual([1, 2]);
  });

  it("writers on several clients racing on one blob lose no update", async () => {
    const name = "race.json";
    const clients = Array.from({ length: 6 }, () => blobService());
    await Promise.all(
      clients.map(async (client) => {
        const cell = blobJsonCell<number>(client.getContainerClient(container.containerName).getBlockBlobClient(name));
        for (let i = 0; i < 5; i++)
          await optimisticUpdate(cell, (n) => (n ?? 0) + 1, { ...quick, coalesce: false, maxAttempts: 100 });
      }),
    );
    const final = await readCell(blobJsonCell<number>(container.getBlockBlobClient(name)));
    expect(final).toMatchObject({ exists: true, value: 30 });
  });

  it("a JSON blob that does not parse: a typed error naming the blob, and the blob is untouched", async () => {
    const blob = container.getBlockBlobClient("broken.json");
    const { etag } = await blob.upload("{ not json", 10);
    const error = await optimisticUpdate(blobJsonCell(blob), () => ({ fixed: true })).catch((e: unknown) => e);
    expect(isCellContentError(error)).toBe(true);
    expect(error).toMatchObject({ code: "InvalidJson", cell: `blob '${container.containerName}/broken.json'` });
    expect((error as Error).message).toContain("broken.json");
    expect((await blob.getProperties()).etag).toBe(etag);
  });

  it("a mutate that throws: its error reaches the caller and nothing is written", async () => {
    const blob = container.getBlockBlobClient("throws.json");
    const cell = blobJsonCell<number>(blob);
    await optimisticUpdate(cell, () => 1);
    const { etag } = await blob.getProperties();
    const failure = new Error("validation failed");
    await expect(
      optimisticUpdate(cell, () => {
        throw failure;
      }),
    ).rejects.toBe(failure);
    await expect(optimisticUpdate(cell, () => ({ big: 10n }) as never)).rejects.toThrow(/cannot be written as JSON/);
    expect((await blob.getProperties()).etag).toBe(etag);
  });

  it("a caller cancelled before the shared write is sent has nothing of its change stored (issue 11, defect 5)", async () => {
    const blob = container.getBlockBlobClient("cancelled.json");
    const cell = blobJsonCell<string[]>(blob);
    await optimisticUpdate(cell, () => []);
    const controller = new AbortController();
    const cancelled = optimisticUpdate(cell, (items) => [...items!, "cancelled"], { abortSignal: controller.signal });
    const waiting = optimisticUpdate(cell, async (items) => {
      controller.abort(new Error("the caller gave up")); // the first caller cancels while this mutation runs
      await Promise.resolve();
      return [...items!, "kept"];
    });
    await expect(cancelled).rejects.toThrow("the caller gave up");
    expect(await waiting).toMatchObject({ written: true, value: ["kept"], coalesced: 1 });
    expect(JSON.parse((await blob.downloadToBuffer()).toString())).toEqual(["kept"]);
  });

  it("text and bytes cells; text that is not UTF-8 is refused rather than written back damaged", async () => {
    const text = blobTextCell(container.getBlockBlobClient("notes.txt"));
    await optimisticUpdate(text, (current) => `${current ?? ""}one\n`);
    expect(await optimisticUpdate(text, (current) => `${current}two\n`)).toMatchObject({ value: "one\ntwo\n" });

    const bytes = blobBytesCell(container.getBlockBlobClient("seats.bin"));
    await optimisticUpdate(bytes, (current) => {
      const seats = Buffer.from(current ?? new Uint8Array(8));
      seats[3] = 1;
      return seats;
    });
    const read = await readCell(bytes);
    expect(read.exists && [...read.value]).toEqual([0, 0, 0, 1, 0, 0, 0, 0]);

    const latin1 = container.getBlockBlobClient("latin1.txt");
    await latin1.upload(Buffer.from([0x63, 0x61, 0x66, 0xe9]), 4); // "café" in Latin-1
    await expect(optimisticUpdate(blobTextCell(latin1), (t) => `${t}!`)).rejects.toMatchObject({ code: "InvalidText" });
  });

  it("readCell with ifNoneMatch: unchanged without transferring the content, changed after a write [Azurite only]", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    const cell = blobJsonCell<{ body: string }>(
      blobService(connectionString).getContainerClient(container.containerName).getBlockBlobClient("page.json"),
    );
    await optimisticUpdate(cell, () => ({ body: "v1" }));
    const first = await readCell(cell);
    if (!first.exists) throw new Error("expected the page");
    proxy.clearLog();
    expect(await readCell(cell, { ifNoneMatch: first.etag })).toEqual({
      exists: true,
      changed: false,
      etag: first.etag,
    });
    expect(proxy.requests.map((r) => r.statusCode)).toEqual([304]);
    await optimisticUpdate(cell, () => ({ body: "v2" }));
    expect(await readCell(cell, { ifNoneMatch: first.etag })).toMatchObject({ changed: true, value: { body: "v2" } });
    expect(await readCell(blobJsonCell(container.getBlockBlobClient("missing.json")))).toEqual({
      exists: false,
      changed: true,
    });
  });

  it("the wiki page: two people edit the same copy; the second save is refused and sees the first", async () => {
    const page = blobJsonCell<{ body: string }>(container.getBlockBlobClient("wiki-home.json"));
    await writeLastWriterWins(page, { body: "Welcome" });
    const shownToAda = await readCell(page);
    const shownToGrace = await readCell(page);
    if (!shownToAda.exists || !shownToGrace.exists) throw new Error("expected the page");
    const adaSaves = await writeIfMatch(page, shownToAda.etag, { body: "Welcome, Ada was here" });
    expect(adaSaves).toMatchObject({ written: true, value: { body: "Welcome, Ada was here" } });
    const graceSaves = await writeIfMatch(page, shownToGrace.etag, { body: "Welcome, Grace was here" });
    expect(graceSaves).toMatchObject({ written: false, value: { body: "Welcome, Ada was here" }, etag: adaSaves.etag });
    expect(await readCell(page)).toMatchObject({ value: { body: "Welcome, Ada was here" } });
  });

  it("last writer wins: replaces whatever is there; mustExist refuses an absent blob", async () => {
    const blob = container.getBlockBlobClient("lww.json");
    const cell = blobJsonCell<string>(blob);
    await optimisticUpdate(cell, () => "mine");
    await blob.upload('"someone else"', 14);
    const { etag } = await writeLastWriterWins(cell, "overwritten");
    expect(await readCell(cell)).toEqual({ exists: true, changed: true, value: "overwritten", etag });
    const absent = blobJsonCell(container.getBlockBlobClient("absent-lww.json"));
    const error = await writeLastWriterWins(absent, 1, { mustExist: true }).catch((e: unknown) => e);
    expect(isStorageRequestError(error) && [404, 412]).toContain((error as { statusCode: number }).statusCode);
    expect((await readCell(absent)).exists).toBe(false);
  });

  it("a blob leased by someone else is not retried as a conflict; with the lease id the update goes through", async () => {
    const blob = container.getBlockBlobClient("leased.json");
    const cell = blobJsonCell<number>(blob);
    await optimisticUpdate(cell, () => 1);
    const lease = blob.getBlobLeaseClient();
    await lease.acquireLease(15);
    try {
      const error = await optimisticUpdate(cell, (n) => n! + 1, { skipReadAfterOwnWrite: false }).catch(
        (e: unknown) => e,
      );
      expect(error).toMatchObject({ statusCode: 412, serviceCode: "LeaseIdMissing" });
      expect(
        await optimisticUpdate(blobJsonCell<number>(blob, { leaseId: lease.leaseId }), (n) => n! + 1),
      ).toMatchObject({ value: 2 });
    } finally {
      await lease.releaseLease();
    }
  });
});

describe("requests saved, counted at the network", () => {
  it("skips the read when this process wrote last; one 412 and a read when someone else wrote since [Azurite only]", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    const blob = blobService(connectionString)
      .getContainerClient(container.containerName)
      .getBlockBlobClient("cache.json");
    const cell = blobJsonCell<number>(blob);
    await optimisticUpdate(cell, (n) => (n ?? 0) + 1);
    expect(proxy.requests.map((r) => `${r.method} ${r.statusCode}`)).toEqual(["GET 404", "PUT 201"]);

    proxy.clearLog();
    await optimisticUpdate(cell, (n) => n! + 1);
    expect(proxy.requests.map((r) => `${r.method} ${r.statusCode}`)).toEqual(["PUT 201"]);

    await container.getBlockBlobClient("cache.json").upload("10", 2); // another process
    proxy.clearLog();
    expect(await optimisticUpdate(cell, (n) => n! + 1, quick)).toMatchObject({ value: 11, attempts: 2 });
    expect(proxy.requests.map((r) => `${r.method} ${r.statusCode}`)).toEqual(["PUT 412", "GET 200", "PUT 201"]);

    proxy.clearLog();
    await optimisticUpdate(cell, (n) => n! + 1, { skipReadAfterOwnWrite: false });
    expect(proxy.requests.map((r) => r.method)).toEqual(["GET", "PUT"]);
  });

  it("64 concurrent updates in one process share one read and one write [Azurite only]", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    const cell = blobJsonCell<number>(
      blobService(connectionString).getContainerClient(container.containerName).getBlockBlobClient("coalesced.json"),
    );
    const results = await Promise.all(Array.from({ length: 64 }, () => optimisticUpdate(cell, (n) => (n ?? 0) + 1)));
    expect(results.map((r) => r.value)).toEqual(Array.from({ length: 64 }, (_, i) => i + 1));
    expect(results.every((r) => r.coalesced === 64 && r.etag === results[0]!.etag)).toBe(true);
    expect(proxy.requests.map((r) => r.method)).toEqual(["GET", "PUT"]);
    const skipped = await optimisticUpdate(cell, () => SKIP_WRITE);
    expect(skipped).toMatchObject({ written: false, value: 64 });
  });
});
