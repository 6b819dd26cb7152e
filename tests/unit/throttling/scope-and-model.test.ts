/**
 * What a request is throttled by (one parser for the model, the policy and the send sites), what an
 * answer says about capacity, and the throttling model's buckets on a fake clock.
 */
import { partitionKeyInBody, throttleScopeOf, verdictOfAnswer } from "../../../src/index.js";
import { scopeOfCell } from "../../../src/optimistic/throttled-cell.js";
import { ThrottlingModelState, throttledAnswer } from "../../../src/testing/throttling-model.js";

describe("throttleScopeOf", () => {
  it.each([
    ["https://acct.table.core.windows.net/orders(PartitionKey='p1',RowKey='r')", {}, "table:acct/orders/p1"],
    ["https://acct.table.core.windows.net/orders(PartitionKey='it''s',RowKey='r')", {}, "table:acct/orders/it's"],
    ["https://acct.table.core.windows.net/orders()?$filter=PartitionKey%20eq%20'p2'", {}, "table:acct/orders/p2"],
    ["https://acct.table.core.windows.net/orders()?$filter=PartitionKey eq 'a' or PartitionKey eq 'b'", {}, undefined],
    [
      "https://acct.table.core.windows.net/orders",
      { body: '{"PartitionKey":"p3","RowKey":"r"}' },
      "table:acct/orders/p3",
    ],
    ["https://acct.table.core.windows.net/Tables('orders')", {}, undefined],
    ["https://acct.queue.core.windows.net/jobs/messages/id-1?popreceipt=x", {}, "queue:acct/jobs"],
    ["https://acct.blob.core.windows.net/c/a/b%20c.json?comp=lease", {}, "blob:acct/c/a/b c.json"],
    ["https://acct.blob.core.windows.net/c?restype=container", {}, "blob:acct/c"],
    ["https://acct.file.core.windows.net/share/dir/f.txt", {}, "file:acct/share/dir/f.txt"],
    [
      "http://127.0.0.1:10002/devstoreaccount1/orders(PartitionKey='p',RowKey='r')",
      {},
      "table:devstoreaccount1/orders/p",
    ],
    ["http://127.0.0.1:10001/devstoreaccount1/jobs/messages", {}, "queue:devstoreaccount1/jobs"],
    ["http://127.0.0.1:51234/devstoreaccount1/orders", { service: "table" as const, partitionKey: "pk" }, "table:devstoreaccount1/orders/pk"], // prettier-ignore
  ])("%s → %s", (url, options, partition) => {
    const scope = throttleScopeOf(url, options);
    expect(scope.partition).toBe(partition);
    expect(scope.account).toMatch(/^account:(acct|devstoreaccount1)$/);
  });

  it("reads an entity group transaction's PartitionKey from its body", () => {
    const batch = [
      "--batch_1",
      "Content-Type: multipart/mixed; boundary=changeset_1",
      "",
      "--changeset_1",
      "PUT http://127.0.0.1:10002/devstoreaccount1/orders(PartitionKey='p%2F1',RowKey='r') HTTP/1.1",
      "",
      '{"PartitionKey":"p/1","RowKey":"r"}',
    ].join("\r\n");
    expect(partitionKeyInBody(batch)).toBe("p/1");
    expect(throttleScopeOf("http://127.0.0.1:10002/devstoreaccount1/$batch", { body: batch }).partition).toBe(
      "table:devstoreaccount1/orders/p/1",
    );
    expect(() => throttleScopeOf("not a url")).toThrow(/`url` must be an absolute URL/);
  });

  it("keys the library's cells by their partition", () => {
    expect(
      scopeOfCell(`table-entity-Merge|http://127.0.0.1:1/devstoreaccount1/t|${JSON.stringify(["p|x", "r"])}`),
    ).toEqual({
      account: "account:devstoreaccount1",
      partition: "table:devstoreaccount1/t/p|x",
    });
    expect(scopeOfCell("blob-json|https://acct.blob.core.windows.net/c/b.json").partition).toBe("blob:acct/c/b.json");
    expect(scopeOfCell("my-store|greeting")).toEqual({ account: "account:", partition: "cell:my-store|greeting" });
  });
});

