/**
 * The semaphore's options and names are checked by name before any request, and its slots are
 * read back exactly (src/semaphore/options.ts, slots.ts); the benchmark counts overlaps above the
 * permit count the way the claim is stated.
 */
import { ContainerClient } from "@azure/storage-blob";
import { blobSemaphore, MAX_SEMAPHORE_COUNT, type BlobSemaphoreOptions } from "../../../src/index.js";
import { freeSlots, slotBlobName, slotOf, type SlotRow } from "../../../src/semaphore/slots.js";
import { overlapsAbove } from "../../../tools/bench/scenarios/semaphore-contention.js";

// No request is made: the address is never reached.
const container = new ContainerClient("http://127.0.0.1:9/devstoreaccount1/locks");
const make =
  (options: unknown, name = "exports") =>
  () =>
    blobSemaphore(container, name, options as BlobSemaphoreOptions);

describe("semaphore options", () => {
  it.each([
    [undefined, TypeError, /`options` must be an object/],
    [{}, TypeError, /`maxCount` is required/],
    [{ maxCount: "3" }, TypeError, /`maxCount` must be a number/],
    [{ maxCount: 0 }, RangeError, /`maxCount` must be between 1 and 1000/],
    [{ maxCount: 2.5 }, RangeError, /`maxCount` must be a whole number/],
    [{ maxCount: MAX_SEMAPHORE_COUNT + 1 }, RangeError, /`maxCount` must be between 1 and 1000/],
    [
      { maxCount: 2, durationInSeconds: 10 },
      RangeError,
      /`durationInSeconds` must be a whole number of seconds from 15 to 60/,
    ],
    [{ maxCount: 2, pollIntervalInMs: 1 }, RangeError, /`pollIntervalInMs` must be at least 10/],
    [{ maxCount: 2, holderName: "" }, TypeError, /`holderName` must be a non-empty string/],
  ])("%j is refused, naming the option", (options, type, message) => {
    expect(make(options)).toThrow(type);
    expect(make(options)).toThrow(message);
  });

  it.each([
    ["", /`name` must be a non-empty string/],
    ["a/../b", /`name` "a\/..\/b" has a ".." path segment/],
    ["trailing/", /`name` "trailing\/" ends with "\/"/],
    ["x".repeat(1020), /`name` "x{10,}.*" is 1027 characters long/],
  ])("the name %j is refused, naming the rule", (name, message) => {
    expect(make({ maxCount: 3 }, name)).toThrow(TypeError);
    expect(make({ maxCount: 3 }, name)).toThrow(message);
  });

  it("refuses what is not a container client, and keeps the lease options with their defaults", () => {
    expect(() => blobSemaphore({} as ContainerClient, "x", { maxCount: 1 })).toThrow(
      /`containerClient` must be a ContainerClient/,
    );
    const semaphore = blobSemaphore(container, "exports", { maxCount: 3, durationInSeconds: 15 });
    expect(semaphore).toMatchObject({ maxCount: 3, name: "exports", description: "semaphore 'locks/exports'" });
    expect(semaphore.options).toMatchObject({ durationInSeconds: 15, pollIntervalInMs: 500, createIfMissing: true });
  });
});

describe("semaphore slots", () => {
  it("are named <name>/slot-<n> and read back only when exactly that", () => {
    expect(slotBlobName("jobs/exports", 12)).toBe("jobs/exports/slot-12");
    expect(slotOf("jobs/exports", "jobs/exports/slot-12")).toBe(12);
    for (const other of [
      "jobs/exports/slot-012",
      "jobs/exports/slot-1/slot-0",
      "jobs/exports/slot-",
      "jobs/export/slot-1",
      "jobs/exports/slot-1x",
    ]) {
      expect(slotOf("jobs/exports", other)).toBeUndefined();
    }
  });

  it("are free below maxCount unless listed as held; slots never created are free", () => {
    const row = (slot: number, held: boolean): SlotRow => ({
      slot,
      blobName: `s/slot-${slot}`,
      state: held ? "leased" : "available",
      held,
      fencingToken: 1,
      holder: undefined,
    });
    expect(freeSlots([row(0, true), row(1, false), row(3, false), row(5, true)], 4)).toEqual([1, 2, 3]);
    expect(freeSlots([], 2)).toEqual([0, 1]);
  });
});

describe("the benchmark's overlap count", () => {
  const held = (acquiredAt: number, releaseStart: number) => ({
    id: "x",
    waitStart: 0,
    acquiredAt,
    releaseStart,
    releasedAt: releaseStart,
    slot: 0,
    token: 1,
    waitKinds: {},
  });
  it("counts each acquisition that took the holders above the permit count, a release at the same moment first", () => {
    const sections = [held(0, 10), held(5, 20), held(10, 30), held(12, 14), held(25, 40)];
    expect(overlapsAbove(sections, 2)).toBe(1); // at 12: [5,20), [10,30), [12,14)
    expect(overlapsAbove(sections, 3)).toBe(0);
    expect(overlapsAbove(sections, 1)).toBe(4);
  });
});
