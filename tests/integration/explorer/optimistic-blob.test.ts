/**
 * Fault-placement explorer over the blob cells' write paths (tests/support/explorer.ts): every single
 * fault at every request, and a seeded sample of pairs (`ASC_EXPLORE_PAIRS=all`: every pair), for
 * each of optimisticUpdate (create, update, skip-read), writeIfMatch and writeLastWriterWins, on a
 * JSON, a text and a bytes cell; and the stale-cache dimension (another writer since this process's
 * last write; single faults, SDK retries off). The contract: ./optimistic-contract.ts.
 */
import type { ContainerClient } from "@azure/storage-blob";
import { blobBytesCell, blobJsonCell, blobTextCell, writeLastWriterWins } from "../../../src/optimistic/index.js";
import type { VersionedCell } from "../../../src/optimistic/index.js";
import { createExplorer, violationsOf } from "../../support/explorer.js";
import { blobService, uniqueName } from "../../support/storage.js";
import {
  counterOperations,
  EXPLORE_TIMEOUT_IN_MS,
  STALE_CACHE_EXPLORE,
  staleCacheOperations,
  type CounterCell,
} from "./optimistic-contract.js";

/** Pairs sampled per operation and SDK retry setting in `npm test`. */
const PAIRS = 12;

let explorer: Awaited<ReturnType<typeof createExplorer>>;
let container: ContainerClient;
let serial = 0;

beforeAll(async () => {
  explorer = await createExplorer("Optimistic engine, blob cells", ["blob"]);
  container = blobService().getContainerClient(uniqueName("explore"));
  await container.create();
});
afterAll(async () => {
  await explorer.close("optimistic-blob");
  await container.delete();
});

/** A counter in a blob cell of one kind, `encode`d and `decode`d by the test. */
function blobCounter<T>(
  kind: string,
  make: (blob: ReturnType<ContainerClient["getBlockBlobClient"]>) => VersionedCell<T>,
  encode: (n: number) => T,
  decode: (value: T) => number,
): CounterCell<T> {
  const direct = (place: string) => make(container.getBlockBlobClient(place));
  return {
    kind,
    async place(start) {
      const place = `c-${(serial += 1)}`;
      if (start !== undefined) await writeLastWriterWins(direct(place), encode(start));
      return place;
    },
    via: (via, place) =>
      make(
        blobService(via.connectionString, via.storageOptions)
          .getContainerClient(container.containerName)
          .getBlockBlobClient(place),
      ),
    direct,
    count: (value) => (value === undefined ? undefined : decode(value)),
    increment: (current) => encode((current === undefined ? 0 : decode(current)) + 1),
    whole: encode,
  };
}

const counters: CounterCell<unknown>[] = [
  blobCounter<{ n: number }>(
    "blob JSON",
    (blob) => blobJsonCell(blob),
    (n) => ({ n }),
    (v) => v.n,
  ),
  blobCounter<string>("blob text", (blob) => blobTextCell(blob), String, Number),
  blobCounter<Uint8Array>(
    "blob bytes",
    (blob) => blobBytesCell(blob),
    (n) => Buffer.from([n]),
    (v) => v[0]!,
  ),
];

describe.each(counters.map((cell) => [cell.kind, counterOperations(cell)] as const))("%s", (_kind, operations) => {
  it.each(operations.map((operation) => [operation.name, operation] as const))(
    "%s: every fault at every request, and pairs",
    async (_name, operation) => {
      expect(violationsOf(await explorer.explore(operation, { pairs: PAIRS }))).toEqual([]);
    },
    EXPLORE_TIMEOUT_IN_MS,
  );
});

describe.each(counters.map((cell) => [cell.kind, staleCacheOperations(cell)] as const))(
  "%s, stale cache",
  (_kind, operations) => {
    it.each(operations.map((operation) => [operation.name, operation] as const))(
      "%s: every fault at every request",
      async (_name, operation) => {
        expect(violationsOf(await explorer.explore(operation, STALE_CACHE_EXPLORE))).toEqual([]);
      },
      EXPLORE_TIMEOUT_IN_MS,
    );
  },
);
