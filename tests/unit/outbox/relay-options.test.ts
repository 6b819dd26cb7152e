/**
 * `OutboxRelay`'s options (issue 25): each bad option is refused by name, with a TypeError or a
 * RangeError, when the relay is made, before any request; a relay starts once, and stopping one that
 * never started resolves at once.
 */
import type { TableClient } from "@azure/data-tables";
import type { ContainerClient } from "@azure/storage-blob";
import type { QueueClient } from "@azure/storage-queue";
import { ClaimCheck, OutboxRelay, type OutboxRelayOptions } from "../../../src/index.js";

const table = { tableName: "orders", listEntities: () => undefined } as unknown as TableClient;
const queue = { name: "orders", sendMessage: () => undefined } as unknown as QueueClient;
const container = { containerName: "c", getBlockBlobClient: () => ({}) } as unknown as ContainerClient;
const good: OutboxRelayOptions = { claimCheck: new ClaimCheck(container), lockContainer: container };

describe("OutboxRelay options", () => {
  it.each([
    [{ claimCheck: undefined }, TypeError, /`claimCheck` must be a ClaimCheck/],
    [{ lockContainer: {} }, TypeError, /`lockContainer` must be a ContainerClient/],
    [{ name: "a b" }, RangeError, /`name` "a b" must be 1 to 40 letters/],
    [{ partitionKeyRange: "a-m" }, TypeError, /`partitionKeyRange` must be an object/],
    [{ partitionKeyRange: { from: 1 } }, TypeError, /`partitionKeyRange.from` must be a string/],
    [{ partitionKeyRange: { from: "m", to: "a" } }, RangeError, /`partitionKeyRange.from` \("m"\) must sort before/],
    [{ pollIntervalInMs: 0 }, RangeError, /`pollIntervalInMs`/],
    [{ pollIntervalInMs: 5_000, maxPollIntervalInMs: 1_000 }, RangeError, /`maxPollIntervalInMs`/],
    [{ leaseDurationInSeconds: 10 }, RangeError, /`leaseDurationInSeconds`/],
    [{ requestTimeoutInMs: "10s" }, TypeError, /`requestTimeoutInMs` must be a number/],
    [{ maxConcurrentPartitions: 1.5 }, RangeError, /`maxConcurrentPartitions`/],
    [{ messageTimeToLive: -1 }, RangeError, /`messageTimeToLive`/],
    [{ identity: "" }, TypeError, /`identity` must be a non-empty string/],
    [{ keepAlive: "yes" }, TypeError, /`keepAlive` must be a boolean/],
    [{ abortSignal: "stop" }, TypeError, /`abortSignal` must be an AbortSignal/],
  ])("refuses %j", (bad, type, message) => {
    const make = () => new OutboxRelay(table, queue, { ...good, ...bad } as OutboxRelayOptions);
    expect(make).toThrow(type);
    expect(make).toThrow(message);
  });

  it("refuses clients that are not the SDK's", () => {
    expect(() => new OutboxRelay({} as TableClient, queue, good)).toThrow(/`tableClient` must be a TableClient/);
    expect(() => new OutboxRelay(table, {} as QueueClient, good)).toThrow(/`queueClient` must be a QueueClient/);
    expect(() => new OutboxRelay(table, queue, undefined as never)).toThrow(TypeError);
  });

  it("a relay stopped before it started is stopped, and cannot start", async () => {
    const relay = new OutboxRelay(table, queue, good);
    expect(relay.status).toBe("idle");
    await relay.stop();
    expect(relay.status).toBe("stopped");
    await expect(relay.start()).rejects.toThrow(/a relay starts once/);
  });
});
