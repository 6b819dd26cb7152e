/**
 * Lock names that the URL or the service would turn into another name are refused before any
 * request, with a TypeError naming the rule; the table lock's generated names never break the rules.
 */
import { expect } from "@jest/globals";
import { BlobServiceClient } from "@azure/storage-blob";
import { TableClient } from "@azure/data-tables";
import { blobLock, tableLock } from "../../../src/lease/index.js";

// Building clients sends nothing: these point at a port where nothing listens.
const container = BlobServiceClient.fromConnectionString(
  "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:9/devstoreaccount1;",
).getContainerClient("locks");
const table = new TableClient("http://127.0.0.1:9/devstoreaccount1", "orders", { allowInsecureConnection: true });

describe("lock names", () => {
  it.each([
    ["./dot", "./dot", /"\." path segment/],
    ["dir/../x", "dir/../x", /"\.\." path segment/],
    ["..", "..", /"\.\." path segment/],
    ["a/.", "a/.", /"\." path segment/],
    ["a\\b", "a\\b", /backslash/],
    ["dot.", "dot.", /may not end with "\." or "\/"/],
    ["dir/", "dir/", /may not end with "\." or "\/"/],
    ["a lone surrogate", "a\uD800", /lone surrogate/],
    ["a tab", "tab\there", /control character/],
    ["1025 characters", "x".repeat(1025), /at most 1024/],
    ["255 segments", Array.from({ length: 255 }, () => "s").join("/"), /at most 254/],
  ])("%s is refused with a TypeError naming the rule", (_, name, rule) => {
    expect(() => blobLock(container, name)).toThrow(TypeError);
    expect(() => blobLock(container, name)).toThrow(rule);
  });

  it("names that mean exactly one blob are accepted", () => {
    for (const name of ["dot", ".hidden", "a.b/c..d", "jobs/nightly", "tables/orders/%2E", "x".repeat(1024)]) {
      expect(() => blobLock(container, name)).not.toThrow();
    }
  });

  it("a table lock's blob name encodes keys so that no key makes a refused or shared name", () => {
    const name = (scope: { partitionKey: string; rowKey?: string }) =>
      tableLock(container, table, { scope }).lock.leasable.description;
    expect(name({ partitionKey: "." })).toBe("blob 'locks/tables/orders/%2E'");
    expect(name({ partitionKey: "..", rowKey: "v1." })).toBe("blob 'locks/tables/orders/%2E%2E/v1%2E'");
    expect(name({ partitionKey: "v1.2", rowKey: "a b" })).toBe("blob 'locks/tables/orders/v1.2/a%20b'");
    expect(() => tableLock(container, table, { scope: { partitionKey: "a/b" } })).toThrow(
      expect.objectContaining({ name: "TableKeyError" }),
    );
    expect(() => tableLock(container, table, { blobName: "tables/../orders" })).toThrow(TypeError);
  });
});
