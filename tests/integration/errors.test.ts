import { classifyError, wrapStorageError } from "../../src/retry/index.js";
import { isStorageRequestError } from "../../src/index.js";
import { readRestError, serviceCodeOf, statusOf } from "../../src/error-codes.js";
import { blobService, connectionString, queueService, tableClient, uniqueName } from "../support/storage.js";

describe("errors from a real Azurite", () => {
  it("blob: a stale If-Match gives 412 ConditionNotMet", async () => {
    const container = blobService().getContainerClient(uniqueName("err"));
    await container.create();
    const blob = container.getBlockBlobClient("x");
    await blob.upload("1", 1);
    const error = await blob
      .upload("2", 1, { conditions: { ifMatch: '"0x8D0000000000000"' } })
      .catch((e: unknown) => e);
    expect(readRestError(error)).toMatchObject({ statusCode: 412, serviceCode: "ConditionNotMet" });
    expect(classifyError(error)).toMatchObject({ transient: false, kind: "client" });
  });

  it("tables: the service code is read even though the SDK leaves `code` undefined", async () => {
    const table = tableClient(uniqueName("err"));
    await table.createTable();
    await table.createEntity({ partitionKey: "p", rowKey: "r", n: 1 });
    const stale = await table.getEntity("p", "r");
    await table.updateEntity({ partitionKey: "p", rowKey: "r", n: 2 }, "Replace", { etag: stale.etag });
    const error = await table
      .updateEntity({ partitionKey: "p", rowKey: "r", n: 3 }, "Replace", { etag: stale.etag })
      .catch((e: unknown) => e);
    expect((error as { code?: string }).code).toBeUndefined(); // what the SDK does
    expect(statusOf(error)).toBe(412);
    expect(serviceCodeOf(error)).toBe("UpdateConditionNotSatisfied");
    expect(readRestError(error)?.message).toMatch(
      /^The update condition specified in the request was not satisfied\.$/,
    );

    const duplicate = await table.createEntity({ partitionKey: "p", rowKey: "r" }).catch((e: unknown) => e);
    expect(serviceCodeOf(duplicate)).toBe("EntityAlreadyExists");
  });

  // A receipt the service never issued is malformed to the service (400 InvalidQueryParameterValue,
  // recorded: docs/service-conformance.md); Azurite calls it a mismatch.
  // A receipt the service never issued is malformed to the service (400 InvalidQueryParameterValue,
  // recorded: docs/service-conformance.md); Azurite calls it a mismatch.
  it("queues: a stale pop receipt gives 400 PopReceiptMismatch [Azurite only]", async () => {
    const queue = queueService().getQueueClient(uniqueName("err"));
    await queue.create();
    const sent = await queue.sendMessage("m");
    const error = await queue.deleteMessage(sent.messageId, "AgAAAAMAAAAAAAAA").catch((e: unknown) => e);
    expect(readRestError(error)).toMatchObject({ statusCode: 400, serviceCode: "PopReceiptMismatch" });
  });

  it("a wrapped error says what failed and never carries the account key", async () => {
    const badKey = connectionString().replace(
      /AccountKey=[^;]+/,
      `AccountKey=${Buffer.from("wrong-key-wrong-key").toString("base64")}`,
    );
    const error = await blobService(badKey, { retryOptions: { maxTries: 1 } })
      .getContainerClient(uniqueName("auth"))
      .create()
      .catch((e: unknown) => e);
    const wrapped = wrapStorageError(error, "create the container");
    expect(isStorageRequestError(wrapped)).toBe(true);
    expect(wrapped).toMatchObject({ statusCode: 403, transient: false });
    const text = `${(wrapped as Error).message} ${JSON.stringify(wrapped)}`;
    expect(text).not.toMatch(/AccountKey=(?!<redacted>)/);
    expect(text).not.toContain("Eby8vdM02xNOcqFl");
  });
});
