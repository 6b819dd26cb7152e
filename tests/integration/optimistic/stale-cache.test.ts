/**
 * The write-skip cache is a guess (issue 21, defect 1; reproduction r14): this process wrote the cell
 * last, then another process wrote it, and this process's next update starts from the version it
 * remembers. A write proves or refutes that version (If-Match); a `mutate` that writes nothing
 * (`SKIP_WRITE`) or throws must not be settled on it either: the engine reads first. For every cell
 * kind, alone and in a coalesced round, against Azurite; the other process is a writer outside the
 * library (a plain SDK call), which also drops the write history.
 */
import type { ContainerClient } from "@azure/storage-blob";
import type { TableClient } from "@azure/data-tables";
import {
  blobBytesCell,
  blobJsonCell,
  blobTextCell,
  containerMetadataCell,
  optimisticUpdate,
  readCell,
  SKIP_WRITE,
  tableEntityCell,
  type Mutation,
  type VersionedCell,
} from "../../../src/optimistic/index.js";
import { fixedBackoff } from "../../../src/retry/index.js";
import { blobService, faultProxyFor, tableClient, uniqueName } from "../../support/storage.js";

const quick = { backoff: fixedBackoff({ delayInMs: 2 }) };
let container: ContainerClient;
let table: TableClient;
let serial = 0;

beforeAll(async () => {
  container = blobService().getContainerClient(uniqueName("stale"));
  await container.create();
  table = tableClient(uniqueName("stale"));
  await table.createTable();
});
afterAll(async () => {
  await container.delete();
  await table.deleteTable();
});

/** A counter in one cell kind: the cell, how a value holds `n`, and another process's write. */
interface Counter<T> {
  readonly cell: VersionedCell<T>;
  whole(n: number): T;
  count(value: T | undefined): number | undefined;
  /** Another process (outside the library) stores `n`. */
  otherWrites(n: number): Promise<void>;
  /** Leaves nothing behind. */
  remove?(): Promise<void>;
}

type Kind = readonly [string, () => Promise<Counter<unknown>>];

function blobCounter<T>(
  make: (blob: ReturnType<ContainerClient["getBlockBlobClient"]>) => VersionedCell<T>,
  encode: (n: number) => T,
  decode: (v: T) => number,
  raw: (n: number) => string | Buffer,
) {
  return async (): Promise<Counter<T>> => {
    const blob = container.getBlockBlobClient(`c-${(serial += 1)}`);
    return {
      cell: make(blob),
      whole: encode,
      count: (value) => (value === undefined ? undefined : decode(value)),
      async otherWrites(n) {
        const body = raw(n);
        await blob.upload(body, body.length);
      },
    };
  };
}

function entityCounter(mode: "Replace" | "Merge") {
  return async (): Promise<Counter<{ n?: number; keep?: string }>> => {
    const rowKey = `e-${(serial += 1)}`;
    return {
      cell: tableEntityCell<{ n?: number; keep?: string }>(table, "stale", rowKey, { mode }),
      whole: (n) => ({ n, keep: "kept" }),
      count: (value) => value?.n,
      otherWrites: async (n) =>
        void (await table.upsertEntity({ partitionKey: "stale", rowKey, n, keep: "kept" }, "Replace")),
    };
  };
}

async function metadataCounter(): Promise<Counter<Record<string, string>>> {
  const client = blobService().getContainerClient(uniqueName("stalemeta"));
  await client.create();
  return {
    cell: containerMetadataCell(client),
    whole: (n) => ({ n: String(n), keep: "kept" }),
    count: (value) => (value?.["n"] === undefined ? undefined : Number(value["n"])),
    otherWrites: async (n) => void (await client.setMetadata({ n: String(n), keep: "kept" })),
    remove: async () => void (await client.delete()),
  };
}

const kinds: Kind[] = [
  [
    "blob JSON",
    blobCounter(
      (b) => blobJsonCell<{ n: number }>(b),
      (n) => ({ n }),
      (v) => v.n,
      (n) => JSON.stringify({ n }),
    ),
  ],
  ["blob text", blobCounter((b) => blobTextCell(b), String, Number, String)],
  [
    "blob bytes",
    blobCounter(
      (b) => blobBytesCell(b),
      (n) => Buffer.from([n]),
      (v) => v[0]!,
      (n) => Buffer.from([n]),
    ),
  ],
  ["table Replace", entityCounter("Replace")],
  ["table Merge", entityCounter("Merge")],
  ["container metadata", metadataCounter],
];

/** This process writes `n` (so it is cached), then another process writes `other`. */
async function staleAfter<T>(counter: Counter<T>, n: number, other: number): Promise<void> {
  await optimisticUpdate(counter.cell, () => counter.whole(n));
  await counter.otherWrites(other);
}

