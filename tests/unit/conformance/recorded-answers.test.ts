/**
 * The service's recorded answers, replayed to the real SDK clients and read by the library: the
 * other half of the service conformance suite (tests/integration/conformance.test.ts checks that
 * Azurite answers like the service; this checks that the library reads the service's own answers
 * right, including the ones Azurite shapes differently). The answers are extracted from the
 * recordings named beside each (status, the headers that matter, the error body), served by a
 * local HTTP server in place of the service.
 *
 * The case that matters most: the Table service sends no `x-ms-error-code` header, only the JSON
 * body (Azurite sends both), so every table decision made on a code (ResourceNotFound vs
 * TableNotFound, the failed operation of a transaction) is checked here on the body alone.
 *
 * The last cases hold the fault proxy's stand-in answers (503 ServerBusy, 500 OperationTimedOut),
 * which no account gives on demand, to the shape "Common REST API error codes" documents.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { AzureNamedKeyCredential, TableClient } from "@azure/data-tables";
import { ContainerClient, StorageSharedKeyCredential } from "@azure/storage-blob";
import { QueueClient, StorageSharedKeyCredential as QueueKeyCredential } from "@azure/storage-queue";
import { blobLeasable } from "../../../src/lease/index.js";
import { blobTextCell, NOT_MODIFIED, tableEntityCell } from "../../../src/optimistic/index.js";
import { classifyError } from "../../../src/retry/index.js";
import { serviceCodeOf, statusOf } from "../../../src/error-codes.js";
import { TableIdempotencyStore } from "../../../src/idempotency/index.js";
import { writeAtomic, isTableTransactionError } from "../../../src/tables/index.js";
import { createFaultProxy } from "../../../src/testing/index.js";
import { isWriteConflict } from "../../../src/optimistic/write-outcome.js";
import { isMessageGone, isReceiptMismatch, isResourceFailure } from "../../../src/queue/requests.js";
import { mayHaveBeenApplied } from "../../../src/retry/classify.js";

/** An answer of the service, as recorded. */
interface Answer {
  readonly status: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
}

const JSON_TYPE = { "content-type": "application/json;odata=minimalmetadata;streaming=true;charset=utf-8" };
const odataError = (code: string, value: string) =>
  JSON.stringify({ "odata.error": { code, message: { lang: "en-US", value: `${value}\nRequestId:r\nTime:t` } } });
const xmlError = (code: string) =>
  `\uFEFF<?xml version="1.0" encoding="utf-8"?><Error><Code>${code}</Code><Message>m\nRequestId:r</Message></Error>`;

/** The HTTP answer an SDK error carries. */
function answerOf(error: unknown): { headers: { get(name: string): string | undefined }; bodyAsText?: string | null } {
  return (error as { response: { headers: { get(name: string): string | undefined }; bodyAsText?: string | null } })
    .response;
}

/** A stand-in for the service: answers each request with the first scripted answer whose key matches. */
class RecordedService {
  readonly #server: Server;
  #script: { readonly match: RegExp; readonly answer: Answer }[] = [];
  readonly requests: string[] = [];

