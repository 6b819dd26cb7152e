/**
 * Following continuation tokens against a real Azurite, with the round trips counted by the library
 * checked against the requests a proxy saw on the wire.
 */
import { keyFilter, queryEntities, queryEntityPages, writeBatch } from "../../../src/tables/index.js";
import { faultProxyFor, tableClient, uniqueName } from "../../support/storage.js";

describe("queries", () => {
  it("follows continuation tokens and counts one round trip per response [Azurite only]", async () => {
    const { proxy, connectionString } = await faultProxyFor("table");
    try {
      const client = tableClient(uniqueName("query"), connectionString);
      await client.createTable();
      const actions = Array.from(
        { length: 25 },
        (_, i) => ["upsert", { partitionKey: "p", rowKey: `AGE:${String(i).padStart(3, "0")}`, i }] as const,
      );
      await writeBatch(client, [...actions, ["upsert", { partitionKey: "other", rowKey: "x" }]]);

      proxy.clearLog();
      const all = await queryEntities(client, {
        filter: keyFilter({ partitionKey: "p", rowKeyPrefix: "AGE:" }),
        pageSize: 10,
      });
      expect(all.entities).toHaveLength(25);
      expect(all.roundTrips).toBe(3);
      expect(all.continuationToken).toBeUndefined();
      expect(all.shape.kind).toBe("row-range-scan");
      expect(proxy.requests.filter((r) => r.method === "GET")).toHaveLength(3);

      // Stop early, then resume where it stopped.
      const first = await queryEntities(client, { filter: "PartitionKey eq 'p'", pageSize: 10, maxRoundTrips: 1 });
      expect(first.entities).toHaveLength(10);
      expect(first.continuationToken).toEqual(expect.any(String));
      const rest = await queryEntities(client, {
        filter: "PartitionKey eq 'p'",
        pageSize: 10,
        continuationToken: first.continuationToken!,
      });
      expect(rest.entities.map((e) => e.rowKey)).toEqual(actions.slice(10).map(([, e]) => e.rowKey));
      expect(rest.roundTrips).toBe(2);

      const pages: number[] = [];
      for await (const page of queryEntityPages(client, { pageSize: 20 })) pages.push(page.roundTrip);
      expect(pages).toEqual([1, 2]);
      const scan = await queryEntities(client, { filter: "i ge 20" });
      expect(scan.shape.kind).toBe("table-scan");
      expect(scan.entities).toHaveLength(5);
    } finally {
      await proxy.close();
    }
  });
});