async function stored<T>(counter: Counter<T>): Promise<number | undefined> {
  const read = await readCell(counter.cell);
  return counter.count(read.exists ? read.value : undefined);
}

describe.each(kinds)("%s: an update after another process wrote since this process's last write", (_kind, make) => {
  let counter: Counter<unknown>;
  beforeEach(async () => {
    counter = await make();
  });
  afterEach(async () => {
    await counter.remove?.();
  });
  /** Adds one below 10, skips at 10 or more (the r14 reproduction's mutate). */
  const capped: Mutation<unknown> = (current) => {
    const n = counter.count(current) ?? 0;
    return n >= 10 ? SKIP_WRITE : counter.whole(n + 1);
  };

  it("a mutate that would skip on the cached value runs on the current one, and writes", async () => {
    await staleAfter(counter, 10, 0);
    const result = await optimisticUpdate(counter.cell, capped, quick);
    expect(result.written).toBe(true);
    expect(counter.count(result.value)).toBe(1);
    expect(await stored(counter)).toBe(1);
  });

  it("a skip reports the cell's current value and ETag, not the cached one", async () => {
    await staleAfter(counter, 10, 20);
    const result = await optimisticUpdate(counter.cell, () => SKIP_WRITE, quick);
    expect(result.written).toBe(false);
    expect(counter.count(result.value)).toBe(20);
    const now = await readCell(counter.cell);
    expect(now.exists && now.etag).toBe(result.etag);
  });

  it("a mutate that returns the same value writes it on the current version", async () => {
    await staleAfter(counter, 10, 3);
    const seen: (number | undefined)[] = [];
    const result = await optimisticUpdate(
      counter.cell,
      (current) => (seen.push(counter.count(current)), counter.whole(counter.count(current)!)),
      quick,
    );
    expect(result.written).toBe(true);
    expect(counter.count(result.value)).toBe(3);
    expect(seen.at(-1)).toBe(3);
    expect(await stored(counter)).toBe(3);
  });

  it("a mutate that throws on the cached value is run again on the current one", async () => {
    await staleAfter(counter, 10, 0);
    const result = await optimisticUpdate(
      counter.cell,
      (current) => {
        const n = counter.count(current)!;
        if (n >= 10) throw new RangeError("limit reached");
        return counter.whole(n + 1);
      },
      quick,
    );
    expect(counter.count(result.value)).toBe(1);
    expect(await stored(counter)).toBe(1);
  });

  it("callers sharing a round (one skips, one throws, one skips then writes) all decide on the current value", async () => {
    await staleAfter(counter, 10, 5);
    const limit = new RangeError("limit reached");
    const [skipper, thrower, bump] = await Promise.allSettled([
      optimisticUpdate(
        counter.cell,
        (current) => (counter.count(current)! >= 5 ? SKIP_WRITE : counter.whole(99)),
        quick,
      ),
      optimisticUpdate(
        counter.cell,
        (current) => {
          if (counter.count(current)! >= 10) throw limit;
          return SKIP_WRITE;
        },
        quick,
      ),
      optimisticUpdate(counter.cell, capped, quick),
    ]);
    expect(skipper).toMatchObject({ status: "fulfilled", value: { written: false } });
    expect(counter.count((skipper as PromiseFulfilledResult<{ value: unknown }>).value.value)).toBe(5);
    expect(thrower).toMatchObject({ status: "fulfilled", value: { written: false } });
    expect(bump).toMatchObject({ status: "fulfilled", value: { written: true, coalesced: 1 } });
    expect(await stored(counter)).toBe(6);
  });
});

describe("the uncontended path stays as fast (requests counted at the network)", () => {
  it("a change after this process's own write sends only the write; a skip sends one conditional read", async () => {
    const { proxy, connectionString } = await faultProxyFor("blob");
    await using _ = proxy;
    const cell = blobJsonCell<number>(
      blobService(connectionString).getContainerClient(container.containerName).getBlockBlobClient("fast.json"),
    );
    await optimisticUpdate(cell, () => 1);
    proxy.clearLog();
    expect(await optimisticUpdate(cell, (n) => n! + 1)).toMatchObject({ written: true, value: 2, attempts: 1 });
    expect(proxy.requests.map((r) => `${r.method} ${r.statusCode}`)).toEqual(["PUT 201"]);
    proxy.clearLog();
    expect(await optimisticUpdate(cell, () => SKIP_WRITE)).toMatchObject({ written: false, value: 2, attempts: 1 });
    expect(proxy.requests.map((r) => `${r.method} ${r.statusCode}`)).toEqual(["GET 304"]);
  });
});
