/**
 * Fault-placement explorer over the container metadata cell's write paths (tests/support/explorer.ts):
 * every single fault at every request (the read, the lease acquire, the ETag check under the lease,
 * Set Container Metadata, the release), and a seeded sample of pairs (`ASC_EXPLORE_PAIRS=all`: every
 * pair), for each of optimisticUpdate (create, update, skip-read), writeIfMatch and
 * writeLastWriterWins, and the stale-cache dimension (another writer since this process's last
 * write; single faults, SDK retries off). The contract: ./optimistic-contract.ts. Each run starts
 * on a container of its own; after each, the container's lease must be free again (a write never
 * leaves it held), and the container is removed.
 */
import type { BlobServiceClient } from "@azure/storage-blob";
import { containerMetadataCell, writeLastWriterWins } from "../../../src/optimistic/index.js";
import { createExplorer, violationsOf, type ExploredOperation } from "../../support/explorer.js";
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

type Metadata = Record<string, string>;
let explorer: Awaited<ReturnType<typeof createExplorer>>;
let service: BlobServiceClient;

beforeAll(async () => {
  explorer = await createExplorer("Optimistic engine, container metadata cell", ["blob"]);
  service = blobService();
});
afterAll(async () => {
  await explorer.close("optimistic-container");
});

const counter: CounterCell<Metadata> = {
  kind: "container metadata",
  async place(start) {
    const place = uniqueName("explore");
    if (start !== undefined) await writeLastWriterWins(counter.direct(place), { n: String(start), keep: "kept" });
    return place;
  },
  via: (via, place) =>
    containerMetadataCell(blobService(via.connectionString, via.storageOptions).getContainerClient(place)),
  direct: (place) => containerMetadataCell(service.getContainerClient(place)),
  count: (value) => (value?.["n"] === undefined ? undefined : Number(value["n"])),
  increment: (current) => ({ ...current, n: String(Number(current?.["n"] ?? 0) + 1) }),
  whole: (n) => ({ n: String(n), keep: "kept" }),
  checkRest: (stored, start) =>
    start !== undefined && stored?.["keep"] !== "kept"
      ? `the rest of the metadata was lost: ${JSON.stringify(stored)}`
      : undefined,
};

/**
 * The operation, judged as well on the container's lease (a write never leaves it held); each run
 * has a container of its own, removed after it is judged (breaking a lease left behind).
 */
function leaseChecked<S extends { readonly place: string }, R>(
  operation: ExploredOperation<S, R>,
): ExploredOperation<S, R> {
  return {
    ...operation,
    async judge(state, result, trace) {
      const verdict = await operation.judge(state, result, trace);
      const container = service.getContainerClient(state.place);
      const lease = (await container.getProperties().catch(() => undefined))?.leaseState;
      await container
        .getBlobLeaseClient()
        .breakLease(0)
        .catch(() => undefined);
      await container.deleteIfExists();
      return lease === "leased" && !verdict.violation
        ? { ...verdict, violation: "the container's lease was left held" }
        : verdict;
    },
  };
}

it.each(counterOperations(counter).map((operation) => [operation.name, operation] as const))(
  "%s: every fault at every request, and pairs",
  async (_name, operation) => {
    expect(violationsOf(await explorer.explore(leaseChecked(operation), { pairs: PAIRS }))).toEqual([]);
  },
  EXPLORE_TIMEOUT_IN_MS,
);

it.each(staleCacheOperations(counter).map((operation) => [operation.name, operation] as const))(
  "%s: every fault at every request",
  async (_name, operation) => {
    expect(violationsOf(await explorer.explore(leaseChecked(operation), STALE_CACHE_EXPLORE))).toEqual([]);
  },
  EXPLORE_TIMEOUT_IN_MS,
);