describe("verdictOfAnswer", () => {
  it.each([
    [{ statusCode: 503, serviceCode: "ServerBusy", message: "The server is busy." }, "partition"],
    [{ statusCode: 503, serviceCode: "ServerBusy", message: "Egress is over the account limit." }, "account"],
    [{ statusCode: 503, serviceCode: "ServiceUnavailable" }, "none"],
    [{ statusCode: 429 }, "partition"],
    [{ statusCode: 500, serviceCode: "OperationTimedOut" }, "partition"],
    [{ statusCode: 500, serviceCode: "InternalError" }, "none"],
    [{ statusCode: 412, serviceCode: "ConditionNotMet" }, "served"],
    [{ statusCode: 200 }, "served"],
    [{ statusCode: undefined }, "none"],
  ])("%j → %s", (answer, verdict) => {
    expect(verdictOfAnswer(answer)).toBe(verdict);
  });
});

describe("the throttling model", () => {
  const request = (path: string, body?: string) => ({
    method: body === undefined ? "PUT" : "POST",
    url: `http://127.0.0.1:10002/devstoreaccount1${path}`,
    headers: { dataserviceversion: "3.0", accept: "application/json;odata=minimalmetadata" },
    body,
  });
  const entity = (pk: string) => request(`/t(PartitionKey='${pk}',RowKey='r')`);

  it("serves each partition at its rate after a burst of burstInMs, and counts per partition", () => {
    let now = 0;
    const model = new ThrottlingModelState({ partitionRatePerSec: 100, burstInMs: 100 }, () => now);
    const kinds = Array.from({ length: 15 }, () => model.decide(entity("a")).kind);
    expect(kinds.filter((k) => k === "admit")).toHaveLength(10); // the burst: 100 ms of 100/s
    expect(model.decide(entity("b")).kind).toBe("admit"); // another partition is not affected
    now += 50; // 5 more tokens
    expect(Array.from({ length: 8 }, () => model.decide(entity("a")).kind).filter((k) => k === "admit")).toHaveLength(
      5,
    );
    expect(model.stats()).toMatchObject({
      admitted: 16,
      serverBusy: 8,
      partitions: { "table:devstoreaccount1/t/a": { admitted: 15, refused: 8 } },
    });
  });

  it("limits the account over all partitions, and says so in its refusal", () => {
    const model = new ThrottlingModelState({ partitionRatePerSec: 1000, accountRatePerSec: 10, burstInMs: 100 }, () => 0); // prettier-ignore
    expect(model.decide(entity("a")).kind).toBe("admit");
    const refused = model.decide(entity("b"));
    expect(refused).toMatchObject({ kind: "refuse", statusCode: 503, account: true });
    expect(model.stats().accountRefusals).toBe(1);
  });

  it("counts a transaction as its operations, and changes rates at run time", () => {
    let now = 0;
    const model = new ThrottlingModelState({ partitionRatePerSec: 100, burstInMs: 1000 }, () => now);
    const ops = (n: number) =>
      Array.from({ length: n }, () => "PUT http://127.0.0.1:10002/devstoreaccount1/t(PartitionKey='a',RowKey='r') HTTP/1.1").join("\r\n"); // prettier-ignore
    expect(model.decide(request("/$batch", ops(60))).kind).toBe("admit");
    expect(model.decide(request("/$batch", ops(60))).kind).toBe("refuse"); // 40 tokens left
    model.setRates({ partitionRatePerSec: 25 }); // a quarter
    now += 1000;
    expect(model.rates.partitionRatePerSec).toBe(25);
    expect(model.decide(request("/$batch", ops(30))).kind).toBe("admit"); // min(cost, bucket size) is enough
    expect(model.decide(entity("a")).kind).toBe("refuse");
  });

  it("answers a share of refusals 500 OperationTimedOut, applied first when asked", () => {
    const model = new ThrottlingModelState(
      { partitionRatePerSec: 1, burstInMs: 1, operationTimedOutShare: 1, timedOutAfterApply: true },
      () => 0,
    );
    model.decide(entity("a"));
    expect(model.decide(entity("a"))).toEqual({ kind: "refuse", statusCode: 500, account: false, afterApply: true });
  });

  it("shapes its answers as the service does: Table in the JSON body only, Blob and Queue with x-ms-error-code and XML", () => {
    const table = throttledAnswer({ kind: "refuse", statusCode: 503, account: false, afterApply: false }, { headers: { accept: "application/json" } }, true); // prettier-ignore
    expect(table.headers["x-ms-error-code"]).toBeUndefined();
    const parsed = JSON.parse(table.body) as { "odata.error": { code: string; message: { value: string } } };
    expect(parsed["odata.error"].code).toBe("ServerBusy");
    expect(parsed["odata.error"].message.value).toMatch(/^The server is currently unable to receive requests\. Please retry your request\.\nRequestId:[0-9a-f-]+\nTime:/); // prettier-ignore
    const blob = throttledAnswer({ kind: "refuse", statusCode: 503, account: true, afterApply: false }, { headers: {} }, false); // prettier-ignore
    expect(blob.headers["x-ms-error-code"]).toBe("ServerBusy");
    expect(blob.body).toMatch(/^\uFEFF<\?xml version="1\.0" encoding="utf-8"\?><Error><Code>ServerBusy<\/Code><Message>Operations per second is over the account limit\.\nRequestId:/); // prettier-ignore
    const timedOut = throttledAnswer({ kind: "refuse", statusCode: 500, account: false, afterApply: true }, { headers: {} }, false); // prettier-ignore
    expect([timedOut.statusCode, timedOut.headers["x-ms-error-code"]]).toEqual([500, "OperationTimedOut"]);
  });

  it("rejects bad options naming them", () => {
    expect(() => new ThrottlingModelState({ partitionRatePerSec: 0 })).toThrow(/`throttling.partitionRatePerSec`/);
    expect(() => new ThrottlingModelState({ operationTimedOutShare: 2 })).toThrow(
      /`throttling.operationTimedOutShare`/,
    );
  });
});