  constructor() {
    this.#server = createServer((req: IncomingMessage, res) => {
      req.resume();
      req.on("end", () => {
        const key = `${req.method} ${decodeURIComponent(req.url ?? "")}`;
        this.requests.push(key);
        const found = this.#script.find((entry) => entry.match.test(key));
        const answer = found?.answer ?? { status: 500, body: `no scripted answer for ${key}` };
        res.writeHead(answer.status, { "x-ms-request-id": "recorded", ...answer.headers });
        res.end(answer.body ?? "");
      });
    });
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/acct`;
  }

  script(...entries: [RegExp, Answer][]): void {
    this.#script = entries.map(([match, answer]) => ({ match, answer }));
    this.requests.length = 0;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

const KEY = Buffer.from("not a secret: a key for a local stand-in").toString("base64");
let service: RecordedService;
let endpoint: string;
let table: TableClient;
let container: ContainerClient;
let queue: QueueClient;

beforeAll(async () => {
  service = new RecordedService();
  endpoint = await service.start();
  table = new TableClient(endpoint, "t", new AzureNamedKeyCredential("acct", KEY), {
    allowInsecureConnection: true,
    retryOptions: { maxRetries: 0 },
  });
  container = new ContainerClient(`${endpoint}/c`, new StorageSharedKeyCredential("acct", KEY), {
    retryOptions: { maxTries: 1 },
  });
  queue = new QueueClient(`${endpoint}/q`, new QueueKeyCredential("acct", KEY), { retryOptions: { maxTries: 1 } });
});
afterAll(() => service.close());

describe("Table answers carry their code in the JSON body only: the library reads it there", () => {
  // sdk/tables/azure-data-tables/tests/recordings/test_table_entity.pyTestTableEntitytest_get_entity_not_existing.json
  // (Azure/azure-sdk-for-python @256d6af519c44f25f515bc9918528f92ef0db77a)
  const resourceNotFound: Answer = {
    status: 404,
    headers: JSON_TYPE,
    body: odataError("ResourceNotFound", "The specified resource does not exist."),
  };
  // The same shape with the code of the Table service error codes page (and of the recorded batch below).
  const tableNotFound: Answer = {
    status: 404,
    headers: JSON_TYPE,
    body: odataError("TableNotFound", "The table specified does not exist."),
  };

  it("a missing entity (404 ResourceNotFound) reads as absent; a missing table (404 TableNotFound) is an error", async () => {
    const cell = tableEntityCell(table, "p", "r");
    service.script([/^GET /, resourceNotFound]);
    await expect(cell.read({})).resolves.toBeUndefined();
    service.script([/^GET /, tableNotFound]);
    const error: unknown = await cell.read({}).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect([statusOf(error), serviceCodeOf(error)]).toEqual([404, "TableNotFound"]);
  });

  it("the idempotency store's start-up check passes on ResourceNotFound and fails on TableNotFound", async () => {
    const store = new TableIdempotencyStore(table);
    service.script([/^GET /, resourceNotFound]);
    await expect(store.check()).resolves.toBeUndefined();
    expect(service.requests).toEqual([`GET /acct/t(PartitionKey='',RowKey='inbox:')`]);
    service.script([/^GET /, tableNotFound]);
    await expect(store.check()).rejects.toMatchObject({ statusCode: 404 });
  });

  it("412 UpdateConditionNotSatisfied and 409 EntityAlreadyExists are write conflicts", async () => {
    const cell = tableEntityCell(table, "p", "r");
    const write = (condition: object) =>
      cell.write({ value: 1 }, { condition, log: "", onSend: () => undefined } as never).then(
        () => undefined,
        (e: unknown) => e,
      );
    // test_table_entity.pyTestTableEntitytest_update_entity_with_if_doesnt_match.json (python @256d6af5…)
    service.script([
      /^PUT /,
      {
        status: 412,
        headers: JSON_TYPE,
        body: odataError(
          "UpdateConditionNotSatisfied",
          "The update condition specified in the request was not satisfied.",
        ),
      },
    ]);
    const stale = await write({ ifMatch: `W/"datetime'2012-06-15T22%3A51%3A44.9662825Z'"` });
    expect([statusOf(stale), serviceCodeOf(stale), isWriteConflict(stale)]).toEqual([
      412,
      "UpdateConditionNotSatisfied",
      true,
    ]);
    // test_table_entity.test_insert_entity_conflict.yaml (python @086275c67ed55ceca5762c94f88c0a0d36f8c9ce)
    service.script([
      /^POST /,
      {
        status: 409,
        headers: JSON_TYPE,
        body: odataError("EntityAlreadyExists", "The specified entity already exists."),
      },
    ]);
    const exists = await write({ ifNoneMatch: "*" });
    expect([statusOf(exists), serviceCodeOf(exists), isWriteConflict(exists)]).toEqual([
      409,
      "EntityAlreadyExists",
      true,
    ]);
  });

  it('a transaction refused inside its change set (202, inner 404 TableNotFound, "0:") is a definite failure of action 0', async () => {
    // sdk/tables/data-tables/recordings/node/handle_suberror/recording_should_handle_sub_request_error.json
    // (Azure/azure-sdk-for-js @bd483a4aab6f295eb6f34ac6bff99fcdf8cc649a): the response body, boundaries shortened.
    const body =
      "--batchresponse_r\r\nContent-Type: multipart/mixed; boundary=changesetresponse_r\r\n\r\n" +
      "--changesetresponse_r\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" +
      "HTTP/1.1 404 Not Found\r\nX-Content-Type-Options: nosniff\r\nDataServiceVersion: 3.0;\r\n" +
      "Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r\n\r\n" +
      odataError("TableNotFound", "0:The table specified does not exist.") +
      "\r\n--changesetresponse_r--\r\n--batchresponse_r--\r\n";
    service.script(
      [
        /^POST \/acct\/\$batch/,
        { status: 202, headers: { "content-type": "multipart/mixed; boundary=batchresponse_r" }, body },
      ],
      [/^GET /, tableNotFound],
    );
    const error: unknown = await writeAtomic(table, [
      ["create", { partitionKey: "p", rowKey: "1" }],
      ["create", { partitionKey: "p", rowKey: "2" }],
    ]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isTableTransactionError(error)).toBe(true);
    expect(error).toMatchObject({
      statusCode: 404,
      serviceCode: "TableNotFound",
      failedActionIndex: 0,
      mayHaveBeenApplied: false,
    });
  });
});

describe("Blob answers: the code in x-ms-error-code, a HEAD without a body", () => {
  it("Get Blob Properties of a missing blob (HEAD 404, header only) reads as no blob", async () => {
    // sdk/storage/storage-blob/recordings/node/blobclient/recording_exists_returns_false_on_nonexisting_blob.json (js @397880ac…)
    service.script([/^HEAD /, { status: 404, headers: { "x-ms-error-code": "BlobNotFound" } }]);
    await expect(blobLeasable(container, "lock").getProperties()).resolves.toBeUndefined();
  });

  it("Get Blob If-None-Match the current ETag (304 with x-ms-error-code ConditionNotMet, no body) reads as not modified", async () => {
    // test_blob_access_conditions.test_get_blob_with_if_none_match_fail.yaml (python @24f40e3c…)
    service.script([/^GET /, { status: 304, headers: { "x-ms-error-code": "ConditionNotMet" } }]);
    const cell = blobTextCell(container.getBlockBlobClient("b"));
    await expect(cell.read({ ifNoneMatch: '"0x8D7596FDFE0A506"' })).resolves.toBe(NOT_MODIFIED);
  });

  it("Put Blob 412 ConditionNotMet is a write conflict; 412 LeaseLost (a lease that expired) is not", async () => {
    const cell = blobTextCell(container.getBlockBlobClient("b"), { leaseId: "ca761232-ed42-11ce-bacd-00aa0057b223" });
    const write = () =>
      cell.write(Buffer.from("x"), { condition: { ifMatch: '"0x1"' }, log: "", onSend: () => undefined } as never).then(
        () => undefined,
        (e: unknown) => e,
      );
    // test_blob_access_conditions.test_put_blob_with_if_match_fail.yaml (python @06b0d02b…)
    service.script([
      /^PUT /,
      {
        status: 412,
        headers: { "x-ms-error-code": "ConditionNotMet", "content-type": "application/xml" },
        body: xmlError("ConditionNotMet"),
      },
    ]);
    expect(isWriteConflict(await write())).toBe(true);
    // test_common_blob.test_lease_blob_with_duration.yaml (python @228203ab…)
    service.script([
      /^PUT /,
      {
        status: 412,
        headers: { "x-ms-error-code": "LeaseLost", "content-type": "application/xml" },
        body: xmlError("LeaseLost"),
      },
    ]);
    const lost = await write();
    expect([serviceCodeOf(lost), isWriteConflict(lost)]).toEqual(["LeaseLost", false]);
  });

  it("Lease Blob 409 LeaseAlreadyPresent is a client error (the lock reads it as held), never retried", async () => {
    // test_common_blob.test_lease_blob_acquire_twice_fails.yaml (python @2f57eef3…)
    service.script([
      /^PUT /,
      { status: 409, headers: { "x-ms-error-code": "LeaseAlreadyPresent" }, body: xmlError("LeaseAlreadyPresent") },
    ]);
    const error: unknown = await blobLeasable(container, "lock")
      .acquire(15, "ca761232-ed42-11ce-bacd-00aa0057b223")
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(classifyError(error)).toMatchObject({
      kind: "client",
      transient: false,
      statusCode: 409,
      serviceCode: "LeaseAlreadyPresent",
    });
  });
});

describe("Queue answers: a stale receipt, a gone message, a missing queue", () => {
  const failure = (status: number, code: string): Answer => ({
    status,
    headers: { "x-ms-error-code": code, "content-type": "application/xml" },
    body: xmlError(code),
  });
  const update = async (answer: Answer) => {
    service.script([/^PUT /, answer]);
    return queue.updateMessage("m", "AgAAAAMAAAAAAAAAmJxTFIug2QE=", "x", 30).then(
      () => undefined,
      (e: unknown) => e,
    );
  };

  it("400 PopReceiptMismatch (Queue Storage error codes) is a receipt mismatch, not a gone message", async () => {
    const error = await update(failure(400, "PopReceiptMismatch"));
    expect([isReceiptMismatch(error), isMessageGone(error), isResourceFailure(error)]).toEqual([true, false, false]);
  });

  it("404 MessageNotFound (Delete Message: no message with a matching receipt) is a gone message; 404 QueueNotFound a resource failure", async () => {
    const gone = await update(failure(404, "MessageNotFound"));
    expect([isReceiptMismatch(gone), isMessageGone(gone), isResourceFailure(gone)]).toEqual([false, true, false]);
    // sdk/storage/storage-queue/recordings/node/queueclient/recording_getproperties_negative.json (js @0b90fc94…)
    const missing = await update(failure(404, "QueueNotFound"));
    expect([isMessageGone(missing), isResourceFailure(missing)]).toEqual([false, true]);
  });
});

describe("The fault proxy's stand-in answers have the documented shape (Common REST API error codes)", () => {
  it("503 ServerBusy: x-ms-error-code and an XML body for Blob, a JSON body for Table; the classifier reads it as throttling", async () => {
    await using proxy = await createFaultProxy({ target: endpoint });
    proxy.addRule({ action: { type: "serverBusy" } });
    const blob = new ContainerClient(`${proxy.endpoint}/c`, new StorageSharedKeyCredential("acct", KEY), {
      retryOptions: { maxTries: 1 },
    });
    const blobError: unknown = await blob.getProperties().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(classifyError(blobError)).toMatchObject({
      kind: "throttled",
      transient: true,
      statusCode: 503,
      serviceCode: "ServerBusy",
    });
    expect(answerOf(blobError).headers.get("x-ms-error-code")).toBe("ServerBusy");
    expect(answerOf(blobError).bodyAsText).toContain("<Code>ServerBusy</Code>");
    const tables = new TableClient(proxy.endpoint, "t", new AzureNamedKeyCredential("acct", KEY), {
      allowInsecureConnection: true,
      retryOptions: { maxRetries: 0 },
    });
    const tableError: unknown = await tables.getEntity("p", "r").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(classifyError(tableError)).toMatchObject({ kind: "throttled", statusCode: 503, serviceCode: "ServerBusy" });
    expect(JSON.parse(answerOf(tableError).bodyAsText ?? "{}")).toMatchObject({
      "odata.error": { code: "ServerBusy" },
    });
  });

  it("500 OperationTimedOut after applying: transient, and it may have been applied", async () => {
    service.script([/^GET /, { status: 200, headers: { "x-ms-lease-state": "available" } }]);
    await using proxy = await createFaultProxy({ target: endpoint });
    proxy.addRule({ action: { type: "statusAfterApply", statusCode: 500, serviceCode: "OperationTimedOut" } });
    const blob = new ContainerClient(`${proxy.endpoint}/c`, new StorageSharedKeyCredential("acct", KEY), {
      retryOptions: { maxTries: 1 },
    });
    const error: unknown = await blob.getProperties().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(classifyError(error)).toMatchObject({
      kind: "server",
      transient: true,
      statusCode: 500,
      serviceCode: "OperationTimedOut",
    });
    expect(mayHaveBeenApplied(error)).toBe(true);
  });
});