/**
 * Ground truth written by the service's team, not here: the throttling rows of "Common REST API
 * error codes" (https://learn.microsoft.com/en-us/rest/api/storageservices/common-rest-api-error-codes),
 * copied as the page has them (error code, HTTP status, user message). Every answer the model can
 * give must be one of these rows, and every row must read as the throttling it is.
 */
const DOCUMENTED_THROTTLING_ROWS: readonly (readonly [code: string, status: number, message: string])[] = [
  ["OperationTimedOut", 500, "The operation could not be completed within the permitted time."],
  ["ServerBusy", 503, "The server is currently unable to receive requests. Please retry your request."],
  ["ServerBusy", 503, "Ingress is over the account limit."],
  ["ServerBusy", 503, "Egress is over the account limit."],
  ["ServerBusy", 503, "Operations per second is over the account limit."],
];

describe("the throttling model against the documented answers (Common REST API error codes)", () => {
  const decisions = [503, 500].flatMap(
    (statusCode) =>
    [false, true].map((account) => ({ kind: "refuse" as const, statusCode: statusCode as 503 | 500, account, afterApply: false })), // prettier-ignore
  );

  it.each(decisions)("answer %o is a documented row, for Table (JSON) and Blob/Queue (XML)", (decision) => {
    const table = throttledAnswer(decision, { headers: { accept: "application/json;odata=nometadata" } }, true);
    const { code, message } = (JSON.parse(table.body) as { "odata.error": { code: string; message: { value: string } } })["odata.error"]; // prettier-ignore
    const xml = throttledAnswer(decision, { headers: {} }, false);
    const [, xmlCode, xmlMessage] = /<Error><Code>([^<]+)<\/Code><Message>([^<]+)<\/Message><\/Error>$/.exec(xml.body)!;
    for (const [status, answerCode, text] of [
      [table.statusCode, code, message.value],
      [xml.statusCode, xmlCode!, xmlMessage!],
    ] as const) {
      const row = [answerCode, status, text.split("\n")[0]];
      expect(DOCUMENTED_THROTTLING_ROWS).toContainEqual(row);
    }
    expect(xml.headers["x-ms-error-code"]).toBe(xmlCode);
  });

  it.each(DOCUMENTED_THROTTLING_ROWS)(
    "%s %i %s reads as throttling of the right scope",
    (serviceCode, statusCode, message) => {
      const scope = message.includes("account limit") ? "account" : "partition";
      expect(verdictOfAnswer({ statusCode, serviceCode, message: `${message}\nRequestId:r\nTime:t` })).toBe(scope);
    },
  );
});
